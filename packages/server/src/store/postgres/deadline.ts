import { AsyncLocalStorage } from 'node:async_hooks';
import pg from 'pg';
import { type Store, StoreUnavailableError, SUBSCRIPTIONS } from '../store.js';

/**
 * The database deadline of the PostgreSQL store (WAYBILL_DB_TIMEOUT_MS, CONTRACT §11).
 *
 * Every store call but `migrate`, `prune` and `close` runs against a deadline of `timeoutMs` from its start:
 *
 * - the caller gets its answer, or a {@link StoreUnavailableError}, by the deadline (the call is raced against a
 *   timer, so nothing the network does can hold it longer);
 * - the work the call started stops by then too: each statement has a client-side read timeout (pg's
 *   `query_timeout`, for when the network drops packets and `statement_timeout` cannot fire because the
 *   statement never reached the server), a transaction's connection is destroyed when the call's deadline
 *   passes (`inTransaction`, so a transaction of N statements takes at most one deadline, never N), and getting
 *   a connection (a new one, or a free one of a full pool) is bounded by `connectionTimeoutMillis`;
 * - a connection that timed out, or failed in any way other than an error answered by the server, is destroyed
 *   rather than returned to the pool: its protocol state is unknown.
 *
 * `migrate` and `prune` are maintenance, which may legitimately run long (an index build, dropping a month):
 * they run on a pool of their own whose statements are bounded by `statement_timeout` on the server and a read
 * timeout of `statement_timeout + timeoutMs` on the client.
 */

/** The deadline (epoch ms) of the store call the current async context belongs to. */
export const callDeadline = new AsyncLocalStorage<number>();

/** The call's deadline passed; the connection it was using has been destroyed. */
export class DeadlineError extends Error {
  override readonly name = 'DeadlineError';
}

/**
 * Runs `work` under a deadline of `timeoutMs` from now: its answer, or a {@link StoreUnavailableError} at the
 * deadline; infrastructure failures it throws become a {@link StoreUnavailableError} too.
 */
export async function withDeadline<T>(timeoutMs: number, work: () => Promise<T>): Promise<T> {
  const at = Date.now() + timeoutMs;
  const running = callDeadline.run(at, async () => work());
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new StoreUnavailableError(`the database did not answer within ${timeoutMs} ms`)),
      timeoutMs,
    );
  });
  try {
    return await Promise.race([running, expired]);
  } catch (error) {
    throw toStoreError(error);
  } finally {
    clearTimeout(timer);
    // Past the deadline the work winds down on its own (its connection is being destroyed); its late failure
    // has no one to tell.
    running.catch(() => {});
  }
}

/** The store with every call bounded by {@link withDeadline}, except `unbounded` ones (errors still mapped). */
export function withDeadlines(store: Store, timeoutMs: number, unbounded: ReadonlySet<string>): Store {
  const guarded: Record<string, unknown> = { ...store };
  for (const [name, value] of Object.entries(store)) {
    if (typeof value !== 'function' || name === 'close' || SUBSCRIPTIONS.has(name)) continue;
    const method = (...args: unknown[]) =>
      (value as (...a: unknown[]) => Promise<unknown>).apply(store, args);
    guarded[name] = unbounded.has(name)
      ? async (...args: unknown[]) => {
          try {
            return await method(...args);
          } catch (error) {
            throw toStoreError(error);
          }
        }
      : (...args: unknown[]) => withDeadline(timeoutMs, () => method(...args));
  }
  return guarded as unknown as Store;
}

/** `error` as a {@link StoreUnavailableError} when it means the database is unavailable; else unchanged. */
export function toStoreError(error: unknown): unknown {
  if (error instanceof StoreUnavailableError || !isUnavailable(error)) return error;
  const detail = error instanceof pg.DatabaseError ? `${error.code} ${error.message}` : String(error);
  return new StoreUnavailableError(`the database is unavailable: ${detail}`, { cause: error });
}

