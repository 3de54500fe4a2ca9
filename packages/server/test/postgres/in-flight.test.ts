import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { MessageUpsert } from '../../src/domain/ingest/precedence.js';
import { messageIngest } from '../../src/store/postgres/ingest-messages.js';
import type { IngestStore, Store } from '../../src/store/store.js';
import { NOW, newAccount, sms } from '../conformance/fixtures.js';
import { dropSchema, freshSchema, interceptingPool, openStore, POSTGRES_URL, sql } from './harness.js';

/**
 * Two message batches of one instance that meet the same new numbers (store/postgres/in-flight.ts): the second
 * uses the contacts the first is creating and writes alongside it, instead of waiting inside its own insert for
 * the first one's commit and then starting over alone.
 */

/**
 * A pool that can hold the first run of a named statement: `hold(name)` makes the next connection to send it
 * wait before sending it, until `release()` (or `fail()`, which makes that statement throw). Every named
 * statement sent is logged in order.
 */
function holdingPool(schema: string) {
  const log: string[] = [];
  let held: { name: string; reached: () => void; go: Promise<boolean> } | undefined;
  let settle: (go: boolean) => void = () => {};
  const pool = interceptingPool(schema, 4, async (query, config, values) => {
    const name =
      typeof config === 'object' && config !== null ? (config as { name?: string }).name : undefined;
    if (name !== undefined && held?.name === name) {
      const { reached, go } = held;
      held = undefined;
      reached();
      if (!(await go)) throw new Error(`${name} failed on purpose`);
    }
    if (name !== undefined) log.push(name);
    return query(config, values);
  });
  return {
    pool,
    log,
    /** Holds the next run of `name`; resolves once a connection is about to send it. */
    hold: (name: string) =>
      new Promise<void>((reached) => {
        const go = new Promise<boolean>((resolve) => {
          settle = resolve;
        });
        held = { name, reached, go };
      }),
    release: () => settle(true),
    fail: () => settle(false),
  };
}

