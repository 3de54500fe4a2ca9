import { Worker } from 'node:worker_threads';

/**
 * A `pruning… 12 s` line on stderr that ticks while long work runs, and goes away when it ends. Only on a
 * terminal: piped or redirected, stderr stays quiet.
 *
 * The ticking runs in a worker thread that writes to the terminal itself, so it goes on while the main thread
 * is busy: SQLite does its work synchronously, and a timer on the main thread would not fire until the end.
 */
export interface Progress {
  /** Stops the ticking and clears the line. */
  stop(): Promise<void>;
}

// Plain JavaScript, run as the worker's script (CommonJS, so `require`).
const TICKER = `
const { workerData } = require('node:worker_threads');
const { writeSync } = require('node:fs');
const { fd, label, started } = workerData;
setInterval(() => {
  const seconds = Math.floor((Date.now() - started) / 1000);
  try {
    writeSync(fd, '\\r' + label + '… ' + seconds + ' s\\x1b[K');
  } catch {}
}, 1000);
`;

export function startProgress(label: string): Progress {
  const stream = process.stderr;
  if (!stream.isTTY) return { stop: async () => {} };
  const started = Date.now();
  stream.write(`\r${label}… 0 s\x1b[K`);
  const worker = new Worker(TICKER, { eval: true, workerData: { fd: 2, label, started } });
  // Never what keeps the process alive, even if stop() is not reached.
  worker.unref();
  return {
    async stop() {
      await worker.terminate();
      stream.write('\r\x1b[K');
    },
  };
}
