import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { killAll, run, serve } from '../support/processes.js';

/** Runs one `curl …` line the banner printed, with fetch. */
async function curl(line: string): Promise<Response> {
  const basic = /curl -u (\w+):(\w+) '([^']+)'/.exec(line);
  if (basic) {
    const [, key, secret, url] = basic as unknown as [string, string, string, string];
    return fetch(url, {
      headers: { authorization: `Basic ${Buffer.from(`${key}:${secret}`).toString('base64')}` },
    });
  }
  const plain = /curl '([^']+)'/.exec(line);
  if (!plain?.[1]) throw new Error(`not a curl line: ${line}`);
  return fetch(plain[1]);
}

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'waybill-cli-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(killAll);

describe('waybill serve', () => {
  it('loads the demo data on an empty database and every printed request works', async () => {
    const db = join(dir, 'demo', 'waybill.db');
    const server = await serve(['--database-url', `sqlite:${db}`]);
    const lines = server
      .output()
      .split('\n')
      .filter((l) => l.trim().startsWith('curl '));
    expect(lines.length).toBeGreaterThanOrEqual(5);
    for (const line of lines) {
      const res = await curl(line.trim());
      expect(res.status, line).toBe(200);
    }

    const dlr = await curl(lines.find((l) => l.includes('/dlr?')) as string);
    const items = (await dlr.json()) as { to: string; drStatuscode?: string }[];
    expect(items.map((i) => i.to)).toEqual(['447700900201', '447700900202', '33612345678']);
    const history = await curl(lines.find((l) => l.includes('channel=WHATSAPP')) as string);
    const page = (await history.json()) as { messages: unknown[]; hasMore: boolean; nextCursor: string };
    expect(page.messages).toHaveLength(5);
    expect(page.hasMore).toBe(true);

    // The generated pepper is kept beside the database, readable by its owner only.
    expect(statSync(join(dir, 'demo', 'waybill.pepper')).mode & 0o777).toBe(0o600);
    await server.stop();

    // A restart keeps the data (and the pepper: the cursor of the first run still works) and loads nothing twice.
    const again = await serve(['--database-url', `sqlite:${db}`]);
    expect(again.output()).toContain('Demo account:');
    expect(again.output()).not.toContain('loaded the demo account');
    const next = await fetch(
      `${again.url}/messages?channel=WHATSAPP&channelUserId=447700900123&size=5&cursor=${page.nextCursor}`,
      {
        headers: { authorization: `Basic ${Buffer.from('DEMOKEY1:DEMOSECR').toString('base64')}` },
      },
    );
    expect(next.status).toBe(200);
    expect(((await next.json()) as { messages: unknown[] }).messages).toHaveLength(5);
    await again.stop();
  });

  it('serves an account created by the CLI, and no demo with --no-demo', async () => {
    const db = `sqlite:${join(dir, 'accounts.db')}`;
    const env = { DATABASE_URL: db, WAYBILL_PEPPER: 'cli-test-pepper-0123456789' };
    const created = await run(
      ['accounts', 'create', '--name', 'CLI Co', '--ip-whitelist', '127.0.0.1,::1'],
      env,
    );
    expect(created.code, created.stderr).toBe(0);
    const account = JSON.parse(created.stdout) as {
      id: string;
      key: string;
      secret: string;
      ipWhitelist: string[];
    };
    expect(account.key).toMatch(/^[A-Za-z0-9]{8}$/);
    expect(account.secret).toMatch(/^[A-Za-z0-9]{8}$/);
    expect(account.ipWhitelist).toEqual(['127.0.0.1', '::1']);

    const shown = await run(['accounts', 'show', account.key], env);
    expect(shown.code).toBe(0);
    expect(shown.stdout).not.toContain(account.secret);
    expect(JSON.parse(shown.stdout)).toMatchObject({ id: account.id, name: 'CLI Co' });

    const rotated = await run(['accounts', 'rotate-secret', account.id], env);
    expect(rotated.code).toBe(0);
    const { secret } = JSON.parse(rotated.stdout) as { secret: string };
    expect(secret).not.toBe(account.secret);

    const server = await serve(['--no-demo'], env);
    expect(server.output()).not.toContain('Demo account:');
    const ok = await fetch(`${server.url}/dlr?key=${account.key}&secret=${secret}&messageid=nothing`);
    expect(await ok.json()).toEqual([]);
    const old = await fetch(
      `${server.url}/dlr?key=${account.key}&secret=${account.secret}&messageid=nothing`,
    );
    expect(await old.json()).toEqual({ code: 4, descr: 'Invalid credentials' });
    await server.stop();
  });
});

describe('waybill commands', () => {
  it('migrate brings a new database up to date', async () => {
    const result = await run(['migrate', '--database-url', `sqlite:${join(dir, 'migrate.db')}`]);
    expect(result).toMatchObject({ code: 0 });
    expect(result.stdout).toMatch(/^applied \d+ migrations:\n {2}1 {2}initial schema\n/);
  });

  it('prune removes old messages and checks its argument', async () => {
    const db = `sqlite:${join(dir, 'prune.db')}`;
    const result = await run(['prune', '--older-than', '30', '--database-url', db]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/removed 0 message record/);
    expect((await run(['prune', '--older-than', 'soon', '--database-url', db])).code).toBe(2);
    expect((await run(['prune', '--database-url', db])).code).toBe(2);
  });

  it('answers bad usage with exit code 2 and a message', async () => {
    const unknown = await run(['frobnicate']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown command');
    const badPort = await run(['serve', '--port', 'eighty']);
    expect(badPort.code).toBe(2);
    expect(badPort.stderr).toContain('PORT');
    expect((await run(['accounts', 'create'])).code).toBe(2);
    expect((await run(['serve', '--no-such-flag'])).code).toBe(2);
  });
});
