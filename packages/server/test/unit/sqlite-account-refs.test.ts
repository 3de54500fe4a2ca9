import { mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import type { CarrierReceiptInput, MessageUpsert } from '../../src/domain/ingest/precedence.js';
import { MIGRATIONS, registerMigrationFunctions } from '../../src/store/sqlite/migrations.js';
import { openSqliteStore } from '../../src/store/sqlite/store.js';
import type { Store } from '../../src/store/store.js';
import { at, ingest, ingestReceipts, NOW, newAccount, receipt, sms } from '../conformance/fixtures.js';

/**
 * Migration 9 keys every table of an account's data by the account's integer ref (store/sqlite/account-ref.ts);
 * migration 10 names a record's conversation by the conversation's ref (record-refs.ts). A file written
 * before either is made here from one the store wrote: every table copied back into an older migration's own
 * layout, each ref replaced by the ids it stands for. Opening it must migrate it and answer every read as before.
 */

const TO = '447700900123';
const TO2 = '447700900124';
const ROUTE = 'smsc-1';
const CALLBACK = 'https://hooks.example/dlr';

const dir = mkdtempSync(join(tmpdir(), 'wb-refs-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const open = (path: string) => openSqliteStore({ path, cacheMb: 8 });

/** The columns of older events and deliveries that their record now holds, by the record's column. */
const RECORD_COLUMNS: Partial<Record<string, string>> = {
  message_id: 'id',
  recipient: 'channel_user_id',
  message_created_at: 'created_at',
};

/**
 * Rewrites the file at `path` as migration `version` (8 to 12) left its schema: a record's contact and
 * conversation ids where its conversation's ref is, an event's and a delivery's message id and number where
 * their record's ref is, before 9 account ids where the refs are, and every event's item, which before 12 each
 * one stored.
 */
function downgradeTo(path: string, version: number): void {
  const old = `${path}.v${version}`;
  const db = new Database(old);
  try {
    // The item an event that stores none stands for, as the store would have written it (and as migration 12,
    // applied to the empty tables below, asks for it).
    registerMigrationFunctions(db);
    db.exec(`CREATE TABLE schema_migrations (
      version INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`);
    for (const m of MIGRATIONS.filter((m) => m.version <= version)) {
      db.exec(m.sql);
      db.prepare('INSERT INTO schema_migrations VALUES (?, ?, ?)').run(m.version, m.name, 0);
    }
    db.prepare('ATTACH DATABASE ? AS cur').run(path);
    const tables = db
      .prepare<[], { name: string }>(
        `SELECT name FROM main.sqlite_master WHERE type = 'table' AND name NOT IN ('schema_migrations', 'sqlite_sequence')
         ORDER BY name <> 'account_refs'`,
      )
      .all();
    // account_refs first, as they were: the accounts' trigger then finds each account's ref already given.
    db.exec('BEGIN');
    for (const { name } of tables) {
      const columns = db
        .prepare<[], { name: string }>(`SELECT name FROM pragma_table_info('${name}', 'main')`)
        .all()
        .map((c) => c.name);
      const keyedByRef =
        version < 9 && columns.includes('account_id') && !['accounts', 'console_sessions'].includes(name);
      const select = columns.map((c) => {
        if (keyedByRef && c === 'account_id')
          return '(SELECT id FROM cur.account_refs WHERE ref = t.account_id)';
        if (name === 'messages' && c === 'contact_id')
          return '(SELECT contact_id FROM cur.conversations WHERE ref = t.conversation_ref)';
        if (name === 'messages' && c === 'conversation_id')
          return '(SELECT id FROM cur.conversations WHERE ref = t.conversation_ref)';
        // An event's or a delivery's recipient, and its record's time, from the record its ref names.
        const ofRecord = RECORD_COLUMNS[c];
        if ((name === 'receipt_events' || name === 'deliveries') && ofRecord)
          return `(SELECT ${ofRecord} FROM cur.messages WHERE ref = t.message_ref)`;
        if (name === 'receipt_events' && c === 'item' && version < 12)
          return `coalesce(t.item, (SELECT waybill_current_item(m.id, m.channel_user_id, m.sms_status, m.network, m.price,
                    m.counts, m.dr_statuscode, m.dr_errcode, m.dr_time) FROM cur.messages m WHERE m.ref = t.message_ref))`;
        return `t.${c}`;
      });
      db.exec(
        `INSERT INTO main.${name} (${columns.join(', ')}) SELECT ${select.join(', ')} FROM cur.${name} t`,
      );
    }
    db.exec('COMMIT');
    db.exec('DETACH DATABASE cur');
  } finally {
    db.close();
  }
  renameSync(old, path);
}

/** Everything the store answers about the two accounts, through its own reads. */
async function reads(store: Store, a: string, b: string, deliveryId: string) {
  const contact = await store.resolveContact(a, 'SMS', TO);
  return {
    dlrA: await store.findDlr(a, 'm-1'),
    dlrB: await store.findDlr(b, 'm-1'),
    byIds: await store.findMessagesByIds(a, ['m-1', 'm-2', 'w-1']),
    contact,
    history: contact ? await store.listHistory(a, { contactId: contact, channel: 'SMS', limit: 10 }) : null,
    campaign: await store.listHistory(a, { campaignId: 'spring', limit: 10 }),
    eventsA: await store.listReceiptEvents(a, 0, 100),
    eventsB: await store.listReceiptEvents(b, 0, 100),
    deliveries: await store.listDeliveries(a, { limit: 100 }),
    delivery: await store.getDelivery(a, deliveryId),
    messageEvents: await store.listMessageEvents(a, 'm-1'),
    messageDeliveries: await store.listMessageDeliveries(a, 'm-1'),
    review: await store.reviewSummary(a, { from: at(-86_400), to: at(86_400) }),
    stats: await store.outboxStats(),
  };
}

const carrierDr = (carrierId: string): CarrierReceiptInput => ({
  carrierId,
  drStatuscode: 'delivered',
  drErrcode: '0',
  drTime: at(9),
});

describe('SQLite integer account and conversation refs, and leaner event and history indexes, events without their record’s item, deliveries by record (migrations 9 to 13)', () => {
  it.each([8, 9, 10, 11, 12])(
    'carries a file of migration %i’s layout over whole: every read answers as before, parked receipts and carrier pairs still match',
    async (version) => {
      const path = join(dir, `old-${files++}.db`);
      let store = open(path);
      const a = (await store.createAccount(newAccount({ callbackUrl: CALLBACK }))).id;
      const b = (await store.createAccount(newAccount())).id;
      const chat: MessageUpsert = {
        id: 'w-1',
        channel: 'WHATSAPP',
        channelUserId: TO,
        direction: 'inbound',
        text: 'hello',
        createdAt: at(1),
      };
      await ingest(store, a, [
        sms('m-1', TO, { campaignId: 'spring', text: 'Parcel today' }),
        sms('m-1', TO2),
        sms('m-2', TO, { sms: { status: '0', carrier: { route: ROUTE, messageId: 'c-1' } } }),
        chat,
      ]);
      await ingest(store, b, [sms('m-1', TO)]);
      await ingestReceipts(store, a, [
        receipt('m-1', 'accepted', at(2), { to: TO }),
        receipt('early', 'delivered', at(2)),
      ]);
      await ingestReceipts(store, a, [
        receipt('m-1', 'delivered', at(3), { to: TO, network: '23410' }),
        receipt('m-1', 'failed', at(3), { to: TO2 }),
      ]);
      await ingestReceipts(store, b, [receipt('m-1', 'failed', at(2))]);
      // One attempt in the log, and a carrier receipt parked by its pair.
      const [claimed] = await store.claimDeliveries({
        now: at(10),
        limit: 1,
        perAccount: 1,
        inFlight: new Map(),
        leaseUntil: at(40),
        lease: 'lease-1',
      });
      if (!claimed) throw new Error('nothing to claim');
      await store.finishAttempts([
        {
          claim: claimed,
          outcome: {
            attempt: { at: at(11), httpStatus: 500, error: null, durationMs: 12 },
            next: { state: 'pending', at: at(70) },
          },
        },
      ]);
      expect(await store.ingestCarrierReceipts(ROUTE, [carrierDr('c-9')], NOW)).toMatchObject([
        { outcome: 'parked' },
      ]);
      const before = await reads(store, a, b, claimed.id);
      expect(before.eventsA).toHaveLength(3);
      expect(before.delivery?.attemptLog).toHaveLength(1);
      expect(before.stats.parked).toBe(2);
      await store.close();

      downgradeTo(path, version);
      const raw = new Database(path, { readonly: true });
      expect(raw.prepare('SELECT max(version) AS v FROM schema_migrations').get()).toEqual({ v: version });
      if (version === 8) {
        expect(raw.prepare('SELECT DISTINCT account_id FROM messages ORDER BY 1').pluck().all()).toEqual(
          [a, b].sort(),
        );
      }
      // Four conversations: a's SMS and WhatsApp ones with TO, a's SMS one with TO2, b's with TO.
      if (version < 10) {
        expect(raw.prepare('SELECT count(DISTINCT conversation_id) FROM messages').pluck().get()).toBe(4);
      }
      if (version < 11) {
        expect(raw.prepare('SELECT count(message_created_at) FROM receipt_events').pluck().get()).toBe(4);
        expect(raw.prepare('SELECT count(message_created_at) FROM deliveries').pluck().get()).toBe(3);
      }
      if (version < 12) expect(raw.prepare('SELECT count(item) FROM receipt_events').pluck().get()).toBe(4);
      expect(raw.prepare('SELECT count(message_id), count(recipient) FROM deliveries').raw().get()).toEqual([
        3, 3,
      ]);
      raw.close();

      store = open(path);
      try {
        expect(await reads(store, a, b, claimed.id)).toStrictEqual(before);
        const db = new Database(path, { readonly: true });
        const refs = db.prepare('SELECT ref, id FROM account_refs ORDER BY ref').all();
        for (const table of ['messages', 'receipt_events', 'deliveries', 'delivery_attempts', 'contacts']) {
          expect(db.prepare(`SELECT DISTINCT typeof(account_id) FROM ${table}`).pluck().all()).toEqual([
            'integer',
          ]);
        }
        // Every record names one of the four conversations by its ref, and no longer holds the ids.
        expect(
          db
            .prepare('SELECT count(DISTINCT conversation_ref), typeof(conversation_ref) FROM messages')
            .raw()
            .get(),
        ).toEqual([4, 'integer']);
        const columns = db.prepare("SELECT name FROM pragma_table_info('messages')").pluck().all();
        expect(columns).not.toContain('contact_id');
        expect(columns).not.toContain('conversation_id');
        // Migration 11: events carry no time of their record, and neither index by it nor by the event id.
        expect(
          db.prepare("SELECT name FROM pragma_table_info('receipt_events')").pluck().all(),
        ).not.toContain('message_created_at');
        expect(
          db.prepare("SELECT name FROM pragma_index_list('receipt_events') ORDER BY name").pluck().all(),
        ).toEqual(['receipt_events_message', 'sqlite_autoindex_receipt_events_1']);
        expect(db.prepare("SELECT name FROM pragma_table_info('deliveries')").pluck().all()).not.toContain(
          'message_created_at',
        );
        // Migration 13: a delivery names its recipient by its record's ref, and is indexed by it.
        const deliveryColumns = db.prepare("SELECT name FROM pragma_table_info('deliveries')").pluck().all();
        expect(deliveryColumns).toContain('message_ref');
        expect(deliveryColumns).not.toContain('message_id');
        expect(
          db
            .prepare("SELECT name FROM pragma_index_list('deliveries') WHERE name LIKE 'deliveries_re%'")
            .pluck()
            .all(),
        ).toEqual(['deliveries_record']);
        // Migration 12: of the four events only the first of m-1 to TO (accepted, then delivered) keeps its item;
        // the others are their records' items as they stand.
        expect(db.prepare('SELECT item FROM receipt_events WHERE item IS NOT NULL').pluck().all()).toEqual([
          expect.stringContaining('"accepted"'),
        ]);
        db.close();
        expect(refs).toHaveLength(2);

        // The receipt parked by message id, and the one parked by carrier pair, find their recipients now.
        await ingest(store, a, [
          sms('early', TO),
          sms('m-3', TO, { sms: { status: '0', carrier: { route: ROUTE, messageId: 'c-9' } } }),
        ]);
        expect((await store.findDlr(a, 'early'))[0]?.sms?.receipt?.drStatuscode).toBe('delivered');
        expect((await store.findDlr(a, 'm-3'))[0]?.sms?.receipt?.drStatuscode).toBe('delivered');
        // The pair claimed before the migration still names its recipient.
        expect(await store.ingestCarrierReceipts(ROUTE, [carrierDr('c-1')], NOW)).toStrictEqual([
          { outcome: 'applied', accountId: a, messageId: 'm-2', to: TO },
        ]);
      } finally {
        await store.close();
      }
    },
  );

  it('gives each account its own ref, keeps it after the account is deleted, and deletes only that account’s rows', async () => {
    const path = join(dir, `new-${files++}.db`);
    const store = open(path);
    try {
      const a = (await store.createAccount(newAccount({ callbackUrl: CALLBACK }))).id;
      const b = (await store.createAccount(newAccount())).id;
      for (const id of [a, b]) {
        await ingest(store, id, [sms('m-1', TO)]);
        await ingestReceipts(store, id, [receipt('m-1', 'delivered', at(2))]);
      }
      const db = new Database(path, { readonly: true });
      const refOf = db.prepare<[string], number>('SELECT ref FROM account_refs WHERE id = ?').pluck();
      const refA = refOf.get(a);
      const refB = refOf.get(b);
      expect(refA).toBeTypeOf('number');
      expect(refB).not.toBe(refA);
      expect(await store.deleteAccount(a)).toBe(true);
      expect(refOf.get(a)).toBe(refA);
      const rowsOf = (ref: number | undefined) =>
        db.prepare('SELECT count(*) FROM messages WHERE account_id = ?').pluck().get(ref);
      expect(rowsOf(refA)).toBe(0);
      expect(rowsOf(refB)).toBe(1);
      db.close();
      expect(await store.findDlr(b, 'm-1')).toHaveLength(1);
      expect(await store.listReceiptEvents(b, 0, 10)).toHaveLength(1);
      // A new account takes a new ref: the deleted one's is never given again.
      const c = (await store.createAccount(newAccount())).id;
      const check = new Database(path, { readonly: true });
      const refC = check.prepare('SELECT ref FROM account_refs WHERE id = ?').pluck().get(c);
      check.close();
      expect(refC).toBeGreaterThan(Math.max(refA ?? 0, refB ?? 0));
    } finally {
      await store.close();
    }
  });
});
