import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MessageUpsert, ReceiptInput } from '../../src/domain/ingest/precedence.js';
import { messageIngest } from '../../src/store/postgres/ingest-messages.js';
import { receiptIngest } from '../../src/store/postgres/ingest-receipts.js';
import { queries } from '../../src/store/postgres/queries.js';
import type { Store } from '../../src/store/store.js';
import { at, NOW, newAccount, sms } from '../conformance/fixtures.js';
import { dropSchema, freshSchema, interceptingPool, openStore, POSTGRES_URL, sql } from './harness.js';
import { type PlanNode, rowsRead } from './plan-reads.js';

/**
 * A message or receipt batch reads its own records, whatever the planner's statistics say about the account
 * (store/postgres/probes.ts). Here they were taken while another account held every row, and the account
 * ingested 20,000 records since: the statistics take it for a handful of rows. Plans that then read all of the
 * account's keys, identities or records per batch made a backfill's every batch slower than the one before
 * until autovacuum analyzed the tables. Each batch statement runs under EXPLAIN ANALYZE first (in a savepoint
 * rolled back), and the rows its scans read are counted.
 */

const BULK = 20_000;
const BATCH = 200;

/**
 * A pool whose connections explain every named statement before running it: the statement under EXPLAIN ANALYZE
 * with the same values (so planned for them, as a custom plan is), in a savepoint rolled back inside a
 * transaction (outside one, only reads run), then as the caller sent it.
 */
function explainingPool(schema: string, plans: { name: string; read: number }[]): pg.Pool {
  let inTransaction = false;
  return interceptingPool(schema, 1, async (query, config, values) => {
    if (config === 'BEGIN') inTransaction = true;
    if (config === 'COMMIT' || config === 'ROLLBACK') inTransaction = false;
    const named = typeof config === 'object' && config !== null && 'name' in config;
    if (named) {
      const { name, text, values: params } = config as pg.QueryConfig & { name: string };
      if (inTransaction) await query('SAVEPOINT explain');
      const { rows } = await query({ text: `EXPLAIN (ANALYZE, FORMAT JSON) ${text}`, values: params });
      if (inTransaction) await query('ROLLBACK TO SAVEPOINT explain');
      plans.push({ name, read: rowsRead(rows[0]['QUERY PLAN'][0].Plan as PlanNode) });
    }
    return query(config, values);
  });
}

const message = (n: number): MessageUpsert => sms(`m-${n}`, `4477${String(n).padStart(8, '0')}`);

describe.skipIf(!POSTGRES_URL)(
  'batch statements on PostgreSQL, with statistics that do not know the account',
  () => {
    const schema = freshSchema();
    let store: Store;
    let pool: pg.Pool;
    let accountId: string;
    const plans: { name: string; read: number }[] = [];

    beforeAll(async () => {
      store = openStore(schema);
      await store.migrate();
      const other = (await store.createAccount(newAccount({ name: 'Analyzed' }))).id;
      await store.ingestMessages(
        other,
        Array.from({ length: 1000 }, (_, n) => message(n)),
        NOW,
      );
      const tables = await sql<{ name: string; partitioned: boolean }>(
        schema,
        `SELECT c.relname AS name, c.relkind = 'p' AS partitioned FROM pg_class c
       JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = $1 AND c.relkind IN ('r', 'p')`,
        [schema],
      );
      for (const { name, partitioned } of tables) {
        if (!partitioned) await sql(schema, `ALTER TABLE ${name} SET (autovacuum_enabled = false)`);
        await sql(schema, `ANALYZE ${name}`);
      }
      accountId = (await store.createAccount(newAccount({ name: 'Backfill' }))).id;
      for (let from = 0; from < BULK; from += 1000) {
        await store.ingestMessages(
          accountId,
          Array.from({ length: 1000 }, (_, n) => message(from + n)),
          NOW,
        );
      }
      pool = explainingPool(schema, plans);
    }, 120_000);

    afterAll(async () => {
      await pool?.end();
      await store?.close();
      await dropSchema(schema);
    });

    it('reads only the records of a message batch, a receipt batch and a lookup by ids', {
      timeout: 60_000,
    }, async () => {
      // Half of the batch updates stored records, half creates records of numbers the account already knows.
      const messages = Array.from({ length: BATCH }, (_, n) =>
        n % 2 === 0 ? { ...message(n * 50), text: 'again' } : { ...message(n * 50), id: `new-${n}` },
      );
      const done = await messageIngest(pool, schema)(accountId, messages, at(60), {});
      expect(done).toEqual({ ok: true, value: { accepted: BATCH, events: 0 } });
      const receipts = Array.from(
        { length: BATCH },
        // Half name their recipient, half do not (each message has one).
        (_, n): ReceiptInput => ({
          messageId: `m-${n * 97}`,
          ...(n % 2 === 0 ? { to: message(n * 97).channelUserId } : {}),
          drStatuscode: 'delivered',
          drErrcode: '0',
          drTime: at(120),
        }),
      );
      const applied = await receiptIngest(pool)(accountId, receipts, at(120));
      expect(applied.ok && applied.value.applied).toBe(BATCH);

      // Mode 1's lookup by ids, on the same connection as a read routed to it.
      const lookups = queries(async (_, run) => {
        const client = await pool.connect();
        try {
          return await run(client as unknown as pg.Pool);
        } finally {
          client.release();
        }
      });
      const ids = Array.from({ length: 20 }, (_, n) => `m-${n * 997}`);
      expect(await lookups.findMessagesByIds(accountId, ids, undefined)).toHaveLength(20);

      // The SMS update is one statement per partition, named after it.
      const names = new Set(plans.map((p) => p.name.replace(/^(wb_update_sms_state) .*/, '$1')));
      for (const lookup of [
        'wb_messages_by_ids',
        'wb_batch_identities',
        'wb_conversations_of_contacts',
        'wb_lock_keys',
        'wb_lock_receipt_keys',
        'wb_read_records',
        'wb_update_sms_state',
      ]) {
        expect(names, lookup).toContain(lookup);
      }
      // Each key found by a probe; a record's month partitions probed once each at most (the fresh schema has a
      // few). Reading the account's 20,000 rows is far past it.
      for (const { name, read } of plans) expect(read, name).toBeLessThanOrEqual(8 * BATCH);
      // A receipt's update visits its row once, where the read found it. Through the partitioned table, a join
      // on the tuple id visited it in every partition: the months kept times the batch.
      const updates = plans.filter((p) => p.name.startsWith('wb_update_sms_state'));
      expect(updates.reduce((sum, p) => sum + p.read, 0)).toBeLessThanOrEqual(BATCH);
    });
  },
);
