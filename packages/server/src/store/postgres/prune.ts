import pg from 'pg';
import { addCounts, addLatency, countsOfMessages, latencyOfMessages } from '../rollup-sql.js';
import { PruneGaveUpError, type PruneOptions } from '../store.js';
import { listPartitions, lockPartitions } from './partitions.js';
import { quoteIdent, withClient } from './pool.js';
import { POSTGRES_ROLLUP } from './rollup.js';

/**
 * Retention: removes every message record created before `cutoff`, with its receipt events, deliveries and
 * their attempt logs and its counts in the review rollup (taken away in the transaction that removes it), and
 * returns how many records went.
 *
 * Month partitions wholly older than the cutoff are dropped (with their key rows), which costs the same for
 * a million rows as for one and leaves no dead tuples for vacuum; only the month the cutoff falls in, and the
 * default partition, are deleted from in batches. Every step is a short transaction of its own.
 *
 * Prune must never stall the service. Dropping a partition needs an ACCESS EXCLUSIVE lock on it and on
 * `messages`, and PostgreSQL queues every later lock request on `messages` (each ingest's) behind a waiting
 * one: behind a long reader (a report, `pg_dump`) a plain DROP would hold up all ingest for as long as the
 * reader runs. So each step waits at most {@link LOCK_TIMEOUT_MS} for any lock (`lock_timeout`); when it does
 * not get it, it rolls back, lets the writers through, and tries again after a pause that grows, with jitter,
 * up to {@link MAX_PAUSE_MS}. Writers thus wait at most about one `lock_timeout` per attempt. Once the time spent
 * waiting adds up to `giveUpAfterMs`, prune stops with a {@link PruneGaveUpError}; what it removed stays removed.
 *
 * (`DETACH PARTITION … CONCURRENTLY`, which needs no exclusive lock on `messages`, is refused by PostgreSQL
 * while the table has a default partition, and `messages_default` is what keeps inserts from ever failing.)
 */
export async function prune(
  pool: pg.Pool,
  schema: string,
  cutoff: Date,
  options: PruneOptions = {},
): Promise<number> {
  const run = new PruneRun(options);
  const before = cutoff.toISOString();
  await withClient(pool, async (client) => {
    await run.batches(client, 'receipt events and their deliveries', DELETE_EVENTS, before);
    await run.batches(client, 'carrier ids', DELETE_CARRIERS, before);

    for (const partition of await listPartitions(client)) {
      if (partition.to > cutoff.getTime()) break;
      const table = quoteIdent(partition.name);
      const records = await run.retrying(partition.name, async () => {
        // Waiting for the locks costs nothing here; only once they are free does the expensive part start
        // (deleting the key rows), so a partition a reader keeps open is not worked on again at every try.
        const exists = async () =>
          (
            await client.query<{ found: string | null }>('SELECT to_regclass($1) AS found', [
              `${quoteIdent(schema)}.${table}`,
            ])
          ).rows[0]?.found != null;
        const free = await run.step(client, async () => {
          // Another prune may have dropped it meanwhile.
          if (!(await exists())) return false;
          await client.query(`LOCK TABLE ONLY messages, ${table} IN ACCESS EXCLUSIVE MODE`);
          return true;
        });
        if (!free) return 0;
        return run.step(client, async () => {
          await lockPartitions(client, schema);
          if (!(await exists())) return 0;
          // Deleting the key rows first locks them, so an ingest still merging into one of these records
          // finishes before its partition goes (and one arriving later starts the record afresh).
          await client.query(
            `DELETE FROM message_keys k USING ${table} p
             WHERE k.account_id = p.account_id AND k.id = p.id AND k.channel_user_id = p.channel_user_id
               AND k.created_at = p.created_at`,
          );
          const count = await client.query<{ n: number }>(`SELECT count(*) AS n FROM ${table}`);
          await client.query(addCounts(countsOfMessages(POSTGRES_ROLLUP, table, 'true', -1)));
          await client.query(addLatency(latencyOfMessages(POSTGRES_ROLLUP, table, 'true', -1)));
          await client.query(`DROP TABLE ${table}`);
          return count.rows[0]?.n ?? 0;
        });
      });
      run.removed(records);
    }

    await run.batches(client, 'messages', DELETE_MESSAGES, before, (n) => run.removed(n));
    // Keys whose every record went (or moved on) keep a row of 0 until here.
    await run.retrying('review rollup', () =>
      run.step(client, async () => {
        await client.query('DELETE FROM review_counts WHERE n = 0');
        await client.query('DELETE FROM review_latency WHERE n = 0');
      }),
    );
  });
  return run.total;
}

