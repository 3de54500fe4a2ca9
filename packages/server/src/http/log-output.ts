import { writeSync } from 'node:fs';
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

/**
 * Standard output for the logs, asynchronous and batched per turn (see {@link batchedOutput}). One per process:
 * every app built here (tests build many) shares it and its exit flush. A synchronous write per line (pino's
 * default) cost `/dlr` a measurable share of its throughput with the access log on. pino flushes what is pending
 * when the process exits, signals and fatal errors included; only a SIGKILL (or the machine failing) can lose
 * the lines of the last turn and of the write in flight.
 */
export function standardOutput(): LogOutput {
  stdout ??= batchedOutput(pino.destination({ dest: 1, sync: false }) as unknown as Destination, 1);
  return stdout;
}
