import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { IMMEDIATE_READS, type Store, StoreUnavailableError, SUBSCRIPTIONS } from '../store.js';

/**
 * SQLite answers SQLITE_BUSY at once when another connection (another process: a second worker, `waybill
 * prune`, a backup) holds the write lock, because the store runs with `busy_timeout = 0`: SQLite's own busy
 * wait would sleep inside the synchronous call and freeze the whole event loop. Instead the attempt is
 * repeated here, asynchronously, with a growing pause, until the deadline; other requests run meanwhile.
 */
export async function retryWhileBusy<T>(work: () => T | Promise<T>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (let pause = 1; ; pause = Math.min(pause * 2, 50)) {
    try {
      return await work();
    } catch (error) {
      if (!isBusy(error)) throw error;
      if (Date.now() + pause > deadline) {
        throw new StoreUnavailableError(
          `the SQLite database stayed locked by another connection for ${timeoutMs} ms`,
          { cause: error },
        );
      }
    }
    await sleep(pause);
  }
}

/** SQLITE_BUSY and its extended codes (SQLITE_BUSY_SNAPSHOT, SQLITE_BUSY_RECOVERY, …), and SQLITE_LOCKED. */
export const isBusy = (error: unknown): boolean =>
  error instanceof Database.SqliteError && /^SQLITE_(BUSY|LOCKED)/.test(error.code);

/**
 * The store with every call retried while the database is busy. Each call's writes are one statement or one
 * IMMEDIATE transaction, so a busy attempt wrote nothing and repeating it is safe.
 */
export function retryingWhileBusy(store: Store, timeoutMs: number): Store {
  const guarded: Record<string, unknown> = { ...store };
  for (const [name, value] of Object.entries(store)) {
    if (
      typeof value !== 'function' ||
      name === 'close' ||
      SUBSCRIPTIONS.has(name) ||
      IMMEDIATE_READS.has(name)
    )
      continue;
    guarded[name] = (...args: unknown[]) =>
      retryWhileBusy(() => (value as (...a: unknown[]) => unknown).apply(store, args), timeoutMs);
  }
  return guarded as unknown as Store;
}
