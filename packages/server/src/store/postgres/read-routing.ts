import type pg from 'pg';
import type { ReadReplicas, ReplicaStatus } from '../store.js';
import { isUnavailable } from './deadline.js';
import { createPool, type PoolOptions } from './pool.js';

/** How reads are spread over the read replicas (DATABASE_READ_URL), and when they must go to the primary. */
export interface ReadRoutingOptions {
  primaryUrl: string;
  /** Each replica's URL (DATABASE_READ_URL, comma-separated). */
  replicaUrls: readonly string[];
  /** The pool options of the replicas' read pools; the monitor opens one connection of its own per node. */
  pool: Omit<PoolOptions, 'url'>;
  /** A replica serves reads only while its replay lag is at most this (WAYBILL_READ_MAX_LAG_MS). */
  maxLagMs: number;
  /** @default Date.now */
  clock?: () => number;
}

interface Replica {
  name: string;
  pool: pg.Pool;
  monitor: pg.Pool;
  /** Answered the last probe, and no read failed on its connection since. */
  up: boolean;
  /** Replay lag at `sampledAt`, an upper bound of how stale its data was then; null until first measured. */
  lagMs: number | null;
  sampledAt: number;
  /** The latest local instant T such that the replica has replayed all the primary had written at T. */
  caughtUpAt: number;
  reads: number;
  /** Its probe under way: a replica slow to answer is not probed twice, and never holds up the others. */
  probing: Promise<void> | undefined;
}

/** The primary's WAL position, sampled by the monitor: `at` is taken before the query was sent. */
interface PrimarySample {
  at: number;
  lsn: string;
}

/** Accounts whose recent writes are remembered for read-your-writes; beyond it, every account counts as written. */
const MAX_TRACKED_ACCOUNTS = 100_000;

/**
 * Reads spread over streaming replicas without ever being wrong for longer than the operator allows.
 *
 * A monitor samples, every quarter of the lag bound (at most once a second), the primary's WAL write position
 * (`pg_current_wal_lsn()`) and then each replica's replay position and last replayed commit time. A replica
 * whose replay position has reached a primary sample taken at T holds everything the primary had written at T:
 * its lag is then at most `now - T`. A replica still behind is judged by `now - pg_last_xact_replay_timestamp()`
 * too, which is small on a busy primary, and the smaller of the two bounds is its lag (the replay timestamp
 * alone misreports an idle primary, whose last commit may be old while the replica holds everything).
 *
 * A read goes to a replica only while it answered the last probe and its lag, plus the time since it was
 * measured, is within `maxLagMs`; and, for read-your-writes, only once the replica has caught up with a primary
 * sample taken after this process last wrote to that account (or migrated): a sample taken after a commit
 * returned is at or past the commit's WAL, given `synchronous_commit` is not off. Otherwise, and when a replica
 * read fails, the read goes to the primary. Healthy replicas take turns (round-robin).
 */
export class ReadRouting implements ReadReplicas {
  readonly #primary: pg.Pool;
  readonly #primaryMonitor: pg.Pool;
  readonly #replicas: Replica[];
  readonly #maxLagMs: number;
  readonly #intervalMs: number;
  readonly #clock: () => number;
  /** Writes of this process that concern every account (migrations), and per account. */
  #globalWriteAt = 0;
  readonly #writes = new Map<string, number>();
  #last: PrimarySample | undefined;
  #primaryReads = 0;
  #turn = 0;
  #timer: NodeJS.Timeout | undefined;
  #tick: Promise<void> | undefined;
  #started = false;
  #closed = false;

