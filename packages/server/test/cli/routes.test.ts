import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAll, run, type Served, serve } from '../support/processes.js';

/** `waybill routes` against a real server: the built CLI talking HTTP to `waybill serve` on an in-memory database. */

const TOKEN = randomBytes(16).toString('hex');
let server: Served;
const env = (extra: Record<string, string> = {}) => ({
  WAYBILL_URL: server.url,
  WAYBILL_ADMIN_TOKEN: TOKEN,
  ...extra,
});

beforeAll(async () => {
  server = await serve(['--no-demo'], {
    DATABASE_URL: 'sqlite::memory:',
    WAYBILL_ADMIN_TOKEN: TOKEN,
    WAYBILL_PEPPER: randomBytes(16).toString('hex'),
  });
});
afterAll(async () => {
  await server?.stop();
  killAll();
});

// Each test runs the CLI several times, a process each: generous on a busy machine.
describe('waybill routes', { timeout: 60_000 }, () => {
  it('adds a kannel route and prints its token once; the token works at the adapter and rotates', async () => {
    const added = await run(
      ['routes', 'add', 'kannel-eu', '--kind', 'kannel', '--timezone', 'Europe/Berlin'],
      env(),
    );
    expect(added.code, added.stderr).toBe(0);
    const token = /\n(wbi_[A-Za-z0-9_-]{32})\n/.exec(added.stdout)?.[1];
    expect(token, added.stdout).toBeDefined();
    expect(added.stdout).toContain('Europe/Berlin');

    const shown = await run(['routes', 'show', 'kannel-eu'], env());
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain('0 matched, 0 parked, 0 garbled, 0 ignored');
    expect(shown.stdout).not.toContain(token);

    const rotated = await run(['routes', 'token', 'kannel-eu', '--json'], env());
    expect(rotated.code, rotated.stderr).toBe(0);
    const fresh = (JSON.parse(rotated.stdout) as { token: string }).token;
    expect(fresh).not.toBe(token);
    const old = await fetch(`${server.url}/intake/v1/kannel?token=${token}&type=1`);
    expect(old.status).toBe(401);
    // The fresh token works: an unclaimed carrier id is parked, and Kannel gets its OK.
    const now = await fetch(`${server.url}/intake/v1/kannel?token=${fresh}&type=1&carrierId=x`);
    expect(now.status).toBe(200);
    expect(await now.text()).toBe('OK');
    await fetch(`${server.url}/intake/v1/kannel?token=${fresh}&type=99&reply=junk`);
    const garbled = await run(['routes', 'garbled', 'kannel-eu'], env());
    expect(garbled.code, garbled.stderr).toBe(0);
    expect(garbled.stdout).toContain('type=99&reply=junk');
    expect(server.output()).not.toContain(fresh);
  });

  it('adds an smpp route with the password from the environment, changes it, lists and removes it', async () => {
    const added = await run(
      [
        'routes',
        'add',
        'smsc-1',
        '--kind',
        'smpp',
        '--host',
        'smsc.example',
        '--port',
        '2775',
        '--system-id',
        'wb',
      ],
      env({ WAYBILL_SMPP_PASSWORD: 'sekrit1' }),
    );
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toContain('smsc.example:2775 as wb');
    expect(added.stdout).not.toContain('sekrit1');
    const shown = await run(['routes', 'show', 'smsc-1'], env());
    // The served process binds: nothing listens at smsc.example, so the bind is connecting or backing off.
    expect(shown.stdout).toMatch(/Bind: {6}(connecting|backoff)/);

    const set = await run(['routes', 'set', 'smsc-1', '--disabled', '--error-map', '027=2', '--json'], env());
    expect(set.code, set.stderr).toBe(0);
    expect(JSON.parse(set.stdout)).toMatchObject({ enabled: false, errorMap: { '027': '2' } });

    const list = await run(['routes', 'list'], env());
    expect(list.stdout).toMatch(/smsc-1\s+smpp\s+no\s+any\s+UTC/);

    expect((await run(['routes', 'remove', 'smsc-1'], env())).code).toBe(0);
    const gone = await run(['routes', 'show', 'smsc-1'], env());
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain('no intake route smsc-1');
  });

  it('refuses bad usage with exit 2 and API refusals with exit 1', async () => {
    expect((await run(['routes'], env())).code).toBe(2);
    expect((await run(['routes', 'add', 'Bad Name', '--kind', 'kannel'], env())).code).toBe(2);
    expect((await run(['routes', 'add', 'x'], env())).code).toBe(2);
    expect((await run(['routes', 'set', 'x'], env())).code).toBe(2);
    expect((await run(['routes', 'show', 'x', '--timezone', 'UTC'], env())).code).toBe(2);
    const bad = await run(['routes', 'add', 'x', '--kind', 'kannel', '--timezone', 'Mars/Olympus'], env());
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('timezone');
    const wrong = await run(['routes', 'list'], env({ WAYBILL_ADMIN_TOKEN: 'wrong' }));
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain('WAYBILL_ADMIN_TOKEN');
  });
});
