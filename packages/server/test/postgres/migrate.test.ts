import { afterEach, describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../../src/store/postgres/migrations.js';
import type { Store } from '../../src/store/store.js';
import { dropSchema, freshSchema, openStore, POSTGRES_URL, sql } from './harness.js';

describe.skipIf(!POSTGRES_URL)('PostgreSQL migrate()', () => {
  const schema = freshSchema();
  const stores: Store[] = [];
  afterEach(async () => {
    await Promise.all(stores.splice(0).map((s) => s.close()));
    await dropSchema(schema);
  });

  it('is safe when several instances start at once on a schema that does not exist yet', async () => {
    stores.push(...Array.from({ length: 4 }, () => openStore(schema)));
    const reports = await Promise.all(stores.map((s) => s.migrate()));

    const applied = await sql<{ version: number }>(schema, 'SELECT version FROM schema_migrations');
    const versions = MIGRATIONS.map((m) => m.version);
    expect(applied.map((r) => r.version).sort((a, b) => a - b)).toEqual(versions);
    // Each step is reported once, by the instance that applied it.
    const reported = reports.flat().map((m) => m.version);
    expect(reported.sort((a, b) => a - b)).toEqual(versions);
    expect(reports.flat().find((m) => m.version === 1)?.name).toBe('initial schema');
    // Running it again is a no-op, and the store works.
    expect(await stores[0]?.migrate()).toEqual([]);
    await stores[1]?.ping();
    expect(await stores[1]?.hasAccounts()).toBe(false);
  });

  it('leads every primary key and index with account_id, but those on accounts, intake routes, bind leases, carrier ids, console sessions and the pepper', async () => {
    stores.push(openStore(schema));
    await stores[0]?.migrate();
    const indexes = await sql<{ table: string; index: string; first: string }>(
      schema,
      `SELECT t.relname AS table, i.relname AS index, a.attname AS first
       FROM pg_index x
       JOIN pg_class i ON i.oid = x.indexrelid
       JOIN pg_class t ON t.oid = x.indrelid
       JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = x.indkey[0]
       WHERE t.relnamespace = $1::regnamespace AND t.relname <> 'schema_migrations'`,
      [schema],
    );
    expect(indexes.length).toBeGreaterThan(5);
    const offenders = indexes.filter(
      (r) =>
        r.first !== 'account_id' &&
        !(r.table === 'accounts' && (r.first === 'id' || r.first === 'key')) &&
        // One row for the whole database: the fingerprint of its pepper.
        r.table !== 'pepper_fingerprint' &&
        // Intake routes (and what they could not read) are the operator's, of no one account (CONTRACT §12).
        r.table !== 'intake_routes' &&
        r.table !== 'intake_garbled' &&
        // A bind's lease belongs to its route, of no one account.
        r.table !== 'bind_leases' &&
        // A console session is found by its token's hash before anyone knows whose it is (the operator's has no
        // account), and expired ones are swept by time (CONTRACT §13).
        r.table !== 'console_sessions' &&
        // A route serves several accounts and its carrier ids are its SMSC's: a pair is found by route, and a
        // receipt parked under it has no account until a recipient claims the pair (CONTRACT §12).
        ![
          'carrier_ids_pkey',
          'parked_receipts_pkey',
          'parked_receipts_carrier',
          'parked_receipts_carrier_age',
        ].includes(r.index),
    );
    expect(offenders).toEqual([]);
  });

  it('keeps the lease out of every index of callback deliveries, with room on their pages, so a lease updates in place', async () => {
    // A lease (outbox.ts) sets lease and lease_until: with no index naming either, in its columns or its
    // predicate, and free space on the row's page, PostgreSQL writes the new version beside the old one without
    // an entry in any index (a HOT update). An index on them makes every lease cost one entry per index.
    stores.push(openStore(schema));
    await stores[0]?.migrate();
    const indexes = await sql<{ index: string; definition: string }>(
      schema,
      `SELECT i.relname AS index, pg_get_indexdef(x.indexrelid) AS definition
       FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
       WHERE x.indrelid = 'deliveries'::regclass`,
    );
    expect(indexes.map((r) => r.index)).toContain('deliveries_recipient');
    expect(indexes.filter((r) => /\blease/.test(r.definition))).toEqual([]);
    const [table] = await sql<{ options: string[] | null }>(
      schema,
      `SELECT reloptions AS options FROM pg_class WHERE oid = 'deliveries'::regclass`,
    );
    expect(table?.options).toContain('fillfactor=85');
  });
});
