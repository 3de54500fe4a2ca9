import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from 'node:worker_threads';
import { type Store, SUBSCRIPTIONS } from '../store.js';
import type { CheckpointReport, CheckpointSettings } from './checkpoint-worker.js';
import { READ_ONLY } from './file-guard.js';

/**
 * Checkpoints off the request path. The store's connection never checkpoints (`wal_autocheckpoint = 0`): a
 * commit only appends to the write-ahead log and fsyncs it. Copying the log into the database file — random
 * writes, and an fsync of the database file — happens on a thread of its own (checkpoint-worker.ts) with its
 * own connection, while the event loop goes on serving.
 */

export interface CheckpointerOptions {
  /** The database file. */
  path: string;
  /** The bound on the write-ahead log, in MiB: past it a checkpoint that holds writes back empties it. */
  walMaxMb: number;
  /** Pause between checkpoints. @default 200 */
  intervalMs?: number;
  /** How long a resetting checkpoint waits for the write lock and the readers. @default 30000 */
  waitMs?: number;
  /** Each checkpoint that reset the log, and each failure. @default a process warning per new failure */
  onReport?: (report: CheckpointReport) => void;
}

export interface Checkpointer {
  /**
   * Stops the thread: it closes its connection at once when idle, or after the checkpoint it is running.
   * Resolves by `deadlineMs` whatever happens: a thread still inside a checkpoint then is terminated (the
   * process may exit under it: a checkpoint cut short is harmless, the log stays valid until it is complete).
   */
  stop(deadlineMs?: number): Promise<void>;
  /** Resolves when the thread has exited. */
  readonly exited: Promise<void>;
  /**
   * `undefined` at once, unless a resetting checkpoint (a RESTART of a caught-up log, a TRUNCATE past the
   * bound) is waiting for the write lock or running: then a promise that resolves when it is done, or after
   * `timeoutMs` at most. Every write of the store awaits it before it begins.
   */
  writable(timeoutMs: number): Promise<void> | undefined;
}

// The compiled store runs the compiled thread; under the tests (TypeScript sources) Node strips the types.
const WORKER_FILE = new URL(
  import.meta.url.endsWith('.ts') ? './checkpoint-worker.ts' : './checkpoint-worker.js',
  import.meta.url,
);

/** After a thread failed as a whole (it could not open the database, say), the pause before the next one. */
const RESTART_PAUSE_MS = 1000;

/**
 * The log size at which a caught-up log is started again (or a quarter of the bound, when smaller): large
 * enough that the pause is rare, small enough that the log stays in the file cache and far from the bound.
 */
const RESTART_MB = 64;

/** How often a write held back by a resetting checkpoint looks whether it is done. */
const WRITABLE_POLL_MS = 5;

/** The default reporting: a process warning per failure, not repeated every tick until the log is reset again. */
function warnOnce(): (report: CheckpointReport) => void {
  let failing: string | null = null;
  return (report) => {
    if (report.type !== 'error') {
      failing = null;
    } else if (report.message !== failing) {
      failing = report.message;
      process.emitWarning(`SQLite checkpoint failed: ${report.message}`, {
        code: 'WAYBILL_SQLITE_CHECKPOINT',
      });
    }
  };
}

/**
 * Starts the checkpointer of the database at `options.path`. The thread never keeps the process alive on its
 * own (a CLI command that forgets to close the store still exits); `stop()` ends it.
 *
 * @example
 * const checkpointer = startCheckpointer({ path: './data/waybill.db', walMaxMb: 512 });
 * // …
 * await checkpointer.stop();
 */
export function startCheckpointer(options: CheckpointerOptions): Checkpointer {
  const holdWrites = new Int32Array(new SharedArrayBuffer(4));
  const settings: CheckpointSettings = {
    path: options.path,
    holdWrites: holdWrites.buffer as SharedArrayBuffer,
    walMaxBytes: options.walMaxMb * 1024 * 1024,
    restartBytes: Math.min(RESTART_MB, options.walMaxMb / 4) * 1024 * 1024,
    intervalMs: options.intervalMs ?? 200,
    waitMs: options.waitMs ?? 30_000,
  };
  const onReport = options.onReport ?? warnOnce();
  let stopping = false;
  let worker: Worker;
  let resolveExited: () => void = () => {};
  const exited = new Promise<void>((resolve) => {
    resolveExited = resolve;
  });

  const spawn = () => {
    worker = new Worker(WORKER_FILE, { workerData: settings });
    worker.unref();
    worker.on('message', (report: CheckpointReport) => onReport(report));
    worker.on('error', (error) => onReport({ type: 'error', message: error.message }));
    worker.once('exit', () => {
      if (stopping) {
        resolveExited();
        return;
      }
      // An unexpected end (the thread failed): without it the log would grow without bound.
      void sleep(RESTART_PAUSE_MS, undefined, { ref: false }).then(() => {
        if (stopping) resolveExited();
        else spawn();
      });
    });
  };
  spawn();

  return {
    exited,
    writable(timeoutMs) {
      if (Atomics.load(holdWrites, 0) === 0) return undefined;
      const deadline = Date.now() + timeoutMs;
      return (async () => {
        while (Atomics.load(holdWrites, 0) !== 0 && Date.now() < deadline) await sleep(WRITABLE_POLL_MS);
      })();
    },
    async stop(deadlineMs = 5000) {
      if (!stopping) {
        stopping = true;
        worker.postMessage('stop');
      }
      // Held in the event loop until it ends or the deadline passes: a caller awaiting this (a CLI command
      // closing its store) must see it resolve, not the process exit under the await.
      worker.ref();
      const deadline = new AbortController();
      const late = sleep(deadlineMs, 'late' as const, { signal: deadline.signal }).catch(
        () => 'exited' as const,
      );
      const outcome = await Promise.race([exited.then(() => 'exited' as const), late]);
      deadline.abort();
      worker.unref();
      // Still inside a checkpoint: terminate takes effect when it returns; the caller does not wait for that.
      if (outcome === 'late') void worker.terminate();
    },
  };
}

/**
 * The store with every call that writes held back while a resetting checkpoint runs (reads go on: a
 * checkpoint never blocks them). The wait counts towards the call's deadline: wrapped in retryingWhileBusy, a
 * call that waited `timeoutMs` here and then finds the lock still taken fails at once with 503.
 */
export function holdingWritesForCheckpoints(
  store: Store,
  checkpointer: Checkpointer,
  timeoutMs: number,
): Store {
  const held: Record<string, unknown> = { ...store };
  for (const [name, value] of Object.entries(store)) {
    if (typeof value !== 'function' || READ_ONLY.has(name) || SUBSCRIPTIONS.has(name)) continue;
    held[name] = async (...args: unknown[]) => {
      await checkpointer.writable(timeoutMs);
      return (value as (...a: unknown[]) => unknown).apply(store, args);
    };
  }
  return held as unknown as Store;
}
