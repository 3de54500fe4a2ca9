import pg from 'pg';
import { StoreUnavailableError } from '../store.js';
import { withArrayLiterals } from './array-params.js';
import { hostName, needsResolver, type PgHost, parseDatabaseUrl } from './connection-string.js';
import { callDeadline, DeadlineError, isUnavailable } from './deadline.js';
import { acceptable, HostResolver } from './host-resolver.js';

/** Options of one connection pool (the primary, the read replica, or maintenance). */
export interface PoolOptions {
  url: string;
  poolSize: number;
  statementTimeoutMs: number;
  schema: string;
  /**
   * The longest wait for a connection: to open a new one (TCP, TLS, authentication), or for one to come free
   * when the pool is full (pg's `connectionTimeoutMillis`). 0 waits forever.
   */
  connectTimeoutMs: number;
  /**
   * The longest wait for a statement's answer on the client (pg's `query_timeout`), whether or not the
   * server ever saw it; 0 waits forever. A connection whose statement timed out is destroyed (see
   * {@link checkout}; pool.query does the same).
   */
  queryTimeoutMs: number;
}

/**
 * TCP keepalive on every connection, first probe after this much idle time: a connection waiting for a long
 * statement's answer, or idle in the pool, notices a peer that vanished without a reset (a failed-over host,
 * a dropped NAT entry) instead of waiting on it for the kernel's retransmission timeout (~15 minutes).
 */
const KEEPALIVE_DELAY_MS = 10_000;

const INT8_OID = 20;
const NUMERIC_OID = 1700;

// Counts, sequences and money come back as JS numbers: every value Waybill keeps in them (ingest sequence,
// balances, prices) fits a double exactly, and the domain types them as number. Set per pool rather than on
// the global pg.types, so nothing else in the process is affected.
const typeParsers = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === INT8_OID || oid === NUMERIC_OID) return (value: string) => Number(value);
    return pg.types.getTypeParser(oid, format);
  },
} as pg.CustomTypesConfig;

/** A schema name is spliced into SQL, so only plain lower-case identifiers are accepted. */
export function checkSchemaName(schema: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
    throw new Error(`invalid PostgreSQL schema name ${JSON.stringify(schema)}: use [a-z_][a-z0-9_]*`);
  }
  return schema;
}

export const quoteIdent = (name: string): string => `"${name.replaceAll('"', '""')}"`;

/**
 * How the pool's connections reach PostgreSQL: directly (or through a session-mode pooler), or through a
 * transaction-mode pooler such as PgBouncer with `pool_mode = transaction`, where each transaction may run on
 * a different server connection and no session state follows the client.
 */
export interface ConnectionMode {
  /**
   * Through a transaction-mode pooler: no session `SET` on connect (it would stay on whichever server
   * connection ran it, for whichever client gets that one next, and be lost for this one). Instead the schema
   * must be the role's `search_path` (checked on every new connection, which fails with the fix when it is
   * not), and every transaction opens with `SET LOCAL search_path` and `SET LOCAL statement_timeout`.
   * @default false
   */
  transactionPooling?: boolean;
  /**
   * Named prepared statements (node-postgres `name:`): parsed and planned once per server connection. Off
   * strips the name from every query here, in the pool's client, so each runs as an unnamed statement: what
   * PgBouncer before 1.21 in transaction mode needs. @default true, false with `transactionPooling`
   */
  preparedStatements?: boolean;
}

/**
 * A pool whose every connection has `search_path` and `statement_timeout` set before it is handed out: the
 * pool awaits `onConnect`, and a connection whose setup failed is closed and fails its borrower instead of
 * serving queries against the wrong schema. With `transactionPooling` the settings come from the role and
 * each transaction instead (see {@link ConnectionMode}).
 */