/**
 * Which failures mean "the database is unavailable; the same request will work once it is back" (503 with
 * Retry-After, code 11 on /dlr) rather than a bug or a misconfiguration (500, `internal`):
 *
 * Unavailable —
 * - the network: connection refused, reset, aborted, timed out, host or network unreachable, a DNS name that
 *   does not resolve right now (`ENOTFOUND`/`EAI_AGAIN`: during a failover the database's name may briefly
 *   resolve to nothing);
 * - node-postgres and its pool: the connection terminated, a connect or read timeout, no free connection in
 *   time, a client made unusable by an earlier connection error; our own deadline;
 * - SQLSTATE class 08 (connection exception), except 08P01 protocol violation (a client or proxy bug);
 * - 57P01 admin shutdown, 57P02 crash shutdown, 57P03 cannot connect now (starting up, in recovery), 57P05 idle
 *   session timeout: the server ended or refused the session;
 * - 53300 too many connections: the server is full, a retry gets in once others leave;
 * - 57014 query canceled: `statement_timeout` fired (the database did not answer in time: overloaded, or a
 *   statement waited on a lock) or an operator cancelled the backend; 55P03 lock not available (an operator's
 *   `lock_timeout`) likewise;
 * - 25006 read-only transaction: a write reached a standby, which is what a failover looks like while the
 *   primary's address still points at the demoted server;
 * - 40001 serialization failure and 40P01 deadlock that got past the transaction's own retries: contention,
 *   which a retry a moment later gets through.
 *
 * Everything else stays a 500: constraint and data errors (the code's bug), undefined objects and syntax
 * (a schema not migrated, a bug), authentication and a missing database (28xxx, 3D000: misconfiguration that no
 * retry fixes, and /readyz reports it), 53100 disk full / 53200 out of memory / class 58 / XX000 (the operator
 * has to act, and the log says why), and a pool or client used after `close()` (shutdown).
 */
export function isUnavailable(error: unknown, depth = 0): boolean {
  if (depth > 4 || !(error instanceof Error)) return false;
  if (error instanceof StoreUnavailableError || error instanceof DeadlineError) return true;
  if (error instanceof pg.DatabaseError) return isUnavailableState(error.code);
  const code = (error as NodeJS.ErrnoException).code;
  if (typeof code === 'string' && NETWORK_ERRORS.has(code)) return true;
  if (CONNECTION_MESSAGES.has(error.message)) return true;
  // Node reports a connect that tried several addresses (IPv6 and IPv4 of "localhost") as an AggregateError.
  if (error instanceof AggregateError && error.errors.some((e) => isUnavailable(e, depth + 1))) return true;
  return error.cause !== undefined && isUnavailable(error.cause, depth + 1);
}

const isUnavailableState = (code: string | undefined): boolean =>
  code !== undefined && ((code.startsWith('08') && code !== '08P01') || UNAVAILABLE_STATES.has(code));

const UNAVAILABLE_STATES = new Set([
  '57P01',
  '57P02',
  '57P03',
  '57P05',
  '53300',
  '57014',
  '55P03',
  '25006',
  '40001',
  '40P01',
]);

const NETWORK_ERRORS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/** node-postgres and pg-pool raise these as plain Errors, without a code. */
const CONNECTION_MESSAGES = new Set([
  'Connection terminated',
  'Connection terminated unexpectedly',
  'Connection terminated due to connection timeout',
  'timeout exceeded when trying to connect',
  'timeout expired',
  'Query read timeout',
  'Client has encountered a connection error and is not queryable',
]);

/** How long a metrics scrape waits for fresh queue counts before it takes the last ones (see latestStats). */
const STATS_WAIT_MS = 100;

type OutboxStats = Awaited<ReturnType<Store['outboxStats']>>;

/**
 * `outboxStats` for the metrics scrape, which must never stall on the database (CONTRACT §11). One count query
 * runs at a time, under the store's deadline. A scrape that starts one waits for it at most
 * {@link STATS_WAIT_MS}; a scrape that finds one still running, or comes after one failed, does not wait at
 * all (it starts the next in the background). Without fresh counts a scrape takes those of the last query
 * that finished, or fails when there are none, and the metrics keep their last values. So during an outage
 * one connection at most waits on these counts, and after it the gauges are fresh again a scrape later.
 */
export function latestStats(store: Store): () => Promise<OutboxStats> {
  let last: OutboxStats | undefined;
  let lastFailed = false;
  let running: Promise<OutboxStats> | undefined;
  const start = () => {
    const query = store.outboxStats();
    query.then(
      (stats) => {
        last = stats;
        lastFailed = false;
        running = undefined;
      },
      () => {
        lastFailed = true;
        running = undefined;
      },
    );
    return query;
  };
  return async () => {
    const waitMs = running === undefined && !lastFailed ? STATS_WAIT_MS : 0;
    running ??= start();
    if (waitMs > 0) {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<undefined>((resolve) => {
        timer = setTimeout(resolve, waitMs, undefined);
      });
      try {
        const fresh = await Promise.race([running, late]);
        if (fresh !== undefined) return fresh;
      } finally {
        clearTimeout(timer);
      }
    }
    if (last !== undefined) return last;
    throw new StoreUnavailableError('no queue counts yet: the database has not answered');
  };
}
