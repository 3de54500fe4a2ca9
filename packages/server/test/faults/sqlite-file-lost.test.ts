import { copyFileSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { killAll, type Served, serve } from '../support/processes.js';

/**
 * The SQLite file deleted or replaced under a running server (`rm -r data/`, a restore copied over it): SQLite
 * would go on writing into the file it opened and acknowledge every write, all of it gone at the next start.
 * Instead writes answer 503, /readyz 503, and the log names the path (issue 18).
 */

/** Each test starts several real processes, one after another: seconds each on a busy machine. */
const PROCESS_TIMEOUT_MS = 60_000;

const ADMIN = 'file-lost-admin-token-0123456789';
let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'waybill-file-lost-'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));
afterEach(killAll);

async function start(name: string): Promise<{ server: Served; dir: string; file: string }> {
  const dir = join(root, name, 'data');
  const file = join(dir, 'waybill.db');
  const server = await serve(['--no-demo'], {
    DATABASE_URL: `sqlite:${file}`,
    WAYBILL_ADMIN_TOKEN: ADMIN,
    WAYBILL_PEPPER: 'file-lost-pepper-0123456789',
  });
  return { server, dir, file };
}

const createAccount = (server: Served) =>
  fetch(`${server.url}/admin/v1/accounts`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'After the file went' }),
  });

async function expectUnavailable(server: Served, file: string, how: string): Promise<void> {
  const created = await createAccount(server);
  expect(created.status).toBe(503);
  expect(created.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(created.headers.get('retry-after')).toBe('5');
  expect(await created.json()).toMatchObject({ status: 503, code: 'unavailable' });
  const ready = await fetch(`${server.url}/readyz`);
  expect(ready.status).toBe(503);
  expect(await ready.json()).toEqual({ status: 'unavailable' });
  expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  await expect
    .poll(() => server.output())
    .toContain(`the SQLite database file ${file} ${how} while the server ran`);
}

describe('the SQLite file lost under a running server', () => {
  it(
    'answers 503 once the file is deleted, and /readyz says so',
    async () => {
      const { server, dir, file } = await start('deleted');
      expect((await createAccount(server)).status).toBe(201);
      expect((await fetch(`${server.url}/readyz`)).status).toBe(200);

      rmSync(dir, { recursive: true });
      await expectUnavailable(server, file, 'was deleted');
      await server.stop();
    },
    PROCESS_TIMEOUT_MS,
  );

  it(
    'answers 503 once the file is replaced by another',
    async () => {
      const { server, file } = await start('replaced');
      expect((await createAccount(server)).status).toBe(201);

      copyFileSync(file, `${file}.copy`);
      renameSync(`${file}.copy`, file);
      await expectUnavailable(server, file, 'was replaced by another file');
      await server.stop();
    },
    PROCESS_TIMEOUT_MS,
  );
});
