import type pg from 'pg';

/**
 * Keeps the statements of an ingest transaction on their indexes. Each of them looks up or writes the batch's own
 * keys (a few thousand at most), so an index probe per key bounds its work by the batch, whatever the account
 * holds. Left to its default costs, the planner reads every row of the account into a hash table instead, once
 * the account holds some tens of thousands of rows (on a 100,000-record account: the receipt UPDATE and the
 * supersede of deliveries hashed all 100,000 messages and 90,000 deliveries for each batch of 1000, and the
 * identity and conversation reads scanned every one of the account's). PostgreSQL has no per-statement index
 * hint; these settings last until the transaction ends and are its equivalent of the `INDEXED BY` of the
 * SQLite statements.
 */
export async function keepToIndexes(client: pg.PoolClient): Promise<void> {
  await client.query(
    'SET LOCAL enable_seqscan = off; SET LOCAL enable_hashjoin = off; SET LOCAL enable_mergejoin = off',
  );
}
