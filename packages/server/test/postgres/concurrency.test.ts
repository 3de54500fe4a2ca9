import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { MessageUpsert } from '../../src/domain/ingest/precedence.js';
import type { Account } from '../../src/domain/records.js';
import { createPool, inTransaction, RETRY } from '../../src/store/postgres/pool.js';
import { type Store, StoreUnavailableError } from '../../src/store/store.js';
import { NOW, newAccount, receipt } from '../conformance/fixtures.js';
import { dropSchema, freshSchema, openStore, POSTGRES_URL, sql } from './harness.js';

/**
 * A seeded generator, and numbers drawn from a pool of `size`, skewed towards a few busy ones (as the ingest
 * bench draws them).
 */
function skewed(seed: number, size: number) {
  let state = seed;
  const rand = () => {
    state = (Math.imul(state, 1_103_515_245) + 12_345) >>> 0;
    return state / 2 ** 32;
  };
  const number = () => `447${String(100_000_000 + Math.floor(size * rand() ** 2)).slice(-9)}`;
  return { rand, number };
}

/** Two stores on one schema, each with its own pool: two Waybill instances sharing a database. */
describe.skipIf(!POSTGRES_URL)('PostgreSQL concurrent ingest', () => {
  let schema: string;
  let one: Store;
  let two: Store;
  let account: Account;

  beforeEach(async () => {
    schema = freshSchema();
    one = openStore(schema);
    two = openStore(schema);
    await one.migrate();
    await two.migrate();
    account = await one.createAccount(newAccount());
  });
  afterEach(async () => {
    await Promise.all([one.close(), two.close()]);
    await dropSchema(schema);
  });

  /** A mixed batch: SMS ids to several numbers, WhatsApp messages, repeats of one contact's identity. */
  function batch(from: number, to: number, text: string): MessageUpsert[] {
    const items: MessageUpsert[] = [];
    for (let i = from; i < to; i++) {
      const at = new Date(NOW.getTime() - i * 60_000);
      items.push({
        id: `m-${i}`,
        channel: 'SMS',
        channelUserId: `4477009${(i % 40).toString().padStart(5, '0')}`,
        createdAt: at,
        text,
      });
      if (i % 3 === 0)
        items.push({
          id: `m-${i}`,
          channel: 'SMS',
          channelUserId: `3361234${i.toString().padStart(4, '0')}`,
          createdAt: at,
          text,
        });
      if (i % 5 === 0)
        items.push({
          id: `w-${i}`,
          channel: 'WHATSAPP',
          channelUserId: `wa-user-${i % 7}`,
          createdAt: at,
          text,
        });
    }
    return items;
  }

  async function counts() {
    const [row] = await sql<Record<string, number>>(
      schema,
      `SELECT (SELECT count(*)::int FROM messages) AS messages,
              (SELECT count(*)::int FROM message_keys) AS keys,
              (SELECT count(*)::int FROM identities) AS identities,
              (SELECT count(*)::int FROM contacts) AS contacts,
              (SELECT count(*)::int FROM conversations) AS conversations,
              (SELECT count(DISTINCT seq)::int FROM message_keys) AS seqs`,
    );
    return row;
  }

  /**
   * Rows whose parent is missing: records that do not name their number's contact and that contact's
   * conversation on their channel, and identities and conversations of no contact (no foreign key checks
   * these: migration 10).
   */
  async function danglingRows(): Promise<{ records: number; identities: number; conversations: number }> {
    const [row] = await sql<{ records: number; identities: number; conversations: number }>(
      schema,
      `SELECT (SELECT count(*)::int FROM messages m
               WHERE NOT EXISTS (
                 SELECT 1 FROM identities i JOIN conversations c
                   ON c.account_id = i.account_id AND c.contact_id = i.contact_id AND c.channel = i.channel
                 WHERE i.account_id = m.account_id AND i.channel = m.channel
                   AND i.channel_user_id = m.channel_user_id AND i.contact_id = m.contact_id
                   AND c.id = m.conversation_id)) AS records,
              (SELECT count(*)::int FROM identities i
               WHERE NOT EXISTS (SELECT 1 FROM contacts c WHERE c.account_id = i.account_id AND c.id = i.contact_id))
                 AS identities,
              (SELECT count(*)::int FROM conversations v
               WHERE NOT EXISTS (SELECT 1 FROM contacts c WHERE c.account_id = v.account_id AND c.id = v.contact_id))
                 AS conversations`,
    );
    return row ?? { records: -1, identities: -1, conversations: -1 };
  }

  it('duplicates nothing when two instances ingest the same batch at once', { timeout: 60_000 }, async () => {
    const items = batch(0, 300, 'hello');
    const distinctRecords = new Set(items.map((i) => `${i.id}|${i.channelUserId}`)).size;
    const distinctIdentities = new Set(items.map((i) => `${i.channel}|${i.channelUserId}`)).size;
    for (let round = 0; round < 3; round++) {
      const outcomes = await Promise.all([
        one.ingestMessages(account.id, items, NOW),
        two.ingestMessages(account.id, items, NOW),
      ]);
      for (const outcome of outcomes)
        expect(outcome).toEqual({ ok: true, value: { accepted: items.length, events: 0 } });
    }
    expect(await counts()).toEqual({
      messages: distinctRecords,
      keys: distinctRecords,
      identities: distinctIdentities,
      contacts: distinctIdentities,
      conversations: distinctIdentities,
      seqs: distinctRecords,
    });
    // Every SMS recipient of an id is listed once, whichever instance wrote it.
    expect((await two.findDlr(account.id, 'm-3')).map((m) => m.channelUserId)).toEqual([
      '447700900003',
      '33612340003',
    ]);
  });

  it('loses nothing when overlapping batches race', { timeout: 60_000 }, async () => {
    const left = batch(0, 200, 'left');
    const right = batch(100, 300, 'right');
    const outcomes = await Promise.all([
      one.ingestMessages(account.id, left, NOW),
      two.ingestMessages(account.id, right, NOW),
    ]);
    expect(outcomes.every((o) => o.ok)).toBe(true);
    const all = [...left, ...right];
    const distinctRecords = new Set(all.map((i) => `${i.id}|${i.channelUserId}`)).size;
    expect((await counts())?.messages).toBe(distinctRecords);
    // The overlap holds one batch's text or the other's, whole: never a mix of nothing.
    const overlap = await one.findMessagesByIds(account.id, ['m-150', 'm-150']);
    expect(overlap.length).toBe(2);
    expect(new Set(overlap.map((m) => m.text)).size).toBe(1);
    const edges = await one.findMessagesByIds(account.id, ['m-0', 'm-297']);
    expect(edges.map((m) => m.text).sort()).toEqual(['left', 'left', 'right', 'right']);
  });

  // Two streams of 1,000-message batches to numbers drawn from one skewed pool (as the ingest bench draws
  // them): each batch creates contacts that the other stream's batch in flight may create too. Before a retry
  // ran alone (park-locks.ts lockMessageTurn), a batch could lose race after race and fail after eight
  // attempts: the bench saw 17 of 200 batches fail so. On one instance, a batch takes such contacts from the
  // other instead (store/postgres/in-flight.ts); one contact per number either way.
  it.for([
    ['one per instance', true],
    ['both on one instance', false],
  ] as const)(
    'accepts every batch of steady overlapping streams (%s): none loses a race twice',
    {
      timeout: 120_000,
    },
    async ([, twoInstances]) => {
      const { number } = skewed(7, 100_000);
      const numbers = new Set<string>();
      const batches = Array.from({ length: 30 }, (_, b) =>
        Array.from({ length: 1000 }, (_, i): MessageUpsert => {
          const to = number();
          numbers.add(to);
          return { id: `b${b}-${i}`, channel: 'SMS', channelUserId: to, createdAt: NOW };
        }),
      );
      const stream = async (store: Store, mine: MessageUpsert[][]) => {
        const refused: unknown[] = [];
        for (const items of mine) {
          const outcome = await store.ingestMessages(account.id, items, NOW).catch((error: unknown) => error);
          if (!(outcome as { ok?: boolean }).ok) refused.push(outcome);
        }
        return refused;
      };
      const refused = await Promise.all([
        stream(
          one,
          batches.filter((_, b) => b % 2 === 0),
        ),
        stream(
          twoInstances ? two : one,
          batches.filter((_, b) => b % 2 === 1),
        ),
      ]);
      expect(refused.flat()).toEqual([]);
      expect(await counts()).toMatchObject({
        messages: 30_000,
        contacts: numbers.size,
        identities: numbers.size,
      });
      expect(await danglingRows()).toEqual({ records: 0, identities: 0, conversations: 0 });
    },
  );

  it.for([
    ['on one instance', false],
    ['on two instances', true],
  ] as const)(
    'settles mixed traffic %s: streams meeting new numbers and records, receipts before and after',
    {
      timeout: 120_000,
    },
    async ([, twoInstances]) => {
      // Four message streams (on one instance, or alternately on two) draw numbers from one skewed pool
      // (batches take each other's new contacts: store/postgres/in-flight.ts) and re-send records of other
      // streams (those batches meet in the database instead); two receipt streams, shuffled, send one final
      // receipt per record while they run, so some arrive before their message (parked, then applied) and
      // some lock records a message batch is writing.
      const { rand, number } = skewed(11, 2000);
      const streams = Array.from({ length: 4 }, (_, s) =>
        Array.from({ length: 8 }, (_, b) =>
          Array.from({ length: 200 }, (_, i): MessageUpsert => {
            const to = number();
            return { id: `s${s}-b${b}-${i}`, channel: 'SMS', channelUserId: to, createdAt: NOW };
          }),
        ),
      );
      for (const [s, stream] of streams.entries()) {
        for (const [b, items] of stream.entries()) {
          const other = streams[(s + 1) % streams.length]?.[Math.max(0, b - 1)] ?? [];
          items.push(...other.slice(0, 10).map((i) => ({ ...i, text: `again from ${s}` })));
        }
      }
      const records = new Map<string, MessageUpsert>();
      for (const item of streams.flat(2)) records.set(`${item.id}|${item.channelUserId}`, item);
      const receipts = [...records.values()].map((r) =>
        receipt(r.id, 'delivered', new Date(NOW.getTime() + 60_000), { to: r.channelUserId }),
      );
      for (let i = receipts.length - 1; i > 0; i--) {
        const j = Math.floor(rand() * (i + 1));
        [receipts[i], receipts[j]] = [
          receipts[j] as (typeof receipts)[number],
          receipts[i] as (typeof receipts)[number],
        ];
      }
      const refused: unknown[] = [];
      const settle = async (kind: string, work: Promise<{ ok: boolean }>) => {
        const outcome = await work.catch((error: unknown) => ({ ok: false, error }));
        if (!outcome.ok) refused.push({ kind, outcome });
      };
      const halves = [receipts.slice(0, receipts.length / 2), receipts.slice(receipts.length / 2)];
      await Promise.all([
        ...streams.map(async (stream, s) => {
          const store = twoInstances && s % 2 === 1 ? two : one;
          for (const items of stream) await settle('messages', store.ingestMessages(account.id, items, NOW));
        }),
        ...halves.map(async (half, h) => {
          const store = twoInstances && h === 1 ? two : one;
          for (let i = 0; i < half.length; i += 250)
            await settle('receipts', store.ingestReceipts(account.id, half.slice(i, i + 250), NOW));
        }),
      ]);
      expect(refused).toEqual([]);
      const numbers = new Set([...records.values()].map((r) => r.channelUserId));
      expect(await counts()).toMatchObject({
        messages: records.size,
        contacts: numbers.size,
        identities: numbers.size,
      });
      expect(await danglingRows()).toEqual({ records: 0, identities: 0, conversations: 0 });
      const [row] = await sql<{ undelivered: number }>(
        schema,
        `SELECT count(*)::int AS undelivered FROM messages WHERE dr_statuscode IS DISTINCT FROM 'delivered'`,
      );
      expect(row).toEqual({ undelivered: 0 });
    },
  );

  it('answers contention that outlasts the retries as unavailable (503, retry shortly), not as a bug', async () => {
    const pool = createPool({
      url: POSTGRES_URL,
      poolSize: 1,
      statementTimeoutMs: 5000,
      schema,
      connectTimeoutMs: 5000,
      queryTimeoutMs: 5000,
    });
    const attempts: number[] = [];
    try {
      const failure = await inTransaction(pool, async (_client, attempt) => {
        attempts.push(attempt);
        return RETRY;
      }).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(StoreUnavailableError);
      expect(attempts).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    } finally {
      await pool.end();
    }
  });

  it('applies each receipt once when two instances send the same receipts at once', {
    timeout: 60_000,
  }, async () => {
    const items = batch(0, 50, 'x').filter((i) => i.channel === 'SMS' && Number(i.id.slice(2)) % 3 !== 0);
    await one.ingestMessages(account.id, items, NOW);
    const receipts = items.map((i) => receipt(i.id, 'delivered', new Date(NOW.getTime() + 1000)));
    const [a, b] = await Promise.all([
      one.ingestReceipts(account.id, receipts, NOW),
      two.ingestReceipts(account.id, receipts, NOW),
    ]);
    if (!a?.ok || !b?.ok) throw new Error('receipts refused');
    expect(a.value.applied + b.value.applied).toBe(receipts.length);
    expect(a.value.ignored + b.value.ignored).toBe(receipts.length);
  });
});
