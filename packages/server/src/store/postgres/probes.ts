/**
 * Batch lookups written as one index probe per key, whatever the statistics say.
 *
 * A batch statement names up to a thousand keys of one account. Written as a plain join with `unnest` (or as
 * `= ANY`), its plan depends on what the statistics say about the account, and they say nothing about an
 * account that is new, or that grew since the table was last analyzed: the planner then takes the account for
 * a handful of rows, and reads all of them per batch (a hash join on the account's prefix of the index, or the
 * array as a filter on it). Measured on a fresh account during a backfill: 94,000 buffers to lock 1,300 key rows
 * after 100,000 records, growing with every batch until autovacuum analyzed the table. A LATERAL subquery
 * fenced with OFFSET 0 (or a row lock) cannot be flattened into such a join: it stays a nested loop over the
 * keys, each an index probe on the whole key ({@link ACCOUNT}), so a batch costs its own size on any account of
 * any size.
 */

/**
 * The account `$1`, hidden from the planner. Given the id itself, it estimates the account's rows from the
 * statistics, which may predate the account: a handful. Then scanning the account's prefix of any index and
 * filtering the rest costs as little as probing the whole key, and it may take the first (seen here: a lookup
 * of identities by number on the index by contact, 20,000 rows read per probe). Behind an InitPlan it estimates
 * the average account, and the probe on the whole key wins.
 */
export const ACCOUNT = '(SELECT $1::uuid)';

/**
 * Joins each row of `keys` (id, channel_user_id, created_at; account `$1`) to its record as `m`. The fenced
 * subquery is a parameterized nested loop, whose Append PostgreSQL prunes at run time to the one month partition
 * that holds each record: one index probe per record instead of one per month, or a pass over the account.
 * Batches pass {@link ACCOUNT} as `account`; the reads of a few records keep `$1`, as the InitPlan costs a /dlr
 * statement about 4% (pgbench) and the probe's primary key has won the choice of index there in every plan seen.
 * `located` adds where each row is (`row_table`, `row_tid`: records.ts RowLocation).
 */
export const joinRecord = (keys: string, account = '$1', located = false): string =>
  `CROSS JOIN LATERAL (
     SELECT *${located ? ', m.tableoid::regclass::text AS row_table, m.ctid::text AS row_tid' : ''} FROM messages m
     WHERE m.account_id = ${account} AND m.id = ${keys}.id AND m.channel_user_id = ${keys}.channel_user_id
       AND m.created_at = ${keys}.created_at
     OFFSET 0
   ) m`;
