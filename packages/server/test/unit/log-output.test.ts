import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
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
});
