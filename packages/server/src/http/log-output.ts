import { fstatSync, writeSync } from 'node:fs';
import pino from 'pino';

/** The destination pino's `destination()` builds (sonic-boom), as far as the batching below uses it. */
interface Destination {
  write(chunk: string): unknown;
  flush(callback?: (error?: Error) => void): void;
  flushSync(): void;
}

/** What pino writes its lines to. */
export interface LogOutput {
  write(line: string): boolean;
  flush(callback?: (error?: Error) => void): void;
  flushSync(): void;
}

/**
 * Log lines written asynchronously and a batch per turn of the event loop: the lines of one turn are joined here
 * and handed to `destination` once, at the end of the turn (`setImmediate`), so a quiet server's lines still
 * appear at once. Why not every line straight to pino's asynchronous destination: sonic-boom measures the
 * UTF-8 length of its whole pending buffer at every line it is given, so under load each line paid for every
 * line still waiting — the access log cost `/dlr` about a fifth of its CPU (docs/benchmarks.md). Lines still
 * pending when the process exits are handed over first, then flushed synchronously (straight to `fd` if the
 * destination has already been ended).
 */
export function batchedOutput(destination: Destination, fd: number): LogOutput {
  let pending = '';
  const handOver = () => {
    const lines = pending;
    pending = '';
    if (lines !== '') destination.write(lines);
  };
  // Before every other exit listener, pino's flush of the destination included.
  process.prependListener('exit', () => {
    if (pending === '') return;
    const lines = pending;
    pending = '';
    try {
      destination.write(lines);
      destination.flushSync();
    } catch {
      writeSync(fd, lines);
    }
  });
  return {
    write(line) {
      if (pending === '') setImmediate(handOver);
      pending += line;
      return true;
    },
    flush(callback) {
      handOver();
      destination.flush(callback);
    },
    flushSync() {
      handOver();
      destination.flushSync();
    },
  };
}

let stdout: LogOutput | undefined;

/** Whether `fd` is a regular file (not a pipe, socket or terminal); false when it cannot be read. */
function regularFile(fd: number): boolean {
  try {
    return fstatSync(fd).isFile();
  } catch {
    return false;
  }
}

/**
 * Standard output for the logs, batched per turn (see {@link batchedOutput}). One per process: every app built
 * here (tests build many) shares it and its exit flush. A write per line (pino's default) cost `/dlr` a
 * measurable share of its throughput with the access log on.
 *
 * How a turn's batch is written depends on what standard output is:
 * - a regular file: synchronously, one `write` per turn, as pino's default destination and Node's own
 *   `process.stdout` write to files. A file never pushes back on a writer, and an asynchronous write costs a
 *   round trip through libuv's thread pool per turn, which under `/dlr` load cost about 7 µs of the server's
 *   60 per request (docs/benchmarks.md, "Sixteenth pass"); it also waits behind whatever else holds the pool.
 * - anything else (a pipe to a log collector, a socket, a terminal): asynchronously, so that a reader that
 *   falls behind never stops the event loop; lines wait in memory until it reads.
 *
 * pino flushes what is pending when the process exits, signals and fatal errors included. Only a SIGKILL (or the
 * machine failing) can lose lines: those of the turn it lands in, and on the asynchronous path also those of the
 * write in flight.
 */
export function standardOutput(): LogOutput {
  stdout ??= batchedOutput(pino.destination({ dest: 1, sync: regularFile(1) }) as unknown as Destination, 1);
  return stdout;
}
