import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { killAll, run, serve } from '../support/processes.js';
import { Browser } from './browser.js';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'waybill-console-cli-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(killAll);

// The built `waybill`, as an operator runs it beside a serving process on the same database.
describe('console sessions and the CLI', () => {
  it('end when the CLI rotates the account’s secret, and when it deletes the account', async () => {
    const env = {
      DATABASE_URL: `sqlite:${join(dir, 'console.db')}`,
      WAYBILL_PEPPER: 'console-cli-pepper-0123456789',
    };
    const created = await run(['accounts', 'create', '--name', 'CLI Co'], env);
    expect(created.code, created.stderr).toBe(0);
    const account = JSON.parse(created.stdout) as { id: string; key: string; secret: string };
    const server = await serve(['--no-demo'], env);
    const browser = new Browser(server.url);
    expect((await browser.signIn(account.key, account.secret)).status).toBe(303);
    expect((await browser.get('/console')).location).toBe('/console/messages');

    const rotated = await run(['accounts', 'rotate-secret', account.id], env);
    expect(rotated.code, rotated.stderr).toBe(0);
    expect((await browser.get('/console')).location).toBe('/console/sign-in');

    const { secret } = JSON.parse(rotated.stdout) as { secret: string };
    expect((await browser.signIn(account.key, secret)).status).toBe(303);
    expect((await browser.get('/console')).location).toBe('/console/messages');
    const deleted = await run(['accounts', 'delete', account.id], env);
    expect(deleted.code, deleted.stderr).toBe(0);
    expect((await browser.get('/console')).location).toBe('/console/sign-in');
    await server.stop();
  });
});
