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

/** Runs one query on a connection of its own (search_path = `schema`), outside any store. */
export async function sql<T extends pg.QueryResultRow>(
  schema: string,
  text: string,
  values: unknown[] = [],
): Promise<T[]> {
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    await client.query(`SET search_path TO ${schema}`);
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}

export const dropSchema = async (schema: string): Promise<void> => {
  await sql(schema, `DROP SCHEMA IF EXISTS ${schema} CASCADE`);
};
