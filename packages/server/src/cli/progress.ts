import { Worker } from 'node:worker_threads';

/**
 * A `pruning… 12 s` line on stderr that ticks while long work runs, and goes away when it ends. Only on a
 * terminal: piped or redirected, stderr stays quiet.
 *
 * The ticking runs in a worker thread that writes to the terminal itself, so it goes on while the main thread
 * is busy: SQLite does its work synchronously, and a timer on the main thread would not fire until the end.
 */
export interface Progress {
  /** Replaces the label (`sent 2000 of 5000 messages`), shown at once. */
  update(label: string): void;
  /** Stops the ticking and clears the line. */
  stop(): Promise<void>;
}

// Plain JavaScript, run as the worker's script (CommonJS, so `require`).
const TICKER = `
const { workerData, parentPort } = require('node:worker_threads');
const { writeSync } = require('node:fs');
const { fd, started } = workerData;
let label = workerData.label;
const show = () => {
  const seconds = Math.floor((Date.now() - started) / 1000);
  try {
    writeSync(fd, '\\r' + label + '… ' + seconds + ' s\\x1b[K');
  } catch {}
};
setInterval(show, 1000);
parentPort.on('message', (next) => {
  label = next;
  show();
});
`;

export function startProgress(label: string): Progress {
  const stream = process.stderr;
  if (!stream.isTTY) return { update: () => {}, stop: async () => {} };
  const started = Date.now();
  stream.write(`\r${label}… 0 s\x1b[K`);
  const worker = new Worker(TICKER, { eval: true, workerData: { fd: 2, label, started } });
  // Never what keeps the process alive, even if stop() is not reached.
  worker.unref();
  return {
    update(next) {
      worker.postMessage(next);
    },
    async stop() {
      await worker.terminate();
      stream.write('\r\x1b[K');
    },
  };
}
