// Where things are: the repository, bench/.data (generated datasets, server logs; git-ignored), and the built
// server (packages/server/dist). This is the one place the benchmarks name files of the built server: its CLI,
// which the harness starts as a process, and the modules the data generator calls in process. A file that moves
// in packages/server/src moves here only.
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const repoRoot = resolve(fileURLToPath(new URL('../..', import.meta.url)));
export const benchDir = join(repoRoot, 'bench');
export const dataDir = join(benchDir, '.data');
export const serverDist = join(repoRoot, 'packages/server/dist');

/** Where a dataset's manifest is: beside a SQLite file, or in bench/.data for a PostgreSQL database. */
export function manifestPathFor(databaseUrl) {
  if (databaseUrl.startsWith('sqlite:'))
    return `${resolve(databaseUrl.slice('sqlite:'.length))}.manifest.json`;
  const db = new URL(databaseUrl).pathname.replace(/^\//, '') || 'postgres';
  return join(dataDir, `pg-${db}.manifest.json`);
}

/** The `waybill` CLI of a build (`dist`: its packages/server/dist directory). */
export const cliMain = (dist = serverDist) => join(dist, 'cli/main.js');

const load = (path) => import(pathToFileURL(join(serverDist, path)).href);

/**
 * The layout of a generated dataset. A manifest of an older one is generated again: 2 stores each receipt
 * event's item as the store does since issue 19's fifth pass (store/event-item.ts), not as its whole JSON;
 * 3 keys SQLite's rows by the account's integer ref (store/sqlite/account-ref.ts, the sixth pass); 4 names a
 * SQLite record's conversation, and an event's record, by its ref (store/sqlite/record-refs.ts, the seventh
 * pass), with the records written in ingest order; 5 is SQLite's migration 11 (the eighth pass): events without
 * their record's time and the indexes by it and by their id, a conversation's history indexes by time alone; 6
 * is migration 12 (the ninth pass): no item stored for an event that is its record's current one.
 */
export const DATASET_VERSION = 6;

/**
 * What the data generator calls in the built server: schema, account, wire items and the stored form of an
 * event's item, record order, partitions, the review rollup's backfill.
 */
export async function serverModules() {
  const [config, open, accounts, wire, records, partitions, sqliteRollup, postgresRollup, eventItem] =
    await Promise.all([
      load('config.js'),
      load('store/open.js'),
      load('operations/accounts.js'),
      load('domain/wire.js'),
      load('domain/records.js'),
      load('store/postgres/partitions.js'),
      load('store/sqlite/rollup.js'),
      load('store/postgres/rollup.js'),
      load('store/event-item.js'),
    ]);
  return {
    loadConfig: config.loadConfig,
    openStore: open.openStore,
    createAccount: accounts.createAccount,
    drStatusOf: wire.drStatusOf,
    toDlrItem: wire.toDlrItem,
    storedItem: eventItem.storedItem,
    comparePositions: records.comparePositions,
    ensurePartitions: partitions.ensurePartitions,
    rollupBackfill: {
      sqlite: sqliteRollup.SQLITE_ROLLUP_BACKFILL,
      postgres: postgresRollup.POSTGRES_ROLLUP_BACKFILL,
    },
  };
}
