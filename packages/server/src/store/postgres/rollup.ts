import type pg from 'pg';
import { isUuid } from '../../domain/formats.js';
import type { StoredMessage } from '../../domain/records.js';
import type { ReviewPeriod, ReviewRows } from '../../domain/review.js';
import { dayOf, type RollupDelta, rollupDelta } from '../../domain/rollup.js';
import {
  addCounts,
  addLatency,
  countsOfMessages,
  latencyOfMessages,
  type RollupSqlDialect,
} from '../rollup-sql.js';
import type { ReadRouter } from './queries.js';

/** PostgreSQL's day and elapsed time for store/rollup-sql.ts (`created_at` and `dr_time` are timestamptz). */
export const POSTGRES_ROLLUP: RollupSqlDialect = {
  day: `floor(extract(epoch FROM created_at) / 86400)::integer`,
  elapsedMs: `(extract(epoch FROM dr_time - created_at) * 1000)`,
};

/**
 * Counts every stored record into an empty rollup: migration 7's backfill, and what the bench data generator
 * runs after writing its rows straight into the tables.
 */
export const POSTGRES_ROLLUP_BACKFILL = [
  addCounts(countsOfMessages(POSTGRES_ROLLUP, 'messages', 'true', 1)),
  addLatency(latencyOfMessages(POSTGRES_ROLLUP, 'messages', 'true', 1)),
].join(';\n');

/**
 * Adds a batch's delta, set-wise: one statement per table, one upserted row per changed key. Keys go in sorted
 * order, so two batches of one account lock the rows they share in the same order and never deadlock. The
 * rows of a busy day are shared by every batch of the account, so callers write them late in the transaction
 * (just before the events, which take the account's row last), to hold their locks briefly.
 */
export async function writeRollup(
  client: pg.PoolClient,
  accountId: string,
  delta: RollupDelta,
): Promise<void> {
  if (delta.counts.length > 0) {
    const counts = [...delta.counts].sort(
      (a, b) =>
        a.day - b.day ||
        cmp(a.campaignId, b.campaignId) ||
        cmp(a.network, b.network) ||
        cmp(a.state, b.state) ||
        cmp(a.errcode, b.errcode),
    );
    await client.query({
      name: 'wb_rollup_counts',
      text: `INSERT INTO review_counts (account_id, day, campaign_id, network, state, errcode, n)
             SELECT $1::uuid, * FROM unnest($2::integer[], $3::text[], $4::text[], $5::text[], $6::text[],
               $7::bigint[])
             ON CONFLICT (account_id, day, campaign_id, network, state, errcode)
             DO UPDATE SET n = review_counts.n + excluded.n`,
      values: [
        accountId,
        counts.map((c) => c.day),
        counts.map((c) => c.campaignId),
        counts.map((c) => c.network),
        counts.map((c) => c.state),
        counts.map((c) => c.errcode),
        counts.map((c) => c.n),
      ],
    });
  }
  if (delta.latency.length > 0) {
    const latency = [...delta.latency].sort(
      (a, b) => a.day - b.day || cmp(a.campaignId, b.campaignId) || a.bucket - b.bucket,
    );
    await client.query({
      name: 'wb_rollup_latency',
      text: `INSERT INTO review_latency (account_id, day, campaign_id, bucket, n)
             SELECT $1::uuid, * FROM unnest($2::integer[], $3::text[], $4::integer[], $5::bigint[])
             ON CONFLICT (account_id, day, campaign_id, bucket) DO UPDATE SET n = review_latency.n + excluded.n`,
      values: [
        accountId,
        latency.map((l) => l.day),
        latency.map((l) => l.campaignId),
        latency.map((l) => l.bucket),
        latency.map((l) => l.n),
      ],
    });
  }
}

// Byte order, as the key columns' COLLATE "C".
const cmp = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b));

/** Moves the rollup for records a batch changed: `before` gives the stored state it loaded of each. */
export async function writeRollupOf(
  client: pg.PoolClient,
  accountId: string,
  before: (record: StoredMessage) => StoredMessage | undefined,
  after: readonly StoredMessage[],
): Promise<void> {
  await writeRollup(client, accountId, rollupDelta(after.map((r) => [before(r), r] as const)));
}

/** The rollup rows of a period, summed over campaigns unless the period names one. */
export async function readReview(
  read: ReadRouter,
  accountId: string,
  period: ReviewPeriod,
): Promise<ReviewRows> {
  if (!isUuid(accountId)) return { counts: [], latency: [] };
  const values = [accountId, dayOf(period.from), dayOf(period.to), period.campaignId ?? null];
  return read(accountId, async (pool) => {
    const counts = await pool.query<ReviewRows['counts'][number]>({
      name: 'wb_review_counts',
      text: `SELECT day, network, state, errcode, sum(n) AS n FROM review_counts
             WHERE account_id = $1 AND day BETWEEN $2 AND $3 AND ($4::text IS NULL OR campaign_id = $4)
             GROUP BY day, network, state, errcode HAVING sum(n) <> 0`,
      values,
    });
    const latency = await pool.query<ReviewRows['latency'][number]>({
      name: 'wb_review_latency',
      text: `SELECT bucket, sum(n) AS n FROM review_latency
             WHERE account_id = $1 AND day BETWEEN $2 AND $3 AND ($4::text IS NULL OR campaign_id = $4)
             GROUP BY bucket HAVING sum(n) <> 0`,
      values,
    });
    return { counts: counts.rows, latency: latency.rows };
  });
}
