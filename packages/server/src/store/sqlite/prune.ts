import type Database from 'better-sqlite3';
import type { MaintenanceStore } from '../store.js';
import { preparer } from './database.js';
import { EXPIRED_RECORDS_WHERE } from './expired.js';
import type { Outbox } from './outbox.js';
import { pruneRollup, type RollupStatements } from './rollup.js';

/** Retention's own statement; the outbox's statements remove the events, deliveries and attempts. */
export function preparePrune(db: Database.Database) {
  const prepare = preparer(db);
  return {
    // Walks the history index one conversation at a time, so only the expired range of each is visited.
    messages: prepare<[number]>(`DELETE FROM messages WHERE ${EXPIRED_RECORDS_WHERE}`),
    // The carrier pairs of those records (they carry the record's created_at).
    carriers: prepare<[number]>('DELETE FROM carrier_ids WHERE created_at < ?'),
  };
}

export type PruneStatements = ReturnType<typeof preparePrune>;

/**
 * Retention on SQLite: removes every message record created before the cutoff, with its receipt events,
 * deliveries and their attempt logs and their counts in the review rollup, in one IMMEDIATE transaction;
 * returns how many records went.
 */
export function prune(
  db: Database.Database,
  sql: PruneStatements,
  outbox: Outbox,
  rollup: RollupStatements,
): MaintenanceStore['prune'] {
  const apply = db.transaction((cutoff: number) => {
    outbox.pruneAttempts.run(cutoff);
    outbox.pruneDeliveries.run(cutoff);
    outbox.pruneEvents.run(cutoff);
    sql.carriers.run(cutoff);
    pruneRollup(rollup, cutoff);
    return sql.messages.run(cutoff).changes;
  });
  return async (cutoff) => apply.immediate(cutoff.getTime());
}
