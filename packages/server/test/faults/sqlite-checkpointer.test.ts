import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { CheckpointReport } from '../../src/store/sqlite/checkpoint-worker.js';
import {
  type Checkpointer,
  holdingWritesForCheckpoints,
  startCheckpointer,
} from '../../src/store/sqlite/checkpointer.js';
import { openDatabase } from '../../src/store/sqlite/database.js';
import { openSqliteStore } from '../../src/store/sqlite/store.js';
import type { Store } from '../../src/store/store.js';
import { run } from '../support/processes.js';

/**
 * The SQLite checkpointer (store/sqlite/checkpointer.ts) on a real file and a real thread: commits are fsynced
 * and never checkpoint; the thread empties the log when writes pause, bounds it while they go on, and stops
 * within its deadline even inside a checkpoint that waits; the store and the CLI leave no thread or log behind.
 */
describe('SQLite checkpointer', () => {
  let dir: string;
  let path: string;
  const walBytes = () => (existsSync(`${path}-wal`) ? statSync(`${path}-wal`).size : 0);
  const until = async (done: () => boolean, ms: number) => {
    const deadline = Date.now() + ms;
    while (!done()) {
      if (Date.now() > deadline) throw new Error(`not within ${ms} ms`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };
  /** A connection like the store's, with a table of 4-KiB rows: each insert is a page or more of log. */
  const writer = () => {
    const db = openDatabase(path, 8);
    db.exec('CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, v BLOB)');
    const insert = db.prepare('INSERT INTO t (v) VALUES (randomblob(4000))');
    return { db, write: db.transaction((n: number) => Array.from({ length: n }, () => insert.run())) };
  };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'waybill-checkpointer-'));
    path = join(dir, 'waybill.db');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('opens the store connection with commits fsynced (FULL) and no checkpoint of its own', () => {
    const db = openDatabase(path, 8);
    try {
      expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
      expect(db.pragma('synchronous', { simple: true })).toBe(2);
      expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(0);
    } finally {
      db.close();
    }
  });

  it('empties the log once writes pause, and the next writes start a fresh log', async () => {
    const { db, write } = writer();
    const reports: CheckpointReport[] = [];
    const checkpointer = startCheckpointer({
      path,
      walMaxMb: 64,
      intervalMs: 20,
      onReport: (r) => reports.push(r),
    });
    try {
      write(200);
      expect(walBytes()).toBeGreaterThan(800_000);
      await until(() => walBytes() === 0, 5000);
      // The thread's report arrives a moment after the file shrank.
      await until(() => reports.some((r) => r.type === 'reset' && r.reason === 'idle'), 5000);
      write(10);
      expect(walBytes()).toBeGreaterThan(0);
      await until(() => walBytes() === 0, 5000);
      expect(db.prepare('SELECT count(*) AS n FROM t').get()).toEqual({ n: 210 });
      expect(reports.filter((r) => r.type === 'error')).toEqual([]);
    } finally {
      await checkpointer.stop();
      db.close();
    }
  });

  it('bounds the log while writes go on without a pause', async () => {
    const { db, write } = writer();
    // The bounding checkpoint holds the write lock while it copies; the writer waits for it here.
    db.pragma('busy_timeout = 10000');
    const reports: CheckpointReport[] = [];
    const checkpointer = startCheckpointer({
      path,
      walMaxMb: 1,
      intervalMs: 20,
      onReport: (r) => reports.push(r),
    });
    try {
      // The thread is up and ticking once it has emptied a first log.
      write(1);
      await until(() => walBytes() === 0, 5000);
      let largest = 0;
      const started = Date.now();
      // ~40 MiB of log in 400-KiB commits back to back, held back only while a bounding checkpoint runs, as
      // the store holds its writes back.
      for (let i = 0; i < 100; i++) {
        await checkpointer.writable(10_000);
        write(100);
        largest = Math.max(largest, walBytes());
      }
      const elapsed = Date.now() - started;
      console.log(
        `40 MiB written in ${elapsed} ms under a 1-MiB bound: log at most ${(largest / 2 ** 20).toFixed(1)} MiB, ` +
          `${reports.filter((r) => r.type === 'reset' && r.reason !== 'idle').length} resetting checkpoints`,
      );
      await until(() => reports.some((r) => r.type === 'reset' && r.reason !== 'idle'), 5000);
      // The bound plus what the writer appends between two ticks (it writes fast here), far from 40 MiB.
      expect(largest).toBeLessThan(12 * 2 ** 20);
      expect(reports.filter((r) => r.type === 'error')).toEqual([]);
    } finally {
      await checkpointer.stop();
      db.close();
    }
  });

  it('stops within its deadline even while a checkpoint waits for a reader', async () => {
    const { db, write } = writer();
    write(500);
    const reader = new Database(path);
    reader.exec('BEGIN');
    reader.prepare('SELECT count(*) FROM t').get();
    write(500);
    const checkpointer = startCheckpointer({ path, walMaxMb: 1, intervalMs: 20, waitMs: 3000 });
    try {
      // The first tick's bounding checkpoint now waits (inside SQLite) for the reader's snapshot to end.
      await new Promise((resolve) => setTimeout(resolve, 300));
      const started = Date.now();
      await checkpointer.stop(200);
      expect(Date.now() - started).toBeLessThan(1000);
    } finally {
      reader.exec('ROLLBACK');
      reader.close();
      await checkpointer.exited;
      db.close();
    }
  });

  it('holds writes back while a resetting checkpoint runs, and lets reads through', async () => {
    const calls: string[] = [];
    const store = {
      findDlr: async () => calls.push('read'),
      ingestMessages: async () => calls.push('write'),
    } as unknown as Store;
    let done: () => void = () => {};
    const running = new Promise<void>((resolve) => {
      done = resolve;
    });
    const checkpointer = { writable: () => running } as unknown as Checkpointer;
    const held = holdingWritesForCheckpoints(store, checkpointer, 1000);
    const write = held.ingestMessages('a', [], new Date());
    await held.findDlr('a', 'id');
    expect(calls).toEqual(['read']);
    done();
    await write;
    expect(calls).toEqual(['read', 'write']);
  });

  it('leaves neither a thread nor a log behind when the store closes', async () => {
    const store = openSqliteStore({ path, cacheMb: 8 });
    await store.dropParkedBefore(new Date());
    expect(existsSync(`${path}-wal`)).toBe(true);
    const started = Date.now();
    await store.close();
    expect(Date.now() - started).toBeLessThan(2500);
    // The log is removed only by the last connection to close: the checkpointer's was closed before.
    expect(existsSync(`${path}-wal`)).toBe(false);
  });

  it('lets a CLI command that opens the store finish its work after closing it, and exit, leaving no log', async () => {
    for (const expected of [/^applied \d+ migrations:/, /^schema is up to date$/m]) {
      const started = Date.now();
      const result = await run(['migrate'], { DATABASE_URL: `sqlite:${path}` });
      expect(result.code, result.stderr).toBe(0);
      // `migrate` prints after store.close(): the close resolved, the process did not just run dry under it.
      expect(result.stdout).toMatch(expected);
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(existsSync(`${path}-wal`)).toBe(false);
    }
  });

  // The built module, as the CLI runs it (`npm test` builds first).
  it('resolves stop() in a process that has nothing else to wait for', async () => {
    openDatabase(path, 8).close();
    const script = [
      `import { startCheckpointer } from ${JSON.stringify(new URL('../../dist/store/sqlite/checkpointer.js', import.meta.url).href)};`,
      `const checkpointer = startCheckpointer({ path: ${JSON.stringify(path)}, walMaxMb: 1 });`,
      `await checkpointer.stop();`,
      `console.log('stopped');`,
    ].join('\n');
    const { execFileSync } = await import('node:child_process');
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(out).toBe('stopped\n');
  });
});
