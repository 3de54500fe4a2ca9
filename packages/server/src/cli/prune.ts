import { parseArgs } from 'node:util';
import { openDatabase } from './database.js';
import { configFlags, DATABASE_HELP, EXIT, UsageError } from './options.js';
import { startProgress } from './progress.js';

export const PRUNE_USAGE =
  'waybill prune --older-than <days> [--database-url URL]   delete messages older than that';

export const PRUNE_HELP = `Usage: waybill prune --older-than <days> [--database-url URL]

Deletes the message records created more than <days> days ago, with their receipt events, callback deliveries
and attempt logs, and prints how many records went (PostgreSQL drops whole month partitions). On a terminal a
"pruning… N s" line shows it is still at work.

  --older-than DAYS   a whole number of days, at least 1 (required)
${DATABASE_HELP}
`;

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
    const progress = startProgress('pruning');
    let removed: number;
    try {
      removed = await store.prune(cutoff);
    } finally {
      await progress.stop();
    }
    process.stdout.write(`removed ${removed} message record(s) created before ${cutoff.toISOString()}\n`);
    return EXIT.ok;
  } finally {
    await store.close();
  }
}
