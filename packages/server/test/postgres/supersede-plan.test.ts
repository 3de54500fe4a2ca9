import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SUPERSEDE_DELIVERIES } from '../../src/store/postgres/events.js';
import type { Store } from '../../src/store/store.js';
import { newAccount } from '../conformance/fixtures.js';
import { dropSchema, freshSchema, openStore, POSTGRES_URL } from './harness.js';
import { type PlanNode, rowsRead } from './plan-reads.js';

/**
 * Superseding a small batch's pending deliveries reads only the batch's recipients, whatever the planner's
 * statistics say (store/postgres/events.ts): here they were taken while the table was empty, and 20,000
 * deliveries of the account are pending since. A plan that reads the account's pending deliveries for every
 * batch costs each SMPP group or gateway request milliseconds, growing with the relay's backlog; a large batch
 * may read the table once, never more.
 */

const PENDING = 20_000;

describe.skipIf(!POSTGRES_URL)('superseding pending deliveries on PostgreSQL, with stale statistics', () => {
  const schema = freshSchema();
  let store: Store;
  let client: pg.Client;
  let accountId: string;

  beforeAll(async () => {
    store = openStore(schema);
    await store.migrate();
    accountId = (await store.createAccount(newAccount({ name: 'Backlog' }))).id;
    client = new pg.Client({ connectionString: POSTGRES_URL });
    await client.connect();
    await client.query(`SET search_path TO ${schema}`);
    await client.query('ANALYZE deliveries');
    await client.query(
      `INSERT INTO deliveries (account_id, seq, id, message_id, recipient, state, created_at, message_created_at,
         next_attempt_at)
       SELECT $1, g, 'evt_' || g, 'm-' || g, '4477' || g, 'pending', now(), now(), now()
       FROM generate_series(1, $2::int) g`,
      [accountId, PENDING],
    );
  });

  afterAll(async () => {
    await client?.end();
    await store?.close();
    await dropSchema(schema);
  });

  for (const size of [40, 1000]) {
    it(`reads only the recipients of a batch of ${size}, and supersedes their pending deliveries`, async () => {
      const ids = Array.from({ length: size }, (_, i) => `m-${i * 7 + 1}`);
      const tos = Array.from({ length: size }, (_, i) => `4477${i * 7 + 1}`);
      // One recipient without a delivery: nothing to supersede for it.
      ids.push(`m-${randomUUID()}`);
      tos.push('447700000000');
      await client.query('BEGIN');
      try {
        await client.query(`PREPARE supersede(uuid, text[], text[]) AS ${SUPERSEDE_DELIVERIES}`);
        // Six executions: PostgreSQL may switch to a generic plan from the sixth on.
        for (let run = 0; run < 6; run += 1) {
          const array = (values: string[]) =>
            `ARRAY[${values.map((v) => client.escapeLiteral(v)).join(',')}]`;
          const { rows } = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
            `EXPLAIN (ANALYZE, FORMAT JSON)
             EXECUTE supersede(${client.escapeLiteral(accountId)}, ${array(ids)}, ${array(tos)})`,
          );
          const plan = rows[0]?.['QUERY PLAN'][0].Plan as PlanNode;
          // A small batch (an SMPP group, a gateway's few requests) reads its own recipients, each at most twice
          // (found, then updated); a large one may hash-join a table this small, but reads no row more than once
          // beyond its own.
          const bound = size <= 100 ? 2 * (size + 1) : PENDING + size + 1;
          const read = rowsRead(plan, (table) => table === 'deliveries');
          expect(read, `deliveries read in run ${run + 1}`).toBeLessThanOrEqual(bound);
          const { rows: states } = await client.query<{ state: string; n: string }>(
            `SELECT state, count(*) AS n FROM deliveries WHERE account_id = $1 GROUP BY state ORDER BY state`,
            [accountId],
          );
          expect(states).toEqual([
            { state: 'pending', n: String(PENDING - size) },
            { state: 'superseded', n: String(size) },
          ]);
        }
      } finally {
        await client.query('ROLLBACK');
        await client.query('DEALLOCATE ALL');
      }
    });
  }
});
