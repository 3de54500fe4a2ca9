import { execFileSync, spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { batchedOutput } from '../../src/http/log-output.js';

/** A destination that records what it is handed. */
function recorder() {
  const writes: string[] = [];
  let synced = 0;
  return {
    writes,
    synced: () => synced,
    destination: {
      write: (chunk: string) => writes.push(chunk),
      flush: (callback?: (error?: Error) => void) => callback?.(),
      flushSync: () => {
        synced += 1;
      },
    },
  };
}

describe('batchedOutput', () => {
  it('hands the lines of one turn over in one write, at the end of the turn', async () => {
    const r = recorder();
    const out = batchedOutput(r.destination, 1);
    out.write('a\n');
    out.write('b\n');
    expect(r.writes).toStrictEqual([]);
    await new Promise((done) => setImmediate(done));
    expect(r.writes).toStrictEqual(['a\nb\n']);
    out.write('c\n');
    await new Promise((done) => setImmediate(done));
    expect(r.writes).toStrictEqual(['a\nb\n', 'c\n']);
  });

  it('flushSync hands over what is pending first', () => {
    const r = recorder();
    const out = batchedOutput(r.destination, 1);
    out.write('a\n');
    out.flushSync();
    expect(r.writes).toStrictEqual(['a\n']);
    expect(r.synced()).toBe(1);
  });

  it('writes the lines of the last turn when the process exits in it', () => {
    // The built module in a process of its own, which logs through pino and exits in the same turn.
    const dist = resolve(import.meta.dirname, '../../dist/http/log-output.js');
    const script = `
      import pino from 'pino';
      import { standardOutput } from ${JSON.stringify(dist)};
      const log = pino({}, standardOutput());
      for (let i = 0; i < 3; i++) log.info({ i }, 'line');
      process.exit(0);`;
    const stdout = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: resolve(import.meta.dirname, '../..'),
      encoding: 'utf8',
    });
    const lines = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { i: number; msg: string });
    expect(lines.map((line) => [line.i, line.msg])).toStrictEqual([
      [0, 'line'],
      [1, 'line'],
      [2, 'line'],
    ]);
  });

  it('writes the lines of a turn to a file by the next turn, with the thread pool busy, and a SIGKILL keeps them', () => {
    // Standard output is a file. The one thread of libuv's pool is held by a long key derivation, as a burst of
    // scrypt or file work would hold it; the lines of a turn must still be in the file when the next turn reads
    // it, and survive a SIGKILL there. An asynchronous write would wait behind the derivation.
    const dist = resolve(import.meta.dirname, '../../dist/http/log-output.js');
    const dir = mkdtempSync(join(tmpdir(), 'waybill-log-'));
    const file = join(dir, 'out.log');
    const script = `
      import { pbkdf2 } from 'node:crypto';
      import { readFileSync } from 'node:fs';
      import pino from 'pino';
      import { standardOutput } from ${JSON.stringify(dist)};
      pbkdf2('secret', 'salt', 50_000_000, 32, 'sha256', () => {});
      const log = pino({}, standardOutput());
      for (let i = 0; i < 3; i++) log.info({ i }, 'line');
      setImmediate(() => setImmediate(() => {
        process.stderr.write(readFileSync(${JSON.stringify(file)}, 'utf8'));
        process.kill(process.pid, 'SIGKILL');
      }));`;
    const fd = openSync(file, 'w');
    try {
      const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
        cwd: resolve(import.meta.dirname, '../..'),
        env: { ...process.env, UV_THREADPOOL_SIZE: '1' },
        stdio: ['ignore', fd, 'pipe'],
        encoding: 'utf8',
        timeout: 30_000,
      });
      expect(child.signal).toBe('SIGKILL');
      const seen = child.stderr
        .trim()
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => (JSON.parse(line) as { i: number }).i);
      expect(seen).toStrictEqual([0, 1, 2]);
      expect(readFileSync(file, 'utf8').trim().split('\n')).toHaveLength(3);
    } finally {
      closeSync(fd);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
