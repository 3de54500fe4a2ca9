import { type Pepper, resolvePepper } from '../auth/pepper.js';
import { type Config, loadConfig } from '../config.js';
import { openStore } from '../store/open.js';
import type { AppliedMigration, Store } from '../store/store.js';
import { configSource } from './options.js';

/**
 * Opens and migrates the configured database for commands that work on it directly; `applied` is what the
 * migration did (empty when the schema was up to date).
 */
export async function openDatabase(values: Record<string, unknown>): Promise<{
  config: Readonly<Config>;
  store: Store;
  pepper: Pepper;
  applied: AppliedMigration[];
}> {
  const config = loadConfig(configSource(process.env, values));
  const store = openStore(config);
  const applied = await store.migrate();
  return { config, store, pepper: resolvePepper(config), applied };
}