/** The longest a prune statement waits for a lock, in milliseconds (each wait holds up writers queued behind). */
export const LOCK_TIMEOUT_MS = 200;
/** The first pause before a step is tried again, in milliseconds; it doubles per attempt. */
const FIRST_PAUSE_MS = 250;
/** The longest pause between attempts, in milliseconds. */
const MAX_PAUSE_MS = 5_000;
const DEFAULT_GIVE_UP_MS = 600_000;
/** Rows per batch of the row-by-row deletes: each batch is one short transaction. */
const BATCH_SIZE = 5_000;

const LOCK_NOT_AVAILABLE = '55P03';

const isLockTimeout = (error: unknown): boolean =>
  error instanceof pg.DatabaseError && error.code === LOCK_NOT_AVAILABLE;

/** The pause after the `attempt`-th failed try: doubling, capped, and jittered so two prunes drift apart. */
const pauseAfter = (attempt: number): number => {
  const ceiling = Math.min(MAX_PAUSE_MS, FIRST_PAUSE_MS * 2 ** (attempt - 1));
  return Math.round(ceiling / 2 + (Math.random() * ceiling) / 2);
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One prune call: its running total, its time spent waiting for locks, and its progress reports. */
class PruneRun {
  total = 0;
  private waitedMs = 0;
  private readonly giveUpAfterMs: number;

  constructor(private readonly options: PruneOptions) {
    this.giveUpAfterMs = options.giveUpAfterMs ?? DEFAULT_GIVE_UP_MS;
  }

  removed(records: number): void {
    if (records === 0) return;
    this.total += records;
    this.options.onProgress?.({ kind: 'removed', records, total: this.total });
  }

  /** `work` in a transaction of its own whose lock waits end after {@link LOCK_TIMEOUT_MS}. */
  async step<T>(client: pg.PoolClient, work: () => Promise<T>): Promise<T> {
    await client.query('BEGIN');
    try {
      await client.query(`SET LOCAL lock_timeout = ${LOCK_TIMEOUT_MS}`);
      const value = await work();
      await client.query('COMMIT');
      return value;
    } catch (error) {
      // Only when the server answered is the connection in step; otherwise withClient destroys it.
      if (error instanceof pg.DatabaseError) await client.query('ROLLBACK');
      throw error;
    }
  }

  /** `attempt` until it gets its locks, pausing in between; gives up once the waits add up to the bound. */
  async retrying<T>(target: string, attempt: () => Promise<T>): Promise<T> {
    for (let n = 1; ; n++) {
      const started = Date.now();
      try {
        return await attempt();
      } catch (error) {
        if (!isLockTimeout(error)) throw error;
        const pause = pauseAfter(n);
        this.waitedMs += Date.now() - started;
        if (this.waitedMs + pause > this.giveUpAfterMs) {
          throw new PruneGaveUpError(
            `gave up after waiting ${Math.round(this.waitedMs / 1000)} s for locks on ${target}, which other ` +
              `sessions keep (a long query, pg_dump; see pg_locks): ${this.total} record(s) were removed ` +
              'before that; run prune again once they finish',
            this.total,
          );
        }
        this.options.onProgress?.({
          kind: 'waiting',
          target,
          attempt: n,
          waitedMs: this.waitedMs,
          retryInMs: pause,
        });
        await sleep(pause);
        this.waitedMs += pause;
      }
    }
  }

  /** Runs `statement` (which deletes at most $2 rows older than $1) in batches until one deletes fewer. */
  async batches(
    client: pg.PoolClient,
    target: string,
    statement: pg.QueryConfig,
    before: string,
    onBatch?: (count: number) => void,
  ): Promise<void> {
    for (;;) {
      const count = await this.retrying(target, () =>
        this.step(client, async () => {
          const result = await client.query<{ n: number }>({ ...statement, values: [before, BATCH_SIZE] });
          return result.rows[0]?.n ?? 0;
        }),
      );
      onBatch?.(count);
      if (count < BATCH_SIZE) return;
    }
  }
}

// Events go by their record's `created_at` (copied into them). Joining the accounts reads each one's range of
// the (account_id, message_created_at) index rather than the whole table. A delivery and its attempt log go with
// their event, in the same statement: one delivery per event, keyed by its seq (migration 14).

const DELETE_EVENTS: pg.QueryConfig = {
  name: 'wb_prune_events',
  text: `WITH doomed AS (
           SELECT e.account_id, e.seq FROM receipt_events e JOIN accounts a ON e.account_id = a.id
           WHERE e.message_created_at < $1 LIMIT $2
         ), attempts_gone AS (
           DELETE FROM delivery_attempts x USING doomed g WHERE x.account_id = g.account_id AND x.seq = g.seq
         ), deliveries_gone AS (
           DELETE FROM deliveries d USING doomed g WHERE d.account_id = g.account_id AND d.seq = g.seq
         ), gone AS (
           DELETE FROM receipt_events e USING doomed g WHERE e.account_id = g.account_id AND e.seq = g.seq
           RETURNING 1
         )
         SELECT count(*) AS n FROM gone`,
};

// A carrier pair goes with its record (its created_at is the record's); by account, like the events.
const DELETE_CARRIERS: pg.QueryConfig = {
  name: 'wb_prune_carriers',
  text: `WITH doomed AS (
           SELECT c.route, c.carrier_id FROM carrier_ids c JOIN accounts a ON c.account_id = a.id
           WHERE c.created_at < $1 LIMIT $2
         ), gone AS (
           DELETE FROM carrier_ids c USING doomed d WHERE c.route = d.route AND c.carrier_id = d.carrier_id
           RETURNING 1
         )
         SELECT count(*) AS n FROM gone`,
};

/** What is left after the months went: the month the cutoff falls in, and the default partition. */
const DELETE_MESSAGES: pg.QueryConfig = {
  name: 'wb_prune_rows',
  text: `WITH doomed AS (
           SELECT account_id, id, channel_user_id, created_at FROM messages WHERE created_at < $1 LIMIT $2
         ), gone AS (
           DELETE FROM messages m USING doomed d
           WHERE m.account_id = d.account_id AND m.id = d.id AND m.channel_user_id = d.channel_user_id
             AND m.created_at = d.created_at
           RETURNING m.account_id, m.id, m.channel_user_id, m.created_at, m.campaign_id, m.network, m.sms_status,
             m.dr_statuscode, m.dr_errcode, m.dr_time
         ), keys AS (
           DELETE FROM message_keys k USING gone g
           WHERE k.account_id = g.account_id AND k.id = g.id AND k.channel_user_id = g.channel_user_id
             AND k.created_at = g.created_at
         ), counts AS (
           ${addCounts(countsOfMessages(POSTGRES_ROLLUP, 'gone', 'true', -1))}
         ), latency AS (
           ${addLatency(latencyOfMessages(POSTGRES_ROLLUP, 'gone', 'true', -1))}
         )
         SELECT count(*) AS n FROM gone`,
};
