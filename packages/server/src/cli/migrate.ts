import { parseArgs } from 'node:util';
import type { AppliedMigration } from '../store/store.js';
import { openDatabase } from './database.js';
import { configFlags, DATABASE_HELP, EXIT } from './options.js';

export const MIGRATE_USAGE = 'waybill migrate [--database-url URL]   bring the database schema up to date';

export const MIGRATE_HELP = `Usage: waybill migrate [--database-url URL]

Brings the database schema up to date and prints the migrations it applied, or "schema is up to date" when
there were none (\`waybill serve\` migrates too as it starts). Safe to run again, and from several processes
at once.

${DATABASE_HELP}
`;

export async function migrateCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: configFlags, strict: true });
  const { store, applied } = await openDatabase(values);
  await store.close();
  process.stdout.write(describeMigrations(applied));
  return EXIT.ok;
}

/** `applied 2 migrations:` and one line per migration, or `schema is up to date` when none was needed. */
export function describeMigrations(applied: readonly AppliedMigration[]): string {
  if (applied.length === 0) return 'schema is up to date\n';
  const count = `${applied.length} migration${applied.length === 1 ? '' : 's'}`;
  return `applied ${count}:\n${applied.map((m) => `  ${m.version}  ${m.name}\n`).join('')}`;
}
