import pg from 'pg';

/** Options of one connection pool (the primary, or the read replica). */
export interface PoolOptions {
  url: string;
  poolSize: number;
  statementTimeoutMs: number;
  schema: string;
}

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
 * A pool whose every connection has `search_path` and `statement_timeout` set before it is handed out: the
 * pool awaits `onConnect`, and a connection whose setup failed is closed and fails its borrower instead of
 * serving queries against the wrong schema.
 *
 * Behind PgBouncer in transaction mode a session `SET` does not follow the client from one server connection
 * to the next: there, set both on the role instead (`ALTER ROLE waybill SET search_path = …`), see
 * docs/operations.md.
 */
export function createPool(options: PoolOptions): pg.Pool {
  const setup = `SET search_path TO ${quoteIdent(options.schema)}; SET statement_timeout = ${Math.max(0, Math.trunc(options.statementTimeoutMs))}`;
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.poolSize,
    types: typeParsers,
    application_name: 'waybill',
    onConnect: async (client) => {
      await client.query(setup);
    },
  });
  // An idle connection dropped by the server emits here; without a listener that would crash the process.
  pool.on('error', () => {});
  return pool;
}

const SERIALIZATION_FAILURE = '40001';
const DEADLOCK_DETECTED = '40P01';
const UNIQUE_VIOLATION = '23505';

export const isUniqueViolation = (error: unknown, constraint?: string): boolean =>
  error instanceof pg.DatabaseError &&
  error.code === UNIQUE_VIOLATION &&
  (constraint === undefined || error.constraint === constraint);

/** Returned by a transaction body to ask for a fresh attempt (a concurrent writer got there first). */
export const RETRY: unique symbol = Symbol('retry');

/** What a transaction body decides: commit or roll back, and the value to return either way. */
export interface TransactionResult<T> {
  commit: boolean;
  value: T;
}

const MAX_ATTEMPTS = 8;

/**
 * Runs `work` in a READ COMMITTED transaction on one connection of `pool`. The body returns whether to commit;
 * it may return {@link RETRY} when it lost a race (an `ON CONFLICT DO NOTHING` that did nothing), and
 * serialization failures and deadlocks are retried too, each time from scratch with a short random pause.
 */
export async function inTransaction<T>(
  pool: pg.Pool,
  work: (client: pg.PoolClient) => Promise<TransactionResult<T> | typeof RETRY>,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const client = await pool.connect();
    let broken: Error | undefined;
    try {
      await client.query('BEGIN');
      const result = await work(client);
      if (result === RETRY) {
        await client.query('ROLLBACK');
      } else {
        await client.query(result.commit ? 'COMMIT' : 'ROLLBACK');
        return result.value;
      }
    } catch (error) {
      try {
        await client.query('ROLLBACK');
      } catch (rollbackError) {
        broken = rollbackError as Error;
      }
      const code = error instanceof pg.DatabaseError ? error.code : undefined;
      if ((code !== SERIALIZATION_FAILURE && code !== DEADLOCK_DETECTED) || attempt >= MAX_ATTEMPTS)
        throw error;
    } finally {
      // Passing an error destroys the connection rather than returning a half-open transaction to the pool.
      client.release(broken);
    }
    if (attempt >= MAX_ATTEMPTS)
      throw new Error(`transaction still contended after ${MAX_ATTEMPTS} attempts`);
    await new Promise((resolve) => setTimeout(resolve, Math.random() * 10 * attempt));
  }
}
