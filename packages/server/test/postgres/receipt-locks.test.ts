import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/store.js';
import { at, ingest, newAccount, receipt, sms } from '../conformance/fixtures.js';
import { dropSchema, freshSchema, openStore, POSTGRES_URL } from './harness.js';

/**
 * What a receipt batch locks (store/postgres/ingest-receipts.ts receiptKeys): the recipient a receipt names, or
 * every recipient of its message id when it names none. Another transaction here holds one recipient's key row,
 * as a receipt or message batch in flight does: a receipt for another recipient of the same message goes
 * through; one naming the held recipient waits for it, and so does one naming none (it must count every
 * recipient); each then completes.
 */

const ID = 'bulk-1';
const FIRST = '447700900001';
const SECOND = '447700900002';

describe.skipIf(!POSTGRES_URL)('PostgreSQL receipt batches and the records they lock', () => {
  let schema: string;
  let store: Store;
  let holder: pg.Client;
  let accountId: string;

  beforeEach(async () => {
    schema = freshSchema();
    store = openStore(schema);
    await store.migrate();
    accountId = (await store.createAccount(newAccount())).id;
    await ingest(store, accountId, [sms(ID, FIRST), sms(ID, SECOND), sms('solo', FIRST)]);
    holder = new pg.Client({ connectionString: POSTGRES_URL, options: `-c search_path=${schema}` });
    await holder.connect();
    await holder.query('BEGIN');
    await holder.query(
      'SELECT 1 FROM message_keys WHERE account_id = $1 AND id = $2 AND channel_user_id = $3 FOR UPDATE',
      [accountId, ID, FIRST],
    );
  });

  afterEach(async () => {
    await holder?.end();
    await store?.close();
    await dropSchema(schema);
  });

  /** Whether some other backend waits on a lock the holder holds. */
  async function waitedOn(): Promise<boolean> {
    const { rows } = await holder.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE pg_backend_pid() = ANY(pg_blocking_pids(pid))`,
    );
    return (rows[0]?.n ?? 0) > 0;
  }

  it('applies a receipt for another recipient of the message while one recipient is held', async () => {
    const outcome = await store.ingestReceipts(
      accountId,
      [receipt(ID, 'delivered', at(5), { to: SECOND }), receipt('solo', 'delivered', at(5))],
      at(10),
    );
    expect(outcome).toEqual({ ok: true, value: { applied: 2, ignored: 0, unknown: [] } });
    expect(await waitedOn()).toBe(false);
    await holder.query('COMMIT');
    const dlr = await store.findDlr(accountId, ID);
    expect(dlr.map((r) => [r.channelUserId, r.sms?.receipt?.drStatuscode ?? null])).toEqual([
      [FIRST, null],
      [SECOND, 'delivered'],
    ]);
  });

  it('waits for the held recipient when a receipt names it, then applies it', async () => {
    const blocked = store.ingestReceipts(accountId, [receipt(ID, 'failed', at(6), { to: FIRST })], at(10));
    await waitUntilWaitedOn();
    await holder.query('COMMIT');
    await expect(blocked).resolves.toEqual({ ok: true, value: { applied: 1, ignored: 0, unknown: [] } });
  });

  it('waits for the held recipient when a receipt names none, as it must count them all', async () => {
    const blocked = store.ingestReceipts(
      accountId,
      [receipt('solo', 'delivered', at(5)), receipt(ID, 'delivered', at(5))],
      at(10),
    );
    await waitUntilWaitedOn();
    await holder.query('COMMIT');
    await expect(blocked).resolves.toEqual({
      ok: false,
      errors: [{ index: 1, detail: `to is required: message ${ID} has 2 recipients` }],
    });
  });

  async function waitUntilWaitedOn(): Promise<void> {
    for (let i = 0; i < 400 && !(await waitedOn()); i++) await new Promise((r) => setTimeout(r, 25));
    expect(await waitedOn()).toBe(true);
  }
});
