import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { killAll, run, serve } from '../support/processes.js';

/**
 * A start that cannot succeed says why in one sentence that names the fix, exits 3, and writes nothing first;
 * and the demo account can be deleted, its credentials advertised only while they work.
 */

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'waybill-startup-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(killAll);

/** A one-line sentence on stderr, nothing on stdout, no stack trace. */
function expectOneSentence(result: { stdout: string; stderr: string }): string {
  expect(result.stdout).toBe('');
  const lines = result.stderr.trimEnd().split('\n');
  expect(lines, result.stderr).toHaveLength(1);
  expect(result.stderr).not.toMatch(/^\s+at /m);
  return lines[0] as string;
}

describe('waybill serve when it cannot start', () => {
  let taken: Server;
  let port: number;
  beforeAll(async () => {
    taken = createServer();
    await new Promise<void>((listening) => taken.listen(0, '127.0.0.1', listening));
    port = (taken.address() as { port: number }).port;
  });
  afterAll(() => new Promise<void>((closed) => taken.close(() => closed())));

  it('names the port already in use, exits 3, and writes nothing', async () => {
    const file = join(dir, 'busy', 'waybill.db');
    const result = await run(['serve', '--port', String(port), '--database-url', `sqlite:${file}`]);
    expect(result.code, result.stderr).toBe(3);
    const line = expectOneSentence(result);
    expect(line).toContain(`port ${port} on 127.0.0.1 is already in use`);
    expect(line).toContain('--port');
    expect(existsSync(file)).toBe(false);
    expect(existsSync(join(dir, 'busy', 'waybill.pepper'))).toBe(false);
  });

  const postgresUrl = process.env.WAYBILL_TEST_POSTGRES_URL;
  it.skipIf(!postgresUrl)('names a PostgreSQL database that does not exist, and exits 3', async () => {
    const url = new URL(postgresUrl as string);
    url.pathname = '/waybill_no_such_database';
    const result = await run(['serve', '--port', '0', '--no-demo', '--database-url', url.href]);
    expect(result.code, result.stderr).toBe(3);
    const line = expectOneSentence(result);
    expect(line).toContain('"waybill_no_such_database" does not exist');
    expect(line).toContain('createdb');
  });
});

describe('the demo account', () => {
  it('is advertised only while its secret works, and can be deleted', async () => {
    const db = join(dir, 'demo.db');
    const env = { DATABASE_URL: `sqlite:${db}` };
    const first = await serve([], { ...env, WAYBILL_PEPPER: 'first-pepper-0123456789abcdef' });
    expect(first.output()).toContain('secret=DEMOSECR');
    await first.stop();

    // A new secret: DEMOSECR no longer verifies, so the banner must not offer it.
    const rotated = await run(['accounts', 'rotate-secret', 'DEMOKEY1'], {
      ...env,
      WAYBILL_PEPPER: 'first-pepper-0123456789abcdef',
    });
    expect(rotated.code, rotated.stderr).toBe(0);
    const second = await serve([], { ...env, WAYBILL_PEPPER: 'first-pepper-0123456789abcdef' });
    await expect.poll(() => second.output()).toContain('no longer takes the demo secret');
    expect(second.output()).not.toContain('DEMOSECR');
    await second.stop();

    const deleted = await run(['accounts', 'delete', 'DEMOKEY1'], env);
    expect(deleted.code, deleted.stderr).toBe(0);
    const { deleted: id } = JSON.parse(deleted.stdout) as { deleted: string };
    const sqlite = new Database(db, { readonly: true });
    try {
      for (const table of ['accounts', 'messages', 'contacts', 'receipt_events', 'parked_receipts']) {
        expect(sqlite.prepare(`SELECT count(*) AS n FROM ${table}`).get(), table).toEqual({ n: 0 });
      }
    } finally {
      sqlite.close();
    }
    const again = await run(['accounts', 'delete', id], env);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`no account ${id}`);
  });
});
