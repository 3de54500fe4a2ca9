import type pg from 'pg';

/**
 * Orders parking against the arrival of the recipient it waits for. Without it, a receipt batch that finds no
 * recipient and a message batch that creates that recipient can run side by side: the receipt batch cannot see
 * the uncommitted recipient and parks, the message batch cannot see the uncommitted parked receipt and applies
 * nothing, and the receipt stays parked beside its recipient. There is no row to lock for a recipient that does
 * not exist yet, so both lock a transaction-scoped advisory lock named after the message id instead:
 *
 * - a message batch takes it shared for the ids it creates records of, before it reads the parked receipts
 *   (message batches never wait on each other for it);
 * - a receipt batch takes it exclusively for the ids it parks, then looks for their records again: a message
 *   batch that held it has committed by then, and its records are visible.
 *
 * Ids are hashed into a fixed number of buckets per account, so a batch of a thousand ids takes at most that
 * many locks (PostgreSQL's lock table is small), and the buckets are locked in ascending order, so two batches
 * never wait on each other in a cycle. Sharing a bucket costs only a short wait.
 */

const BUCKETS = 16;

/** FNV-1a: cheap and stable across processes, which is all a bucket needs. */
function bucketOf(id: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) {
    hash ^= id.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % BUCKETS;
}

const bucketsOf = (ids: Iterable<string>): number[] =>
  [...new Set([...ids].map(bucketOf))].sort((a, b) => a - b);

/**
 * Takes the parking locks of these message ids: `shared` for message ingest (before it reads the parked
 * receipts of the ids it creates records of), exclusive for receipt ingest (before it parks; it then checks
 * that no record of these ids appeared meanwhile).
 */
export async function lockParking(
  client: pg.PoolClient,
  accountId: string,
  ids: Iterable<string>,
  mode: 'shared' | 'exclusive',
): Promise<void> {
  const buckets = bucketsOf(ids);
  if (buckets.length === 0) return;
  await client.query({
    name: mode === 'shared' ? 'wb_park_lock_shared' : 'wb_park_lock',
    text: `SELECT ${mode === 'shared' ? 'pg_advisory_xact_lock_shared' : 'pg_advisory_xact_lock'}(hashtext($1), b)
           FROM unnest($2::int[]) AS b`,
    values: [accountId, buckets],
  });
}

/**
 * The parking locks of a route's carrier ids (CONTRACT §12 "Correlation"), with the same protocol as
 * {@link lockParking}: `shared` for a message batch claiming the pairs, before it reads their parked receipts;
 * exclusive for a carrier receipt batch before it parks, after which it looks for holders again.
 */
export async function lockCarrierParking(
  client: pg.PoolClient,
  route: string,
  carrierIds: Iterable<string>,
  mode: 'shared' | 'exclusive',
): Promise<void> {
  // Account ids are UUIDs, so this scope never names an account's locks.
  await lockParking(client, `route:${route}`, carrierIds, mode);
}

/**
 * The account's message-batch turn, transaction-scoped. Every first attempt of a message batch takes it shared
 * (batches run side by side); a retry takes it exclusively. The retry then waits for the batches in flight to
 * finish, and the ones that come after wait for it: it reads everything they created and creates alone, so its
 * ON CONFLICT inserts all take effect. Without it, measured with two concurrent streams of 1,000-message
 * batches to a shared pool of numbers, a batch lost 8 races in a row and failed.
 *
 * A receipt batch's retry takes it exclusively too. Its first attempt starts over when a record of an id it
 * was about to park arrived meanwhile ({@link lockParking}), and with message batches committing records all
 * the time it lost that race eight times in a row and failed (test/postgres/concurrency.test.ts, mixed
 * traffic); alone, no record can arrive under it. It is the first statement of the transaction, before any
 * row or parking lock, so it never waits while holding one.
 */
export async function lockMessageTurn(
  client: pg.PoolClient,
  accountId: string,
  exclusive: boolean,
): Promise<void> {
  await client.query({
    name: exclusive ? 'wb_message_turn' : 'wb_message_turn_shared',
    text: `SELECT ${exclusive ? 'pg_advisory_xact_lock' : 'pg_advisory_xact_lock_shared'}(hashtextextended($1, 0))`,
    values: [`waybill:messages:${accountId}`],
  });
}
