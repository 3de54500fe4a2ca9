import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';

/**
 * The checkpointer's thread (checkpointer.ts starts it): its own connection to the database, copying what the
 * write-ahead log holds into the database file so that no request ever waits for it. It imports nothing of
 * the project, so that it loads as it is, compiled or (in the tests) as TypeScript.
 *
 * Every tick: a PASSIVE checkpoint, which copies what it can without waiting for anyone. SQLite starts the
 * log again from its beginning only when a write begins after every frame was copied, which writes that come
 * back to back never allow: so once PASSIVE has caught up and the log is past `restartBytes`, a RESTART
 * checkpoint copies the few frames written since and resets it. When the log has grown past the bound all the
 * same (a reader held an old snapshot, the disk could not keep up), a TRUNCATE checkpoint. Both wait (up to
 * `waitMs`) for the write lock and the readers, and the owner holds new writes back meanwhile (`holdWrites`).
 * When nothing was written since the previous tick and everything is copied, a TRUNCATE checkpoint that waits
 * for no one, to give the disk space back while the service is idle.
 */

export interface CheckpointSettings {
  path: string;
  /**
   * One Int32 shared with the owner: 1 while a resetting checkpoint wants the write lock. The owner holds new
   * writes back meanwhile; SQLite's busy wait alone would lose the lock to a writer that commits back to back.
   */
  holdWrites: SharedArrayBuffer;
  /** Above this many bytes in the log, a checkpoint that waits empties it. */
  walMaxBytes: number;
  /** Above this many bytes in a log that PASSIVE has caught up with, a RESTART starts it again. */
  restartBytes: number;
  /** Pause between ticks. */
  intervalMs: number;
  /** How long a resetting checkpoint waits for the write lock and the readers. */
  waitMs: number;
}

/** What the thread tells its owner: each checkpoint that reset the log, and each failure. */
export type CheckpointReport =
  | { type: 'reset'; reason: 'idle' | 'restart' | 'bound'; frames: number; ms: number }
  | { type: 'error'; message: string };

interface CheckpointRow {
  busy: number;
  log: number;
  checkpointed: number;
}

const settings = workerData as CheckpointSettings;
const holdWrites = new Int32Array(settings.holdWrites);
const port = parentPort;
const db = new Database(settings.path, { fileMustExist: true, timeout: 0 });
// The checkpoint's own fsyncs (log before copying, database file after) follow this connection's setting.
db.pragma('synchronous = FULL');
db.pragma('wal_autocheckpoint = 0');
db.pragma('mmap_size = 0');
const pageSize = Number(db.pragma('page_size', { simple: true }));

const checkpoint = (mode: 'PASSIVE' | 'RESTART' | 'TRUNCATE'): CheckpointRow =>
  (db.pragma(`wal_checkpoint(${mode})`) as CheckpointRow[])[0] ?? { busy: 1, log: -1, checkpointed: -1 };

const report = (message: CheckpointReport) => port?.postMessage(message);

/**
 * A checkpoint that copies every frame and resets the log, with the owner's writes held back meanwhile and
 * SQLite's busy wait up to `waitMs` for the write lock and the readers. Answers the frames left in the log.
 */
function resetting(mode: 'RESTART' | 'TRUNCATE', reason: 'restart' | 'bound', frames: number): number {
  const started = performance.now();
  Atomics.store(holdWrites, 0, 1);
  db.pragma(`busy_timeout = ${settings.waitMs}`);
  try {
    const row = checkpoint(mode);
    if (row.busy === 0) report({ type: 'reset', reason, frames, ms: performance.now() - started });
    return row.log;
  } finally {
    db.pragma('busy_timeout = 0');
    Atomics.store(holdWrites, 0, 0);
  }
}

let previousLog = -1;
let timer: NodeJS.Timeout | undefined;

function tick(): void {
  try {
    const passive = checkpoint('PASSIVE');
    let log = passive.log;
    const bytes = log * pageSize;
    if (bytes > settings.walMaxBytes) {
      log = resetting('TRUNCATE', 'bound', log);
    } else if (bytes > settings.restartBytes && passive.checkpointed === log) {
      log = resetting('RESTART', 'restart', log);
    } else if (log > 0 && log === previousLog && passive.checkpointed === log) {
      const row = checkpoint('TRUNCATE');
      if (row.busy === 0) report({ type: 'reset', reason: 'idle', frames: log, ms: 0 });
      log = row.log;
    }
    previousLog = log;
  } catch (error) {
    report({ type: 'error', message: error instanceof Error ? error.message : String(error) });
  }
  timer = setTimeout(tick, settings.intervalMs);
}

port?.on('message', (message: unknown) => {
  if (message !== 'stop') return;
  clearTimeout(timer);
  db.close();
  port.close();
});
tick();
