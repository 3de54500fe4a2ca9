import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { openPostgresStore } from '../../src/store/postgres/store.js';
import { openSqliteStore } from '../../src/store/sqlite/store.js';
import type { Store } from '../../src/store/store.js';
import { type OwedReceipt, ReceiptStream } from '../intake/receipt-stream.js';
import { Smsc } from '../intake/smsc.js';
import { POSTGRES_URL, scratchDatabase } from '../postgres/harness.js';
import { killAll, type Served, serve } from '../support/processes.js';

/**
 * SIGKILL of `waybill serve` while an SMSC pushes receipts over its bind (CONTRACT §12 "SMPP binds": a receipt
 * is answered ESME_ROK only once it is committed). 5,000 recipients are ingested with carrier ids; the simulator
 * owes 5,000 receipts (a quarter of the recipients get `accepted` first and their final state only once that
 * was acknowledged, as an SMSC sends a final receipt later; a quarter get none), and keeps its own books like a
 * real SMSC: what was not answered ESME_ROK it delivers again to whoever binds next. The service is killed
 * mid-stream, then started again. Every receipt acknowledged before the kill must be stored at the kill; at the
 * end every recipient holds its latest state and has exactly one event per state it went through.
 */

const ADMIN = 'smpp-kill-admin-token';
const PEPPER = 'smpp-kill-pepper-0123456789';
const RECIPIENTS = 5000;
/** The kill comes once this many receipts have been acknowledged. */
const KILL_AFTER = 2000;
const RECEIPT = 0x04;

interface Target {
  name: string;
  setup(): Promise<{ env: Record<string, string>; open: () => Store; cleanup: () => Promise<void> }>;
}

const targets: Target[] = [
  {
    name: 'sqlite',
    async setup() {
      const dir = mkdtempSync(join(tmpdir(), 'waybill-smpp-kill-'));
      const path = join(dir, 'waybill.db');
      return {
        env: { DATABASE_URL: `sqlite:${path}` },
        open: () => openSqliteStore({ path, cacheMb: 16 }),
        cleanup: async () => rmSync(dir, { recursive: true, force: true }),
      };
    },
  },
];
if (POSTGRES_URL) {
  targets.push({
    name: 'postgres',
    async setup() {
      // `waybill serve` works in the database's public schema: a database of its own keeps it apart.
      const database = scratchDatabase('wb_smpp_kill');
      await database.create();
      return {
        env: { DATABASE_URL: database.url },
        open: () => openPostgresStore({ url: database.url, poolSize: 2, statementTimeoutMs: 30_000 }),
        cleanup: database.drop,
      };
    },
  });
}

afterAll(() => killAll());

/** A final state: the `stat:` of the text form, the TLV `message_state`, and the stored drStatuscode. */
const FINALS = [
  { stat: 'DELIVRD', state: 2, code: 'delivered' },
  { stat: 'UNDELIV', state: 5, code: 'failed' },
  { stat: 'EXPIRED', state: 3, code: 'expired' },
  { stat: 'REJECTD', state: 8, code: 'rejected' },
  { stat: 'DELETED', state: 4, code: 'deleted' },
] as const;
const ACCEPTED = [
  { stat: 'ACCEPTD', state: 6, code: 'accepted' },
  { stat: 'ENROUTE', state: 1, code: 'accepted' },
] as const;

/** A receipt for carrier id `id`: in the text (done at `minute` past 10:00) or, for odd `i`, in TLVs only. */
function receiptFields(
  i: number,
  id: string,
  s: { stat: string; state: number },
  minute: number,
): Record<string, unknown> {
  if (i % 2 === 1) {
    return {
      esm_class: RECEIPT,
      receipted_message_id: id,
      message_state: s.state,
      short_message: Buffer.alloc(0),
    };
  }
  const done = `26112210${String(minute).padStart(2, '0')}`;
  return {
    esm_class: RECEIPT,
    short_message: Buffer.from(
      `id:${id} sub:001 dlvrd:001 submit date:2611221000 done date:${done} stat:${s.stat} err:000 text:Hi`,
      'latin1',
    ),
  };
}

