import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { resolve } from 'node:path';

/** Starting the built `waybill` CLI as a user would: for the CLI tests and the multi-instance test. */

/** The built CLI, as `npm start` runs it (`npm test` builds first). */
const MAIN = resolve(import.meta.dirname, '../../dist/cli/main.js');

export interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

// The child must not inherit a PostgreSQL or Redis setting from the test environment.
const cleanEnv = (env: Record<string, string>) => {
  const base: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (
      v !== undefined &&
      !['DATABASE_URL', 'REDIS_URL', 'WAYBILL_PEPPER', 'WAYBILL_ADMIN_TOKEN'].includes(k)
    )
      base[k] = v;
  }
  return { ...base, ...env };
};

/** Where a process runs: `cwd` matters to the PostgreSQL pepper file (./data/waybill.pepper). */
export interface ProcessOptions {
  cwd?: string;
  /** Everything the process has written to stderr so far, each time it writes more (the result has it all). */
  onStderr?: (soFar: string) => void;
}

export function run(
  args: string[],
  env: Record<string, string> = {},
  options: ProcessOptions = {},
): Promise<Result> {
  const { onStderr, ...where } = options;
  return new Promise((done) => {
    const child = execFile(
      process.execPath,
      [MAIN, ...args],
      { env: cleanEnv(env), timeout: 30_000, ...where },
      (error, stdout, stderr) => {
        done({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
      },
    );
    if (onStderr) {
      let soFar = '';
      child.stderr?.on('data', (chunk: Buffer | string) => {
        soFar += String(chunk);
        onStderr(soFar);
      });
    }
  });
}

export interface Served {
  url: string;
  output: () => string;
  stop: () => Promise<void>;
  /** SIGKILL: the process dies at once, with whatever it had in flight. Resolves once it has exited. */
  kill: () => Promise<void>;
}

const children: ChildProcess[] = [];

/** Kills every process the test started and has not stopped. */
export function killAll(): void {
  for (const child of children.splice(0)) child.kill('SIGKILL');
}

/** Starts `waybill serve` on a free port and resolves once it listens (and has printed its banner). */
export function serve(
  args: string[],
  env: Record<string, string> = {},
  options: ProcessOptions = {},
): Promise<Served> {
  const child = spawn(process.execPath, [MAIN, 'serve', '--port', '0', ...args], {
    env: cleanEnv({ WAYBILL_LOG_LEVEL: 'info', ...env }),
    ...options,
  });
  children.push(child);
  let output = '';
  return new Promise((ready, fail) => {
    const timer = setTimeout(() => fail(new Error(`serve did not start:\n${output}`)), 20_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening at (http:\/\/[^\s"]+)/.exec(output);
      // The banner follows the listen line; wait for its last request when demo data is expected.
      if (match?.[1] && (!output.includes('Demo account:') || output.includes('/openapi.json'))) {
        clearTimeout(timer);
        setTimeout(() => {
          ready({
            url: match[1] as string,
            output: () => output,
            stop: () =>
              new Promise((stopped) => {
                child.once('exit', () => stopped());
                child.kill('SIGTERM');
              }),
            kill: () =>
              new Promise((killed) => {
                if (child.exitCode !== null || child.signalCode !== null) return killed();
                child.once('exit', () => killed());
                child.kill('SIGKILL');
              }),
          });
        }, 100);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => fail(new Error(`serve exited with ${code}:\n${output}`)));
  });
}
