import type Database from 'better-sqlite3';
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
import { refOf } from './account-ref.js';
import { preparer } from './database.js';
import { EXPIRED_RECORDS_WHERE } from './expired.js';

/** SQLite's day and elapsed time for store/rollup-sql.ts (`created_at` and `dr_time` are epoch ms). */
export const SQLITE_ROLLUP: RollupSqlDialect = {
  // Floor division, also right before 1970 (SQLite's integer division truncates towards zero).
  day: '((created_at - ((created_at % 86400000) + 86400000) % 86400000) / 86400000)',
  elapsedMs: '(dr_time - created_at)',
};

/**
 * Counts every stored record into an empty rollup: migration 7's backfill, and what the bench data generator
 * runs after writing its rows straight into the tables.
 */
export const SQLITE_ROLLUP_BACKFILL = [
  addCounts(countsOfMessages(SQLITE_ROLLUP, 'messages', 'true', 1)),
  addLatency(latencyOfMessages(SQLITE_ROLLUP, 'messages', 'true', 1)),
].join(';\n');

/** The review rollup's statements (domain/rollup.ts), prepared once at open. */
export function prepareRollup(db: Database.Database) {
  const prepare = preparer(db);
  return {
    addCount: prepare<[string, number, string, string, string, string, number]>(
      `INSERT INTO review_counts (account_id, day, campaign_id, network, state, errcode, n)
       VALUES (${refOf('?')}, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (account_id, day, campaign_id, network, state, errcode) DO UPDATE SET n = n + excluded.n`,
    ),
    addLatency: prepare<[string, number, string, number, number]>(
      `INSERT INTO review_latency (account_id, day, campaign_id, bucket, n) VALUES (${refOf('?')}, ?, ?, ?, ?)
       ON CONFLICT (account_id, day, campaign_id, bucket) DO UPDATE SET n = n + excluded.n`,
    ),
    pruneCounts: prepare<[number]>(
      addCounts(countsOfMessages(SQLITE_ROLLUP, 'messages', EXPIRED_RECORDS_WHERE, -1)),
    ),
    pruneLatency: prepare<[number]>(
      addLatency(latencyOfMessages(SQLITE_ROLLUP, 'messages', EXPIRED_RECORDS_WHERE, -1)),
    ),
    dropEmptyCounts: prepare<[]>('DELETE FROM review_counts WHERE n = 0'),
    dropEmptyLatency: prepare<[]>('DELETE FROM review_latency WHERE n = 0'),
    counts: prepare<
      [{ account: string; from: number; to: number; campaign: string | null }],
      ReviewRows['counts'][number]
    >(
      `SELECT day, network, state, errcode, sum(n) AS n FROM review_counts
       WHERE account_id = ${refOf('@account')} AND day BETWEEN @from AND @to
         AND (@campaign IS NULL OR campaign_id = @campaign)
       GROUP BY day, network, state, errcode HAVING sum(n) <> 0`,
    ),
    latency: prepare<
      [{ account: string; from: number; to: number; campaign: string | null }],
      ReviewRows['latency'][number]
    >(
      `SELECT bucket, sum(n) AS n FROM review_latency
       WHERE account_id = ${refOf('@account')} AND day BETWEEN @from AND @to
         AND (@campaign IS NULL OR campaign_id = @campaign)
       GROUP BY bucket HAVING sum(n) <> 0`,
    ),
  };
}

export type RollupStatements = ReturnType<typeof prepareRollup>;

/** Adds a batch's delta: one upsert per changed key. */
export function writeRollup(sql: RollupStatements, accountId: string, delta: RollupDelta): void {
  for (const c of delta.counts) {
    sql.addCount.run(accountId, c.day, c.campaignId, c.network, c.state, c.errcode, c.n);
  }
  for (const l of delta.latency) sql.addLatency.run(accountId, l.day, l.campaignId, l.bucket, l.n);
}

/** Moves the rollup for records a batch changed: `before` holds the stored ones it loaded, by record key. */
export function writeRollupOf(
  sql: RollupStatements,
  accountId: string,
  before: (record: StoredMessage) => StoredMessage | undefined,
  after: readonly StoredMessage[],
): void {
  writeRollup(sql, accountId, rollupDelta(after.map((r) => [before(r), r] as const)));
}

/** Takes the records prune is about to remove out of the rollup (in prune's transaction, before the delete). */
export function pruneRollup(sql: RollupStatements, cutoff: number): void {
  sql.pruneCounts.run(cutoff);
  sql.pruneLatency.run(cutoff);
  sql.dropEmptyCounts.run();
  sql.dropEmptyLatency.run();
}

/** The rollup rows of a period, summed over campaigns unless the period names one. */
export function readReview(sql: RollupStatements, accountId: string, period: ReviewPeriod): ReviewRows {
  const params = {
    account: accountId,
    from: dayOf(period.from),
    to: dayOf(period.to),
    campaign: period.campaignId ?? null,
  };
  return { counts: sql.counts.all(params), latency: sql.latency.all(params) };
}