async function until(what: string, probe: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** Every event of the account, as drStatuscodes per message id, oldest first. */
async function eventsByMessage(store: Store, accountId: string): Promise<Map<string, string[]>> {
  const byMessage = new Map<string, string[]>();
  for (let after = 0; ; ) {
    const page = await store.listReceiptEvents(accountId, after, 1000);
    if (page.length === 0) return byMessage;
    for (const event of page) {
      const list = byMessage.get(event.item.messageid) ?? [];
      list.push(event.item.drStatuscode ?? '(none)');
      byMessage.set(event.item.messageid, list);
      after = event.seq;
    }
  }
}

describe.each(targets)('$name: SIGKILL while an SMSC pushes receipts over the bind', (target) => {
  it('stores every receipt acknowledged before the kill, and ends with every state once', {
    timeout: 180_000,
  }, async () => {
    const { env, open, cleanup } = await target.setup();
    const serveEnv = {
      ...env,
      WAYBILL_ADMIN_TOKEN: ADMIN,
      WAYBILL_PEPPER: PEPPER,
      WAYBILL_ACCESS_LOG: 'off',
      WAYBILL_CALLBACK_RELAY: 'off',
    };
    const smsc = new Smsc();
    const port = await smsc.listen();
    let killAt: () => void = () => {};
    const killTime = new Promise<void>((resolve) => {
      killAt = resolve;
    });
    const stream = new ReceiptStream(smsc, {
      window: 300,
      retryMs: 200,
      onAnswer: () => {
        if (stream.acked.length >= KILL_AFTER) killAt();
      },
    });
    /** Which recipient and state each owed receipt carries. */
    const carries = new Map<OwedReceipt, { messageId: string; code: string }>();
    const expected = new Map<string, string[]>();
    let server: Served | undefined;
    try {
      server = await serve(['--no-demo'], serveEnv);
      const post = async (path: string, body: unknown) => {
        const res = await fetch(`${(server as Served).url}/admin/v1${path}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        const text = await res.text();
        expect(res.status, text).toBeLessThan(300);
        return JSON.parse(text) as Record<string, unknown>;
      };
      const accountId = (await post('/accounts', { name: 'smpp kill' })).id as string;
      await post('/routes', {
        name: 'smsc',
        kind: 'smpp',
        smpp: { host: '127.0.0.1', port, systemId: 'waybill', password: 'pw' },
      });
      for (let from = 0; from < RECIPIENTS; from += 1000) {
        const messages = Array.from({ length: 1000 }, (_, j) => ({
          id: `m-${from + j}`,
          channel: 'SMS',
          channelUserId: `4477009${String((from + j) % 500).padStart(5, '0')}`,
          sms: { carrier: { route: 'smsc', messageId: `c-${from + j}` } },
        }));
        expect(await post(`/accounts/${accountId}/messages`, { messages })).toEqual({ accepted: 1000 });
      }

      for (let i = 0; i < RECIPIENTS; i++) {
        const messageId = `m-${i}`;
        const final = FINALS[Math.floor(i / 4) % FINALS.length] as (typeof FINALS)[number];
        const states: { stat: string; state: number; code: string }[] =
          i % 4 === 0
            ? [ACCEPTED[Math.floor(i / 4) % 2] as (typeof ACCEPTED)[number], final]
            : i % 4 === 3
              ? []
              : [final];
        expected.set(
          messageId,
          states.map((s) => s.code),
        );
        const owed = stream.oweChain(states.map((s, n) => receiptFields(i, `c-${i}`, s, n + 1)));
        for (const [n, receipt] of owed.entries())
          carries.set(receipt, { messageId, code: states[n]?.code ?? '' });
      }
      expect(carries.size).toBe(5000);

      await until('the bind', () => smsc.bound.size === 1, 15_000);
      stream.start();
      await killTime;
      await server.kill();
      // What the service wrote before it died reaches the simulator before the link closes.
      await until('the link to close', () => smsc.bound.size === 0, 10_000);
      const ackedAtKill = [...stream.acked];
      const outstandingAtKill = stream.outstanding;
      console.log(
        `${target.name}: killed after ${ackedAtKill.length} acknowledged, ${outstandingAtKill} still owed`,
      );
      expect(outstandingAtKill).toBeGreaterThan(0);

      // At the kill: every receipt acknowledged ESME_ROK is in the database.
      const atKill = open();
      try {
        const events = await eventsByMessage(atKill, accountId);
        const missing = ackedAtKill
          .map((r) => carries.get(r))
          .filter((c) => c !== undefined && !(events.get(c.messageId) ?? []).includes(c.code));
        expect(missing, 'acknowledged ESME_ROK but not stored').toEqual([]);
      } finally {
        await atKill.close();
      }

      // Restarted, it binds again once the dead process's lease has run out; the simulator delivers again.
      const restarted = Date.now();
      server = await serve(['--no-demo'], serveEnv);
      await until('everything to be acknowledged', () => stream.outstanding === 0, 90_000);
      console.log(
        `${target.name}: all acknowledged ${((Date.now() - restarted) / 1000).toFixed(1)} s after the restart; ` +
          `${stream.sent} deliveries for ${carries.size} receipts`,
      );
      stream.stop();
      await server.stop();

      const store = open();
      try {
        const events = await eventsByMessage(store, accountId);
        const ids = [...expected.keys()];
        const wrongEvents: string[] = [];
        const wrongState: string[] = [];
        for (let from = 0; from < ids.length; from += 1000) {
          const records = await store.findMessagesByIds(accountId, ids.slice(from, from + 1000));
          expect(records).toHaveLength(Math.min(1000, ids.length - from));
          for (const record of records) {
            const states = expected.get(record.id) ?? [];
            const got = events.get(record.id) ?? [];
            if (JSON.stringify(got) !== JSON.stringify(states))
              wrongEvents.push(`${record.id}: ${got} ≠ ${states}`);
            const latest = record.sms?.receipt?.drStatuscode ?? null;
            if (latest !== (states.at(-1) ?? null))
              wrongState.push(`${record.id}: ${latest} ≠ ${states.at(-1)}`);
          }
        }
        expect(wrongState, 'recipients not in their latest state').toEqual([]);
        expect(wrongEvents, 'recipients whose events are not one per state they went through').toEqual([]);
        expect([...events.values()].reduce((n, list) => n + list.length, 0)).toBe(carries.size);
      } finally {
        await store.close();
      }
    } finally {
      stream.stop();
      killAll();
      await smsc.close();
      await cleanup();
    }
  });
});