  constructor(primary: pg.Pool, options: ReadRoutingOptions) {
    this.#primary = primary;
    this.#maxLagMs = options.maxLagMs;
    this.#intervalMs = Math.min(1000, Math.max(50, Math.floor(options.maxLagMs / 4)));
    this.#clock = options.clock ?? Date.now;
    // Probes get a connection of their own per node, so a pool saturated by reads cannot delay them. Their
    // deadline only decides when a silent replica is called down: it stops serving reads sooner anyway, once its
    // last measurement is older than the bound allows. 2 s keeps a loaded but healthy node from being called down.
    const probeMs = Math.max(2000, 2 * this.#intervalMs);
    const monitorPool = (url: string) =>
      createPool({ ...options.pool, url, poolSize: 1, connectTimeoutMs: probeMs, queryTimeoutMs: probeMs });
    this.#primaryMonitor = monitorPool(options.primaryUrl);
    const names = replicaNames(options.replicaUrls);
    this.#replicas = options.replicaUrls.map((url, i) => ({
      name: names[i] ?? `replica-${i + 1}`,
      pool: createPool({ ...options.pool, url }),
      monitor: monitorPool(url),
      up: false,
      lagMs: null,
      sampledAt: 0,
      caughtUpAt: Number.NEGATIVE_INFINITY,
      reads: 0,
      probing: undefined,
    }));
  }

  /**
   * Runs a read of `accountId`'s data on a replica fit to serve it, else on the primary. A replica read that
   * fails runs again on the primary; a connection failure also marks the replica down until a probe answers.
   * Other failures (a table its replay has not reached yet, a query cancelled by a recovery conflict) leave it up.
   */
  async read<T>(accountId: string, run: (pool: pg.Pool) => Promise<T>): Promise<T> {
    const replica = this.#pick(accountId);
    if (replica !== undefined) {
      try {
        const value = await run(replica.pool);
        replica.reads++;
        return value;
      } catch (error) {
        if (isUnavailable(error)) replica.up = false;
      }
    }
    const value = await run(this.#primary);
    this.#primaryReads++;
    return value;
  }

  /** This process wrote (or may have written: the call failed) to the account; `undefined` means every account. */
  noteWrite(accountId?: string): void {
    const now = this.#clock();
    if (accountId === undefined) {
      this.#globalWriteAt = now;
      this.#writes.clear();
      return;
    }
    if (this.#writes.size >= MAX_TRACKED_ACCOUNTS && !this.#writes.has(accountId)) {
      this.noteWrite();
      return;
    }
    this.#writes.set(accountId, now);
  }

  status(): ReplicaStatus[] {
    this.#start();
    return this.#replicas.map((r) => ({ name: r.name, up: r.up, lagMs: r.up ? r.lagMs : null }));
  }

  reads(): Record<string, number> {
    const counts: Record<string, number> = { primary: this.#primaryReads };
    for (const r of this.#replicas) counts[r.name] = r.reads;
    return counts;
  }

  async check(): Promise<ReplicaStatus[]> {
    this.#start();
    await this.#probeNow();
    await Promise.all(this.#replicas.map((r) => r.probing));
    return this.status();
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    await this.#tick?.catch(() => {});
    await Promise.all(this.#replicas.map((r) => r.probing));
    await Promise.all([
      this.#primaryMonitor.end(),
      ...this.#replicas.flatMap((r) => [r.pool.end(), r.monitor.end()]),
    ]);
  }

  #pick(accountId: string): Replica | undefined {
    this.#start();
    const now = this.#clock();
    const since = Math.max(this.#globalWriteAt, this.#writes.get(accountId) ?? 0);
    const fit = this.#replicas.filter(
      (r) =>
        r.up && r.lagMs !== null && r.lagMs + (now - r.sampledAt) <= this.#maxLagMs && r.caughtUpAt >= since,
    );
    if (fit.length === 0) return undefined;
    this.#turn = (this.#turn + 1) % fit.length;
    return fit[this.#turn];
  }

  /** The monitor starts with the first use, so opening a store still connects nowhere. */
  #start(): void {
    if (this.#started || this.#closed) return;
    this.#started = true;
    void this.#probeNow();
  }

  #schedule(): void {
    if (this.#closed) return;
    this.#timer = setTimeout(() => void this.#probeNow(), this.#intervalMs);
    this.#timer.unref();
  }

  /** One round of probes; a round already under way is joined rather than doubled. */
  #probeNow(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    if (this.#tick !== undefined) return this.#tick;
    clearTimeout(this.#timer);
    this.#tick = this.#probe().finally(() => {
      this.#tick = undefined;
      this.#schedule();
    });
    return this.#tick;
  }

  async #probe(): Promise<void> {
    const previous = this.#last;
    const at = this.#clock();
    let current: PrimarySample;
    try {
      const result = await this.#primaryMonitor.query<{ lsn: string }>(
        'SELECT pg_current_wal_lsn()::text AS lsn',
      );
      current = { at, lsn: result.rows[0]?.lsn ?? '0/0' };
    } catch {
      // Without the primary's position no lag can be judged: the replicas' measurements age until it answers
      // (and reads fail over to a primary that fails anyway).
      return;
    }
    this.#last = current;
    // Not awaited: each replica is judged on its own clock, so one that answers slowly (or not at all) ages
    // out by itself while the others keep being measured every interval.
    for (const replica of this.#replicas) {
      if (replica.probing !== undefined || this.#closed) continue;
      replica.probing = this.#probeReplica(replica, current, previous).finally(() => {
        replica.probing = undefined;
        this.#forgetSettledWrites();
      });
    }
  }

  async #probeReplica(replica: Replica, current: PrimarySample, previous?: PrimarySample): Promise<void> {
    try {
      const result = await replica.monitor.query<{
        recovering: boolean;
        caught_up: boolean | null;
        caught_up_before: boolean | null;
        since_replay_ms: number | null;
      }>(
        `SELECT pg_is_in_recovery() AS recovering,
                pg_last_wal_replay_lsn() >= $1::pg_lsn AS caught_up,
                pg_last_wal_replay_lsn() >= $2::pg_lsn AS caught_up_before,
                (extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp()) * 1000)::float8
                  AS since_replay_ms`,
        [current.lsn, (previous ?? current).lsn],
      );
      const row = result.rows[0];
      const now = this.#clock();
      if (row === undefined) throw new Error('no answer to the replica probe');
      // Not in recovery: the URL names a primary (or a promoted standby), which holds what it holds now.
      if (!row.recovering || row.caught_up === true) replica.caughtUpAt = current.at;
      else if (row.caught_up_before === true && previous !== undefined)
        replica.caughtUpAt = Math.max(replica.caughtUpAt, previous.at);
      const byPosition = now - replica.caughtUpAt;
      const byCommitTime = row.since_replay_ms ?? Number.POSITIVE_INFINITY;
      const lag = !row.recovering || row.caught_up === true ? 0 : Math.min(byPosition, byCommitTime);
      replica.lagMs = Number.isFinite(lag) ? Math.max(0, Math.round(lag)) : null;
      replica.sampledAt = now;
      replica.up = true;
    } catch {
      replica.up = false;
      replica.lagMs = null;
    }
  }

  /** A write every replica has replayed no longer needs remembering. */
  #forgetSettledWrites(): void {
    if (this.#writes.size === 0) return;
    const settled = Math.min(...this.#replicas.map((r) => r.caughtUpAt));
    for (const [account, at] of this.#writes) if (at <= settled) this.#writes.delete(account);
  }
}

/**
 * What a replica is called in /readyz, /metrics and logs: its host:port, never its user or password; an index
 * when there is no host (a socket) or when two replicas share one.
 */
export function replicaNames(urls: readonly string[]): string[] {
  const names: string[] = [];
  urls.forEach((url, i) => {
    let name = `replica-${i + 1}`;
    try {
      const host = new URL(url).host;
      if (host !== '' && !names.includes(host)) name = host;
    } catch {
      // An unparsable URL keeps its index; pg reports it on the first connection.
    }
    names.push(name);
  });
  return names;
}
