import { parseArgs } from 'node:util';
import { openDatabase } from './database.js';
import { configFlags, EXIT } from './options.js';

export const MIGRATE_USAGE = 'waybill migrate [--database-url URL]   bring the database schema up to date';

export async function migrateCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: configFlags, strict: true });
  const { store } = await openDatabase(values);
  await store.close();
  process.stdout.write('schema is up to date\n');
  return EXIT.ok;
}
