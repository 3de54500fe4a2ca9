import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openPostgresStore, type PostgresStoreOptions } from '../../src/store/postgres/store.js';
import type { Store } from '../../src/store/store.js';

/** Helpers of the PostgreSQL-only tests: stores on schemas of their own, and a side connection to inspect. */

export const POSTGRES_URL = process.env.WAYBILL_TEST_POSTGRES_URL ?? '';

export const freshSchema = (): string => `wb_test_${randomBytes(6).toString('hex')}`;

export function openStore(schema: string, extra: Partial<PostgresStoreOptions> = {}): Store {
  return openPostgresStore({ url: POSTGRES_URL, poolSize: 4, statementTimeoutMs: 30_000, schema, ...extra });
}

/** One statement on a connection of its own, in `schema` when one is named, outside any store: its rows. */
async function once<T extends pg.QueryResultRow>(
  schema: string | null,
  text: string,
  values: unknown[],
): Promise<T[]> {
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    if (schema !== null) await client.query(`SET search_path TO ${schema}`);
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}

/** Runs one query on a connection of its own (search_path = `schema`), outside any store. */
export const sql = <T extends pg.QueryResultRow>(schema: string, text: string, values: unknown[] = []) =>
  once<T>(schema, text, values);

export const dropSchema = async (schema: string): Promise<void> => {
  await sql(schema, `DROP SCHEMA IF EXISTS ${schema} CASCADE`);
};

/**
 * Runs one statement on a connection of its own to the test server, outside any transaction (CREATE DATABASE,
 * pg_stat_activity, pg_terminate_backend), and answers its rows.
 */
export const onServer = <T extends pg.QueryResultRow>(text: string, values: unknown[] = []) =>
  once<T>(null, text, values);

/**
 * A database of its own on the test server, `<prefix>_<random>`, for `waybill serve` processes (they work in
 * its public schema, so a schema of their own would not keep them apart): `create()` it, pass `url`, `drop()` it.
 */
export function scratchDatabase(prefix: string) {
  const name = `${prefix}_${randomBytes(5).toString('hex')}`;
  const url = new URL(POSTGRES_URL || 'postgres://unset');
  url.pathname = `/${name}`;
  return {
    name,
    url: url.toString(),
    create: async () => {
      await onServer(`CREATE DATABASE ${name}`);
    },
    drop: async () => {
      await onServer(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}

/** A query of a pool's connection, as `pg` takes it: a text or a config, and values. */
export type Query = (config: unknown, values?: unknown) => Promise<pg.QueryResult>;

/**
 * A pool of `max` connections on `schema` whose every query goes through `around`, given the connection's own
 * query (to send the statement, or others before it) and the caller's arguments.
 */
export function interceptingPool(
  schema: string,
  max: number,
  around: (query: Query, config: unknown, values?: unknown) => Promise<pg.QueryResult>,
): pg.Pool {
  const pool = new pg.Pool({ connectionString: POSTGRES_URL, max, options: `-c search_path=${schema}` });
  const wrapped = new WeakSet<pg.PoolClient>();
  const connect = pool.connect.bind(pool) as () => Promise<pg.PoolClient>;
  Object.assign(pool, {
    connect: async () => {
      const client = await connect();
      if (wrapped.has(client)) return client;
      wrapped.add(client);
      const query = client.query.bind(client) as Query;
      Object.assign(client, { query: (config: unknown, values?: unknown) => around(query, config, values) });
      return client;
    },
  });
  return pool;
}