export function createPool(options: PoolOptions & ConnectionMode): pg.Pool {
  const statementTimeoutMs = Math.max(0, Math.trunc(options.statementTimeoutMs));
  const transactionPooling = options.transactionPooling ?? false;
  const preparedStatements = options.preparedStatements ?? !transactionPooling;
  const setup = `SET search_path TO ${quoteIdent(options.schema)}; SET statement_timeout = ${statementTimeoutMs}`;
  // A URL listing several hosts (or asking for a writable one): each new connection goes to the host the
  // resolver picks, checked on arrival (see connection-string.ts).
  const target = parseDatabaseUrl(options.url);
  const resolver = needsResolver(target)
    ? new HostResolver(target, { probeTimeoutMs: options.connectTimeoutMs })
    : undefined;
  const pool = new pg.Pool({
    connectionString: resolver ? target.urlFor(target.hosts[0] as PgHost) : options.url,
    max: options.poolSize,
    types: typeParsers,
    application_name: 'waybill',
    connectionTimeoutMillis: options.connectTimeoutMs,
    ...(options.queryTimeoutMs > 0 ? { query_timeout: options.queryTimeoutMs } : {}),
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_DELAY_MS,
    Client: clientClass({
      resolver,
      preparedStatements,
      begin: transactionPooling
        ? `BEGIN; SET LOCAL search_path TO ${quoteIdent(options.schema)}; SET LOCAL statement_timeout = ${statementTimeoutMs}`
        : undefined,
    }),
    // The setup statement below is bounded by query_timeout like any other.
    onConnect: async (client) => {
      if (transactionPooling) await checkRoleSchema(client, options.schema);
      else await client.query(setup);
    },
  });
  // An idle connection dropped by the server emits here; without a listener that would crash the process.
  pool.on('error', () => {});
  return pool;
}

/**
 * The pool's client class, which rewrites each query on its way out, the one place every statement of the
 * store passes (pool.query runs on a client too): array parameters are written as literals here
 * (array-params.ts); without `preparedStatements` a query config loses its `name`; with `begin`, a bare `BEGIN`
 * becomes that (BEGIN and its SET LOCALs, one round trip).
 */
function clientClass(rewrite: {
  resolver: HostResolver | undefined;
  preparedStatements: boolean;
  begin: string | undefined;
}): typeof pg.Client {
  const { resolver, preparedStatements, begin } = rewrite;
  class RewritingClient extends pg.Client {
    #server: PgHost | undefined;

    // pg's overloads cannot be restated; the pool calls connect(callback), a caller may await connect().
    override connect(...args: unknown[]): never {
      if (resolver === undefined) return (super.connect as (...a: unknown[]) => never)(...args);
      const callback = args[0] as ((error?: Error) => void) | undefined;
      const connecting = (async () => {
        const server = await resolver.pick();
        this.#server = server;
        // The pool gave up waiting (connectionTimeoutMillis) while the hosts were probed: it has destroyed
        // this client's socket, and connecting it now would leave a connection no one will ever close.
        if (
          (this as unknown as { connection: { stream: { destroyed: boolean } } }).connection.stream.destroyed
        ) {
          throw new Error('timeout expired');
        }
        // Where pg connects to (and sends a cancel to) is read from these when it connects.
        const self = this as unknown as { host: string; port: number; connectionParameters: PgHost };
        self.host = server.host;
        self.port = server.port;
        self.connectionParameters.host = server.host;
        self.connectionParameters.port = server.port;
        this.on('error', () => resolver.forget(server));
        try {
          await (super.connect as unknown as () => Promise<void>)();
          const refused = await acceptable(this, resolver.target.targetSessionAttrs);
          if (refused !== null) {
            throw Object.assign(new Error(`${hostName(server)} ${refused}`), { code: 'ECONNREFUSED' });
          }
        } catch (error) {
          resolver.forget(server);
          throw error;
        }
      })();
      if (callback === undefined) return connecting as never;
      connecting.then(
        () => callback(),
        (error: Error) => callback(error),
      );
      return undefined as never;
    }

    // pg's overloads cannot be restated one by one; every form passes through with its arguments unchanged.
    override query(...args: unknown[]): never {
      let config = args[0];
      if (begin !== undefined && typeof config === 'string' && config.trim().toUpperCase() === 'BEGIN') {
        config = begin;
      } else if (
        !preparedStatements &&
        typeof config === 'object' &&
        config !== null &&
        'name' in config &&
        typeof (config as { submit?: unknown }).submit !== 'function'
      ) {
        const { name: _name, ...unnamed } = config as pg.QueryConfig;
        config = unnamed;
      }
      // Array parameters as literals written here (array-params.ts), in either place a query's values go.
      if (
        typeof config === 'object' &&
        config !== null &&
        Array.isArray((config as pg.QueryConfig).values) &&
        typeof (config as { submit?: unknown }).submit !== 'function'
      ) {
        config = { ...config, values: withArrayLiterals((config as pg.QueryConfig).values as unknown[]) };
      }
      if (Array.isArray(args[1])) args[1] = withArrayLiterals(args[1]);
      if (resolver === undefined)
        return (super.query as (...a: unknown[]) => never)(config, ...args.slice(1));
      // A server that turned read-only under us (a demoted primary): new connections look for another.
      const server = this.#server;
      const watch = (error: unknown) => {
        if (server && error instanceof pg.DatabaseError && error.code === READ_ONLY_TRANSACTION)
          resolver.forget(server);
      };
      const rest = args.slice(1);
      const callback = rest.at(-1);
      if (typeof callback === 'function') {
        rest[rest.length - 1] = (error: unknown, value: unknown) => {
          watch(error);
          callback(error, value);
        };
      }
      const result = (super.query as (...a: unknown[]) => unknown)(config, ...rest);
      if (result instanceof Promise) result.catch(watch);
      return result as never;
    }
  }
  return RewritingClient as unknown as typeof pg.Client;
}