/** Resolves once `done()` is true, or rejects after `ms`. */
async function until(done: () => boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!done()) {
    if (Date.now() > end) throw new Error(`not seen within ${ms} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const number = (n: number) => `4477009${String(n).padStart(5, '0')}`;
const batch = (prefix: string, from: number, to: number): MessageUpsert[] =>
  Array.from({ length: to - from }, (_, k) => sms(`${prefix}-${from + k}`, number(from + k)));

describe.skipIf(!POSTGRES_URL)('message batches of one instance that meet the same new numbers', () => {
  let schema: string;
  let store: Store;
  let accountId: string;
  let held: ReturnType<typeof holdingPool>;
  let ingest: IngestStore['ingestMessages'];

  beforeEach(async () => {
    schema = freshSchema();
    store = openStore(schema);
    await store.migrate();
    accountId = (await store.createAccount(newAccount())).id;
    held = holdingPool(schema);
    ingest = messageIngest(held.pool, schema);
  });
  afterEach(async () => {
    held.release();
    await held.pool.end();
    await store.close();
    await dropSchema(schema);
  });

  /** Per number: its identities' contacts, and the contacts and conversations its records name. */
  async function linksOf(numbers: string[]) {
    const rows = await sql<{
      n: string;
      owners: number;
      contacts: number;
      conversations: number;
      records: number;
    }>(
      schema,
      `SELECT i.channel_user_id AS n, count(DISTINCT i.contact_id)::int AS owners,
              count(DISTINCT m.contact_id)::int AS contacts, count(DISTINCT m.conversation_id)::int AS conversations,
              count(DISTINCT m.id)::int AS records
       FROM identities i JOIN messages m ON m.account_id = i.account_id AND m.channel_user_id = i.channel_user_id
         AND m.contact_id = i.contact_id
       WHERE i.channel_user_id = ANY($1) GROUP BY 1 ORDER BY 1`,
      [numbers],
    );
    return rows;
  }

  async function totals() {
    const [row] = await sql<Record<string, number>>(
      schema,
      `SELECT (SELECT count(*)::int FROM contacts) AS contacts, (SELECT count(*)::int FROM identities) AS identities,
              (SELECT count(*)::int FROM conversations) AS conversations, (SELECT count(*)::int FROM messages) AS messages`,
    );
    return row;
  }

  it('writes its records with the contacts the other is creating, while the other is still open', {
    timeout: 30_000,
  }, async () => {
    const reached = held.hold('wb_insert_records');
    const first = ingest(accountId, batch('a', 0, 50), NOW);
    await reached;
    // The first batch has inserted its identities and holds them uncommitted. The second meets 25 of them:
    // before, it waited inside its identity insert for a commit that cannot come while the first is held.
    const second = ingest(accountId, batch('b', 25, 75), NOW);
    await until(() => held.log.includes('wb_insert_records'), 10_000, "the second batch's records written");
    expect(held.log.filter((n) => n === 'wb_insert_identities')).toHaveLength(2);
    held.release();
    expect(await Promise.all([first, second])).toEqual([
      { ok: true, value: { accepted: 50, events: 0 } },
      { ok: true, value: { accepted: 50, events: 0 } },
    ]);
    // Neither started over: each took the message-batch turn once, shared.
    expect(held.log.filter((n) => n === 'wb_message_turn_shared')).toHaveLength(2);
    expect(held.log).not.toContain('wb_message_turn');
    const shared = Array.from({ length: 25 }, (_, k) => number(25 + k));
    expect(await linksOf(shared)).toEqual(
      shared.map((n) => ({ n, owners: 1, contacts: 1, conversations: 1, records: 2 })),
    );
    expect(await totals()).toEqual({ contacts: 75, identities: 75, conversations: 75, messages: 100 });
  });

  it('starts over on its own contacts when the batch whose contacts it used fails', {
    timeout: 30_000,
  }, async () => {
    const reached = held.hold('wb_insert_records');
    const first = ingest(accountId, batch('a', 0, 50), NOW).then(
      () => 'accepted',
      (error: Error) => error.message,
    );
    await reached;
    const second = ingest(accountId, batch('b', 25, 75), NOW);
    await until(() => held.log.includes('wb_insert_records'), 10_000, "the second batch's records written");
    held.fail();
    expect(await first).toBe('wb_insert_records failed on purpose');
    expect(await second).toEqual({ ok: true, value: { accepted: 50, events: 0 } });
    // The second batch's records name contacts that exist: the ones its second attempt created.
    const numbers = Array.from({ length: 50 }, (_, k) => number(25 + k));
    expect(await linksOf(numbers)).toEqual(
      numbers.map((n) => ({ n, owners: 1, contacts: 1, conversations: 1, records: 1 })),
    );
    expect(await totals()).toEqual({ contacts: 50, identities: 50, conversations: 50, messages: 50 });
  });

  it('does not wait for the other batch for ever: it starts over', { timeout: 30_000 }, async () => {
    const reached = held.hold('wb_insert_records');
    const first = ingest(accountId, batch('a', 0, 50), NOW);
    await reached;
    const second = ingest(accountId, batch('b', 25, 75), NOW);
    await until(() => held.log.includes('wb_insert_records'), 10_000, "the second batch's records written");
    // While the first is still held, the second gives up waiting for it: its retry asks for the turn alone
    // (and then waits in PostgreSQL for the held batch, as before). A batch that waited for ever here could
    // be part of a cycle PostgreSQL's deadlock detector cannot see.
    await until(() => held.log.includes('wb_message_turn'), 10_000, 'the second batch starting over');
    held.release();
    expect(await Promise.all([first, second])).toEqual([
      { ok: true, value: { accepted: 50, events: 0 } },
      { ok: true, value: { accepted: 50, events: 0 } },
    ]);
    expect(await totals()).toEqual({ contacts: 75, identities: 75, conversations: 75, messages: 100 });
  });
});
