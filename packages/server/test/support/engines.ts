import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openPostgresStore } from '../../src/store/postgres/store.js';
import { openSqliteStore } from '../../src/store/sqlite/store.js';
import type { Store } from '../../src/store/store.js';

/** One storage engine under test. */
export interface EngineFixture {
  name: string;
  /** A fresh, empty, migrated store of its own; the test closes it. */
  open(): Promise<Store>;
}

/**
 * Every engine the conformance suite runs against: SQLite always, PostgreSQL when
 * `WAYBILL_TEST_POSTGRES_URL` points at a database the tests may write to.
 */
export function engines(): EngineFixture[] {
  const list: EngineFixture[] = [
    {
      name: 'sqlite',
      async open() {
        const store = openSqliteStore({ path: ':memory:', cacheMb: 16 });
        await store.migrate();
        return store;
      },
    },
  ];

  const postgresUrl = process.env.WAYBILL_TEST_POSTGRES_URL;
  if (postgresUrl) {
    // ── PostgreSQL entry ──────────────────────────────────────────────────────────────────────────────
    // Each open() gets a schema of its own, dropped again by the store's close(), so runs (and files running
    // in parallel) never see each other's rows.
    list.push({
      name: 'postgres',
      async open() {
        const schema = `wb_test_${randomBytes(6).toString('hex')}`;
        const store = openPostgresStore({
          url: postgresUrl,
          poolSize: 4,
          statementTimeoutMs: 30_000,
          schema,
        });
        await store.migrate();
        return {
          ...store,
          async close() {
            await store.close();
            const admin = new pg.Client({ connectionString: postgresUrl });
            await admin.connect();
            try {
              await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
            } finally {
              await admin.end();
            }
          },
        };
      },
    });
  }

  return list;
}