/**
 * Behind a transaction-mode pooler the schema comes from the role's `search_path` (`ALTER ROLE … IN DATABASE
 * … SET search_path = …`), as a session `SET` cannot follow the client: a connection whose search path would
 * name another schema is refused with the statement that fixes it, rather than read or write another schema's
 * tables.
 */
async function checkRoleSchema(client: pg.ClientBase, schema: string): Promise<void> {
  const result = await client.query<{ path: string; current: string | null; role: string; db: string }>(
    "SELECT current_setting('search_path') AS path, current_schema() AS current, current_user AS role, current_database() AS db",
  );
  const row = result.rows[0];
  if (row === undefined) throw new Error('the search_path check returned no row');
  const first = row.path.split(',')[0]?.trim() ?? '';
  const unquoted = first.startsWith('"') ? first.slice(1, -1).replaceAll('""', '"') : first;
  const named = unquoted === '$user' ? row.role : unquoted;
  if (row.current === schema || named === schema) return;
  throw new Error(
    `WAYBILL_PG_TRANSACTION_POOLING is on but the role's search_path is ${JSON.stringify(row.path)}, not the schema ${JSON.stringify(schema)}: ` +
      `run ALTER ROLE ${quoteIdent(row.role)} IN DATABASE ${quoteIdent(row.db)} SET search_path = ${quoteIdent(schema)} (see docs/operations.md)`,
  );
}

const SERIALIZATION_FAILURE = '40001';
const READ_ONLY_TRANSACTION = '25006';
const DEADLOCK_DETECTED = '40P01';
const UNIQUE_VIOLATION = '23505';

export const isUniqueViolation = (error: unknown, constraint?: string): boolean =>
  error instanceof pg.DatabaseError &&
  error.code === UNIQUE_VIOLATION &&
  (constraint === undefined || error.constraint === constraint);

/**
 * Runs an insert of rows that the batch creates, with no ON CONFLICT clause: whether each is new is known, and a
 * plain insert skips the probe and the speculative token that ON CONFLICT adds to every row (docs/benchmarks.md,
 * "Twelfth pass"). Resolves false when one existed after all (a unique violation: a concurrent writer created it
 * after the batch looked). The transaction is then aborted: the caller must run nothing more in it and return
 * {@link RETRY}.
 */
export async function insertedAll(insert: Promise<unknown>): Promise<boolean> {
  try {
    await insert;
    return true;
  } catch (error) {
    if (isUniqueViolation(error)) return false;
    throw error;
  }
}

/** Returned by a transaction body to ask for a fresh attempt (a concurrent writer got there first). */
export const RETRY: unique symbol = Symbol('retry');

/** What a transaction body decides: commit or roll back, and the value to return either way. */
export interface TransactionResult<T> {
  commit: boolean;
  value: T;
}

const MAX_ATTEMPTS = 8;

/**
 * A connection taken from `pool` for a series of statements, bounded by the deadline of the store call it
 * runs in (see deadline.ts): when the deadline passes, its socket is destroyed, which fails the statement in
 * flight at once, and every later one. `release` hands it back, or destroys it after a failure that may have
 * left its protocol state unknown.
 */
export interface Checkout {
  client: pg.PoolClient;
  /** The call's deadline passed and the connection was destroyed. */
  readonly expired: boolean;
  /** Back to the pool; with an error, the connection is destroyed instead. */
  release(error?: Error): void;
}

/** A checked-out connection that loses its socket emits 'error'; without a listener the process would crash. */
const ignore = () => {};

