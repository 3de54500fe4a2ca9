import type { Config } from '../config.js';
import { openPostgresStore } from './postgres/store.js';
import { openSqliteStore } from './sqlite/store.js';
import type { Store } from './store.js';

/** Opens the store that DATABASE_URL names (not yet migrated). */
export function openStore(config: Readonly<Config>): Store {
  const url = config.databaseUrl;
  if (url.startsWith('sqlite:')) {
    return openSqliteStore({
      path: url.slice('sqlite:'.length),
      cacheMb: config.sqliteCacheMb,
      timeoutMs: config.dbTimeoutMs,
      walMaxMb: config.sqliteWalMaxMb,
    });
  }
  return openPostgresStore({
    url,
    readUrls: config.databaseReadUrl,
    readMaxLagMs: config.readMaxLagMs,
    poolSize: config.pgPoolSize,
    statementTimeoutMs: config.pgStatementTimeoutMs,
    transactionPooling: config.pgTransactionPooling,
    preparedStatements: config.pgPreparedStatements,
    timeoutMs: config.dbTimeoutMs,
  });
}
