import cluster, { type Worker } from 'node:cluster';
import { availableParallelism } from 'node:os';
import type { Config } from '../config.js';
import { ConfigError } from '../config.js';
import { EXIT } from './options.js';

/**
 * `waybill serve --workers N` (CONTRACT §11): N processes on one port (node:cluster hands connections out).
 * The primary only supervises: it has prepared the database (migrations, demo data) before forking, forwards
 * SIGTERM/SIGINT so every worker drains, replaces a worker that dies, and exits once all have stopped.
 */

/** Set in each worker's environment: its index, 0 to N-1. */
export const WORKER_INDEX_ENV = 'WAYBILL_WORKER_INDEX';

/** How many workers the configuration asks for: `0` is one per core. */
export function workerCount(config: Pick<Config, 'workers' | 'databaseUrl'>): number {
  const count = config.workers === 0 ? availableParallelism() : config.workers;
  if (count > 1 && config.databaseUrl === 'sqlite::memory:') {
    throw new ConfigError('WAYBILL_WORKERS above 1 needs a database file or PostgreSQL, not sqlite::memory:');
  }
  return count;
}

/** This process's worker index, or null when it is not a worker of `--workers`. */
export function workerIndex(): number | null {
  const raw = cluster.isWorker ? process.env[WORKER_INDEX_ENV] : undefined;
  return raw === undefined ? null : Number(raw);
}

/**
 * Whether this process runs the callback relay: as configured, except that on SQLite only worker 0 does — one
 * relay per database file.
 */
export function runsRelay(config: Pick<Config, 'callbackRelay' | 'databaseUrl'>): boolean {
  const index = workerIndex();
  return config.callbackRelay && !(config.databaseUrl.startsWith('sqlite:') && index !== null && index > 0);
}

/** Forks the workers and supervises them until a signal stops them all; never resolves. */
export function superviseWorkers(count: number, log: (message: string) => void): Promise<number> {
  const workers = new Map<number, Worker>();
  let stopping = false;
  const fork = (index: number) => {
    const worker = cluster.fork({ [WORKER_INDEX_ENV]: String(index) });
    workers.set(index, worker);
    worker.once('exit', (code, signal) => {
      workers.delete(index);
      if (stopping) {
        if (workers.size === 0) process.exit(EXIT.ok);
        return;
      }
      log(`worker ${index} exited (${signal ?? `code ${code}`}); starting another`);
      // A worker that cannot start at all would otherwise be restarted in a tight loop.
      setTimeout(() => fork(index), 1000).unref();
    });
  };
  for (let index = 0; index < count; index++) fork(index);

  const stop = (signal: NodeJS.Signals) => {
    if (stopping) {
      for (const worker of workers.values()) worker.process.kill('SIGKILL');
      process.exit(EXIT.apiError);
    }
    stopping = true;
    log(`${signal}: stopping ${workers.size} workers`);
    if (workers.size === 0) process.exit(EXIT.ok);
    for (const worker of workers.values()) worker.process.kill(signal);
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  return new Promise<number>(() => {});
}