export async function checkout(pool: pg.Pool): Promise<Checkout> {
  const deadline = callDeadline.getStore();
  const client = await pool.connect();
  client.on('error', ignore);
  if (deadline !== undefined && Date.now() >= deadline) {
    // The wait for a free connection used up the deadline; the connection itself is fine.
    client.off('error', ignore);
    client.release();
    throw new DeadlineError('the deadline passed while waiting for a database connection');
  }
  let expired = false;
  const timer =
    deadline === undefined
      ? undefined
      : setTimeout(() => {
          expired = true;
          client.connection.stream.destroy();
        }, deadline - Date.now());
  let released = false;
  return {
    client,
    get expired() {
      return expired;
    },
    release(error) {
      if (released) return;
      released = true;
      clearTimeout(timer);
      // A destroyed connection may still report its end: keep the listener on a connection that is going away.
      if (!error && !expired) client.off('error', ignore);
      client.release(error ?? (expired ? new DeadlineError('deadline passed') : undefined));
    },
  };
}

/**
 * Runs `work` on one connection of `pool`, bounded like {@link checkout}. After any failure the connection is
 * destroyed rather than returned to the pool: whatever the failure, a connection that is not known to be idle
 * and outside a transaction must not serve the next caller.
 */
export async function withClient<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const taken = await checkout(pool);
  try {
    const value = await work(taken.client);
    taken.release();
    return value;
  } catch (error) {
    taken.release(error instanceof Error ? error : new Error(String(error)));
    if (taken.expired)
      throw new DeadlineError('the database did not answer by the deadline', { cause: error });
    throw error;
  }
}

/**
 * Runs `work` in a READ COMMITTED transaction on one connection of `pool`. The body returns whether to commit;
 * it may return {@link RETRY} when it lost a race (an `ON CONFLICT DO NOTHING` that did nothing), and
 * serialization failures and deadlocks are retried too, each time from scratch with a short random pause. The
 * body is told which attempt it runs (1 first), so that a retry can take a stronger lock than a first attempt.
 *
 * Inside a store call (see deadline.ts) the whole of it, every attempt and every statement and the wait for a
 * connection included, ends by the call's deadline: the connection is destroyed then, so the server rolls the
 * transaction back (unless its COMMIT had already arrived), and no further attempt starts. A failure that is
 * not the server's own answer (a timeout, a lost connection) destroys the connection without trying ROLLBACK
 * on it: that ROLLBACK could only wait for the same dead network.
 */
export async function inTransaction<T>(
  pool: pg.Pool,
  work: (client: pg.PoolClient, attempt: number) => Promise<TransactionResult<T> | typeof RETRY>,
): Promise<T> {
  const deadline = callDeadline.getStore();
  for (let attempt = 1; ; attempt++) {
    const taken = await checkout(pool);
    const { client } = taken;
    let broken: Error | undefined;
    try {
      await client.query('BEGIN');
      const result = await work(client, attempt);
      if (result === RETRY) {
        await client.query('ROLLBACK');
      } else {
        await client.query(result.commit ? 'COMMIT' : 'ROLLBACK');
        return result.value;
      }
    } catch (error) {
      if (taken.expired) {
        broken = error as Error;
        throw new DeadlineError('the transaction did not finish by the deadline', { cause: error });
      }
      if (error instanceof pg.DatabaseError || !isUnavailable(error)) {
        // The server answered (or the body threw between statements): the connection is in sync.
        try {
          await client.query('ROLLBACK');
        } catch (rollbackError) {
          broken = rollbackError as Error;
        }
        // A server that turned read-only (a demoted primary) will refuse every write: not back to the pool.
        if (error instanceof pg.DatabaseError && error.code === READ_ONLY_TRANSACTION) broken ??= error;
      } else {
        broken = error as Error;
      }
      const code = error instanceof pg.DatabaseError ? error.code : undefined;
      if ((code !== SERIALIZATION_FAILURE && code !== DEADLOCK_DETECTED) || attempt >= MAX_ATTEMPTS)
        throw error;
    } finally {
      // Passing an error destroys the connection rather than returning a half-open transaction to the pool.
      taken.release(broken);
    }
    // Contention that outlasted the retries is answered as the rule for 40001 and 40P01 says (deadline.ts
    // isUnavailable): 503 with Retry-After, which a client's retry a moment later gets through; not a 500.
    if (attempt >= MAX_ATTEMPTS)
      throw new StoreUnavailableError(`the transaction was still contended after ${MAX_ATTEMPTS} attempts`);
    const pause = Math.random() * 10 * attempt;
    if (deadline !== undefined && Date.now() + pause >= deadline) {
      throw new DeadlineError('the transaction was still contended at the deadline');
    }
    await new Promise((resolve) => setTimeout(resolve, pause));
  }
}
