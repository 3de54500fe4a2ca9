import { parseArgs } from 'node:util';
import { PruneGaveUpError, type PruneProgress } from '../store/store.js';
import { openDatabase } from './database.js';
import { configFlags, DATABASE_HELP, EXIT, UsageError } from './options.js';
import { type Progress, startProgress } from './progress.js';

export const PRUNE_USAGE =
  'waybill prune --older-than <days> [--database-url URL]   delete messages older than that';

export const PRUNE_HELP = `Usage: waybill prune --older-than <days> [--database-url URL]

Deletes the message records created more than <days> days ago, with their receipt events, callback deliveries
and attempt logs, and prints how many records went (PostgreSQL drops whole month partitions). On a terminal a
"pruning… N s" line shows it is still at work.

On PostgreSQL it never makes the service wait on it for long: when another session (a long query, pg_dump)
holds what it must remove, it steps back and tries again, saying so on stderr, and after 10 minutes of that it
gives up (exit 3); run it again later to finish.

  --older-than DAYS   a whole number of days, at least 1 (required)
${DATABASE_HELP}
`;

const DAY_MS = 86_400_000;
/** Piped or redirected, a wait is reported when it starts and then at most this often. */
const WAIT_REPORT_EVERY_MS = 10_000;

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
    let removed: number | PruneGaveUpError;
    try {
      removed = await store.prune(cutoff, { onProgress: reporter(progress) });
    } catch (error) {
      if (!(error instanceof PruneGaveUpError)) throw error;
      removed = error;
    } finally {
      await progress.stop();
    }
    if (removed instanceof PruneGaveUpError) {
      // Busy rather than broken: the exit code of a database that cannot be reached now, so try again later.
      process.stderr.write(`waybill prune: ${removed.message}\n`);
      return EXIT.unreachable;
    }
    process.stdout.write(`removed ${removed} message record(s) created before ${cutoff.toISOString()}\n`);
    return EXIT.ok;
  } finally {
    await store.close();
  }
}

/**
 * Prune's progress: on a terminal, in the ticking line; otherwise only the waits, as lines on stderr (a cron
 * log then says why a run took long), the first of each step at once and later ones at most every 10 s.
 */
function reporter(progress: Progress): (event: PruneProgress) => void {
  const terminal = process.stderr.isTTY === true;
  let lastTarget: string | undefined;
  let lastReport = 0;
  return (event) => {
    if (event.kind === 'removed') {
      if (terminal) progress.update(`pruning: ${event.total} record(s) removed`);
      return;
    }
    const text =
      `${event.target} is locked by another session; waited ${seconds(event.waitedMs)} so far, ` +
      `trying again in ${seconds(event.retryInMs)}`;
    if (terminal) {
      progress.update(`pruning: ${text}`);
      return;
    }
    const now = Date.now();
    if (event.target === lastTarget && now - lastReport < WAIT_REPORT_EVERY_MS) return;
    lastTarget = event.target;
    lastReport = now;
    process.stderr.write(`waybill prune: ${text}\n`);
  };
}

const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
