import { LATENCY_BOUNDS_MS, NON_FINAL_STATUSCODES, NONE } from '../domain/rollup.js';

/**
 * The review rollup's SQL that both engines share (the tables: migration 7 of each). It is generated from
 * domain/rollup.ts's constants, so the backfill and prune statements count a record exactly where
 * `rollupDelta` counts it: outbound SMS recipients (`sms_status IS NOT NULL`), keys never NULL, the same
 * buckets. An engine supplies its expressions for the day of `created_at` and the milliseconds from
 * `created_at` to `dr_time`.
 */
export interface RollupSqlDialect {
  /** Whole UTC days since 1970-01-01 of `created_at`. */
  day: string;
  /** Milliseconds from `created_at` to `dr_time`. */
  elapsedMs: string;
}

const none = `'${NONE}'`;
const nonFinal = NON_FINAL_STATUSCODES.map((c) => `'${c}'`).join(', ');

const latencyBucket = (elapsedMs: string): string =>
  `CASE ${LATENCY_BOUNDS_MS.map((b, i) => `WHEN ${elapsedMs} < ${b} THEN ${i}`).join(' ')} ` +
  `ELSE ${LATENCY_BOUNDS_MS.length} END`;

/**
 * `SELECT account_id, day, campaign_id, network, state, errcode, n` over the messages `where` selects, `n` the
 * count times `sign` (1 to add them, -1 to take them away).
 */
export function countsOfMessages(d: RollupSqlDialect, from: string, where: string, sign: 1 | -1): string {
  return `SELECT account_id, ${d.day} AS day, coalesce(campaign_id, ${none}) AS campaign_id,
            coalesce(network, ${none}) AS network, coalesce(dr_statuscode, ${none}) AS state,
            coalesce(dr_errcode, ${none}) AS errcode, ${sign} * count(*) AS n
          FROM ${from}
          WHERE sms_status IS NOT NULL AND (${where})
          GROUP BY 1, 2, 3, 4, 5, 6`;
}

/** `SELECT account_id, day, campaign_id, bucket, n`, as {@link countsOfMessages}, of the final receipts. */
export function latencyOfMessages(d: RollupSqlDialect, from: string, where: string, sign: 1 | -1): string {
  return `SELECT account_id, ${d.day} AS day, coalesce(campaign_id, ${none}) AS campaign_id,
            ${latencyBucket(d.elapsedMs)} AS bucket, ${sign} * count(*) AS n
          FROM ${from}
          WHERE sms_status IS NOT NULL AND dr_statuscode IS NOT NULL AND dr_statuscode NOT IN (${nonFinal})
            AND (${where})
          GROUP BY 1, 2, 3, 4`;
}

/** Adds the rows of a {@link countsOfMessages} select to `review_counts`. */
export const addCounts = (select: string): string =>
  `INSERT INTO review_counts (account_id, day, campaign_id, network, state, errcode, n)
   ${select}
   ON CONFLICT (account_id, day, campaign_id, network, state, errcode)
   DO UPDATE SET n = review_counts.n + excluded.n`;

/** Adds the rows of a {@link latencyOfMessages} select to `review_latency`. */
export const addLatency = (select: string): string =>
  `INSERT INTO review_latency (account_id, day, campaign_id, bucket, n)
   ${select}
   ON CONFLICT (account_id, day, campaign_id, bucket) DO UPDATE SET n = review_latency.n + excluded.n`;
