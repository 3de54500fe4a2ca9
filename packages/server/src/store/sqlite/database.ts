import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database, { type RunResult } from 'better-sqlite3';
import type { BatchOutcome } from '../../domain/ingest/precedence.js';

/**
 * The SQLite connection and what every module of this engine shares about it: how it is opened, the type of
 * a prepared statement, and the transaction shape of an ingest batch.
 */

/**
 * The part of a prepared statement the store uses, under a name of our own: better-sqlite3's types keep theirs
 * in a namespace that declaration output cannot name.
 */
export interface Prepared<P extends unknown[], R> {
  run(...params: P): RunResult;
  get(...params: P): R | undefined;
  all(...params: P): R[];
}

/** `db.prepare`, typed as {@link Prepared}. Each module prepares its statements once, when the store opens. */
export const preparer =
  (db: Database.Database) =>
  <P extends unknown[] = [], R = unknown>(sql: string): Prepared<P, R> =>
    db.prepare<P, R>(sql);

/**
 * Opens the database file (its directory is created when missing) or `:memory:`, with the page cache and
 * memory map sized to `cacheMb`, WAL, and foreign keys on.
 *
 * Durability: `synchronous = FULL` fsyncs the write-ahead log at every commit, so a transaction that returned
 * is on disk and survives a power cut, not only a crash of the process (NORMAL leaves the fsync to the next
 * checkpoint). This connection never checkpoints (`wal_autocheckpoint = 0`): the copy of the log into the
 * database file, with its random writes and the database file's fsync, is the checkpointer's, on a thread of
 * its own (checkpointer.ts). A commit therefore costs one sequential append and one fsync.
 */
export function openDatabase(path: string, cacheMb: number): Database.Database {
  const inMemory = path === ':memory:';
  if (!inMemory) mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path, { timeout: 5000 });
  if (!inMemory) {
    db.pragma('journal_mode = WAL');
    db.pragma(`mmap_size = ${Math.floor(cacheMb * 1024 * 1024)}`);
    db.pragma('wal_autocheckpoint = 0');
  }
  db.pragma('synchronous = FULL');
  db.pragma('busy_timeout = 5000');
  db.pragma('foreign_keys = ON');
  // A negative cache_size is in KiB rather than pages.
  db.pragma(`cache_size = ${-Math.floor(cacheMb * 1024)}`);
  return db;
}

/**
 * Thrown inside a batch's transaction to roll it back and answer `outcome` instead: the batch's item errors,
 * or a dry run that passed.
 */
export class RollBack<T> extends Error {
  readonly outcome: BatchOutcome<T>;
  constructor(outcome: BatchOutcome<T>) {
    super('batch rolled back');
    this.outcome = outcome;
  }
}

/** Runs a batch's transaction; one rolled back by {@link RollBack} answers its outcome. */
export function runBatch<T>(apply: () => T): BatchOutcome<T> {
  try {
    return { ok: true, value: apply() };
  } catch (error) {
    if (error instanceof RollBack) return error.outcome as BatchOutcome<T>;
    throw error;
  }
}

/**
 * Runs `commit` (a transaction of the relay's own bookkeeping: a claim, a lease released, attempt results) with
 * `synchronous = NORMAL`: committed to the log without waiting for its fsync, which cost the relay a fifth of
 * its time on the event loop (docs/benchmarks.md, "Second pass, per-row cost and the relay"). What that gives
 * up, and why it is safe:
 * - A crash of the process loses nothing: the log was written, and the system keeps it.
 * - A power cut can lose the last such commits, those after the last fsync. The log is replayed in order up to
 *   its first missing frame, so what survives is a prefix: no later write survives without an earlier one.
 *   Every receipt and message commit (`FULL`) fsyncs the log, and with it every bookkeeping commit before it.
 *   So what can be lost is only attempt results and leases newer than the newest receipt: their deliveries are
 *   sent again (at least once, with the same webhook-id), never an older state after a newer one, since the
 *   receipt that superseded a delivery is on disk with everything before it.
 * Receipts, messages and every operator write keep `FULL`.
 */
export function relaxedCommits(db: Database.Database): <T>(commit: () => T) => T {
  const normal = db.prepare('PRAGMA synchronous = NORMAL');
  const full = db.prepare('PRAGMA synchronous = FULL');
  return (commit) => {
    normal.run();
    try {
      return commit();
    } finally {
      full.run();
    }
  };
}
