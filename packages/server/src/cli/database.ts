import { type Pepper, PepperRefusedError, resolvePepper } from '../auth/pepper.js';
import { type Config, loadConfig } from '../config.js';
import { openStore } from '../store/open.js';
import type { AppliedMigration, Store } from '../store/store.js';
import { configSource, StartupError } from './options.js';

/**
 * Opens and migrates the configured database for commands that work on it directly; `applied` is what the
 * migration did (empty when the schema was up to date). `pepper()` resolves and checks the server pepper for
 * the commands that need it (creating an account, rotating a secret): `migrate` and `prune` never touch it, so
 * running them from anywhere neither needs the pepper nor writes one.
 */
export async function openDatabase(values: Record<string, unknown>): Promise<{
  config: Readonly<Config>;
  store: Store;
  pepper: () => Promise<Pepper>;
  applied: AppliedMigration[];
}> {
  const config = loadConfig(configSource(process.env, values));
  const store = openStore(config);
  const applied = await store.migrate();
  return { config, store, pepper: () => checkedPepper(config, store), applied };
}

/** resolvePepper for a command: a pepper the database refuses is a start that cannot succeed (exit 3). */
export async function checkedPepper(config: Readonly<Config>, store: Store): Promise<Pepper> {
  try {
    return await resolvePepper(config, store);
  } catch (error) {
    if (error instanceof PepperRefusedError) throw new StartupError(error.message);
    throw error;
  }
}
