import { parseArgs } from 'node:util';
import { openDatabase } from './database.js';
import { configFlags, EXIT, UsageError } from './options.js';

export const PRUNE_USAGE =
  'waybill prune --older-than <days> [--database-url URL]   delete messages older than that';

const DAY_MS = 86_400_000;

export async function pruneCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { ...configFlags, 'older-than': { type: 'string' } },
    strict: true,
  });
  const days = Number(values['older-than']);
  if (values['older-than'] === undefined || !Number.isInteger(days) || days < 1) {
    throw new UsageError('--older-than takes a whole number of days, at least 1');
  }
  const { store } = await openDatabase(values);
  try {
    const cutoff = new Date(Date.now() - days * DAY_MS);
    const removed = await store.prune(cutoff);
    process.stdout.write(`removed ${removed} message record(s) created before ${cutoff.toISOString()}\n`);
    return EXIT.ok;
  } finally {
    await store.close();
  }
}
