import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAll, run, type Served, serve } from '../support/processes.js';

/**
 * `waybill receipts` and `waybill deliveries` against a real server: the built CLI as a user runs it,
 * talking HTTP to `waybill serve` on an in-memory database.
 */

const MAIN = resolve(import.meta.dirname, '../../dist/cli/main.js');
const TOKEN = randomBytes(16).toString('hex');

interface Account {
  id: string;
  key: string;
  secret: string;
}

interface FeedPage {
  receipts: { id: string; recordedAt: string; receipt: Record<string, unknown> }[];
  nextCursor: string;
  hasMore: boolean;
}

interface Delivery {
  id: string;
  eventId: string;
  messageId: string;
  to: string;
  state: string;
  attempts: number;
  nextAttemptAt: string | null;
  payload: Record<string, unknown>;
  attemptLog?: { httpStatus: number | null; error: string | null }[];
}

let server: Served;
let receiver: Server;
let receiverUrl = '';
/** What the callback receiver answers on /flaky; /ok always answers 204. */
let flakyStatus = 500;

async function admin<T>(method: string, path: string, body?: unknown, expected = 200): Promise<T> {
  const response = await fetch(`${server.url}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (response.status !== expected) throw new Error(`${method} ${path} -> ${response.status}: ${text}`);
  return JSON.parse(text) as T;
}

const createAccount = (callbackPath: string): Promise<Account> =>
  admin(
    'POST',
    '/accounts',
    { name: `cli-${callbackPath}`, callbackUrl: `${receiverUrl}${callbackPath}` },
    201,
  );

const clientEnv = (account: Account) => ({
  WAYBILL_URL: server.url,
  WAYBILL_KEY: account.key,
  WAYBILL_SECRET: account.secret,
});
const adminEnv = () => ({ WAYBILL_URL: server.url, WAYBILL_ADMIN_TOKEN: TOKEN });

async function eventually<T>(probe: () => Promise<T | undefined>, what: string, ms = 10_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

beforeAll(async () => {
  receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(req.url === '/flaky' ? flakyStatus : 204).end());
  });
  await new Promise<void>((ready) => receiver.listen(0, '127.0.0.1', ready));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  server = await serve(['--no-demo'], {
    DATABASE_URL: 'sqlite::memory:',
    WAYBILL_ADMIN_TOKEN: TOKEN,
    WAYBILL_PEPPER: randomBytes(16).toString('hex'),
    WAYBILL_ACCESS_LOG: 'off',
    WAYBILL_CALLBACK_ALLOW_PRIVATE: 'true',
    WAYBILL_CALLBACK_RETRY_SCHEDULE: '0.05',
  });
});

afterAll(async () => {
  await server?.stop();
  killAll();
  await new Promise((done) => receiver?.close(done));
});

describe('waybill receipts', () => {
  let account: Account;
  const TO = ['447700900401', '447700900402'];

  beforeAll(async () => {
    account = await createAccount('/ok');
    await admin('POST', `/accounts/${account.id}/messages`, {
      messages: TO.map((to) => ({ id: 'cli-1', channel: 'SMS', channelUserId: to, sms: { status: '0' } })),
    });
    await admin('POST', `/accounts/${account.id}/receipts`, {
      receipts: [
        { messageId: 'cli-1', to: TO[0], drStatuscode: 'accepted', drTime: '2026-11-22 10:00:01.000' },
        { messageId: 'cli-1', to: TO[0], drStatuscode: 'delivered', drTime: '2026-11-22 10:00:02.000' },
        {
          messageId: 'cli-1',
          to: TO[1],
          drStatuscode: 'failed',
          drErrcode: 3,
          drTime: '2026-11-22 10:00:03.000',
        },
      ],
    });
  });

  it('prints a table of the events up to now and the command that resumes after them', async () => {
    const result = await run(['receipts'], clientEnv(account));
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID\s+RECORDED \(UTC\)\s+MESSAGEID\s+TO\s+RECEIPT\s+ERRCODE$/);
    expect(lines.slice(1, 4).map((l) => l.split(/\s+/).slice(2, 5))).toEqual([
      ['cli-1', TO[0], 'accepted'],
      ['cli-1', TO[0], 'delivered'],
      ['cli-1', TO[1], 'failed'],
    ]);
    expect(lines[3]).toContain('3 Number deactivated or invalid');
    expect(lines.at(-1)).toMatch(/^3 receipt events\. Resume with: waybill receipts --after \S+$/);

    const cursor = /--after (\S+)$/.exec(lines.at(-1) ?? '')?.[1] ?? '';
    const none = await run(['receipts', '--after', cursor], clientEnv(account));
    expect(none.code).toBe(0);
    expect(none.stdout).toBe(
      `No receipt events after this cursor. Resume with: waybill receipts --after ${cursor}\n`,
    );
  });

  it('prints the pages as the API returns them with --json, one per line', async () => {
    const result = await run(['receipts', '--json', '--limit', '2'], clientEnv(account));
    expect(result.code, result.stderr).toBe(0);
    const pages = result.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as FeedPage);
    expect(pages.map((p) => [p.receipts.length, p.hasMore])).toEqual([
      [2, true],
      [1, false],
    ]);
    const direct = await fetch(`${server.url}/receipts?limit=2`, {
      headers: {
        authorization: `Basic ${Buffer.from(`${account.key}:${account.secret}`).toString('base64')}`,
      },
    });
    expect(pages[0]).toEqual(await direct.json());
    expect(Object.keys(pages[0]?.receipts[0]?.receipt ?? {})).not.toContain('drTimeDate');
  });

  // Eight processes of the CLI, one after another: on a loaded CI machine they can take more than 20 s.
  it('maps failures to exit codes 1, 2 and 3', { timeout: 60_000 }, async () => {
    const env = clientEnv(account);
    expect((await run(['receipts', '--after', 'forged.cursor'], env)).code).toBe(1);
    expect((await run(['receipts'], { ...env, WAYBILL_SECRET: 'WRONGSEC' })).code).toBe(1);
    expect((await run(['receipts', '--limit', '1001'], env)).code).toBe(2);
    expect((await run(['receipts', '--interval', '1'], env)).code).toBe(2);
    expect((await run(['receipts', '--follow', '--interval', '0'], env)).code).toBe(2);
    expect((await run(['receipts', 'extra'], env)).code).toBe(2);
    expect((await run(['receipts'], { ...env, WAYBILL_URL: '' })).code).toBe(2);
    expect((await run(['receipts', '--url', 'http://127.0.0.1:9'], env)).code).toBe(3);
  });

  it('follows with --follow until SIGINT, one JSON line per new event, then exits 0', async () => {
    const child: ChildProcess = spawn(
      process.execPath,
      [MAIN, 'receipts', '--follow', '--json', '--interval', '0.1'],
      { env: { ...process.env, ...clientEnv(account) } },
    );
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
    const lines = () =>
      stdout
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as FeedPage['receipts'][number]);
    try {
      await eventually(async () => (lines().length >= 3 ? true : undefined), 'the existing events');
      await new Promise((r) => setTimeout(r, 300)); // a few empty polls
      await admin('POST', `/accounts/${account.id}/receipts`, {
        receipts: [{ messageId: 'cli-1', to: TO[1], drStatuscode: 'failed', drErrcode: 3 }], // no change: no event
      });
      await admin('POST', `/accounts/${account.id}/receipts`, {
        receipts: [{ messageId: 'cli-1', to: TO[1], drStatuscode: 'expired', drErrcode: 6 }],
      });
      await eventually(async () => (lines().length >= 4 ? true : undefined), 'the new event');
      await new Promise((r) => setTimeout(r, 300));
      child.kill('SIGINT');
      expect(await exited).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
    const events = lines();
    expect(events.map((e) => e.receipt.drStatuscode)).toEqual(['accepted', 'delivered', 'failed', 'expired']);
    expect(new Set(events.map((e) => e.id)).size).toBe(4);
    const cursor = /Resume with: waybill receipts --after (\S+)/.exec(stderr)?.[1];
    expect(cursor, stderr).toBeDefined();
    const after = await run(['receipts', '--json', '--after', cursor ?? ''], clientEnv(account));
    expect(JSON.parse(after.stdout)).toEqual({ receipts: [], nextCursor: cursor, hasMore: false });
  });
});

describe('waybill deliveries', () => {
  let account: Account;
  let eventIds: string[];

  beforeAll(async () => {
    account = await createAccount('/ok');
    await admin('POST', `/accounts/${account.id}/messages`, {
      messages: [{ id: 'dl-1', channel: 'SMS', channelUserId: '447700900501', sms: { status: '0' } }],
    });
    // One batch: the accepted delivery is still pending when the delivered one is queued, so it is superseded.
    await admin('POST', `/accounts/${account.id}/receipts`, {
      receipts: [
        { messageId: 'dl-1', drStatuscode: 'accepted', drTime: '2026-11-22 10:00:01.000' },
        { messageId: 'dl-1', drStatuscode: 'delivered', drTime: '2026-11-22 10:00:02.000' },
      ],
    });
    const feed = await fetch(`${server.url}/receipts`, {
      headers: {
        authorization: `Basic ${Buffer.from(`${account.key}:${account.secret}`).toString('base64')}`,
      },
    });
    eventIds = ((await feed.json()) as FeedPage).receipts.map((e) => e.id);
    expect(eventIds).toHaveLength(2);
  });

  it('lists the deliveries newest first, one page at a time', async () => {
    const json = await run(['deliveries', 'list', account.id, '--json'], adminEnv());
    expect(json.code, json.stderr).toBe(0);
    const page = JSON.parse(json.stdout) as {
      deliveries: Delivery[];
      hasMore: boolean;
      nextCursor: string | null;
    };
    expect(page.deliveries.map((d) => d.id)).toEqual([...eventIds].reverse());
    expect(page.deliveries[1]?.state).toBe('superseded');
    expect(page.hasMore).toBe(false);

    const table = await run(['deliveries', 'list', account.id, '--limit', '1'], adminEnv());
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/^ID\s+STATE\s+MESSAGEID\s+TO\s+ATTEMPTS/);
    expect(table.stdout).toContain(eventIds[1]);
    const next = /--cursor (\S+)/.exec(table.stdout)?.[1];
    expect(next).toBeDefined();
    const older = await run(
      ['deliveries', 'list', account.id, '--limit', '1', '--cursor', next ?? ''],
      adminEnv(),
    );
    expect(older.stdout).toContain(eventIds[0]);
    expect(older.stdout).toContain('superseded');
    expect(older.stdout).not.toContain('--cursor');

    const superseded = await run(
      ['deliveries', 'list', account.id, '--state', 'superseded', '--json'],
      adminEnv(),
    );
    expect((JSON.parse(superseded.stdout) as { deliveries: Delivery[] }).deliveries.map((d) => d.id)).toEqual(
      [eventIds[0]],
    );
  });

  it('shows one delivery with its payload and attempts', async () => {
    const json = await run(['deliveries', 'show', account.id, eventIds[0] ?? '', '--json'], adminEnv());
    expect(json.code, json.stderr).toBe(0);
    const detail = JSON.parse(json.stdout) as Delivery;
    expect(detail).toMatchObject({
      id: eventIds[0],
      eventId: eventIds[0],
      state: 'superseded',
      to: '447700900501',
    });
    expect(detail.payload).toMatchObject({ messageid: 'dl-1', drStatuscode: 'accepted' });
    expect(Array.isArray(detail.attemptLog)).toBe(true);

    const text = await run(['deliveries', 'show', account.id, eventIds[0] ?? ''], adminEnv());
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^Delivery:\s+evt_/);
    expect(text.stdout).toMatch(/State:\s+superseded/);
    expect(text.stdout).toContain('"drStatuscode":"accepted"');
  });

  it('redelivers one delivery; a superseded one is a conflict (exit 1)', async () => {
    const ok = await run(['deliveries', 'redeliver', account.id, eventIds[1] ?? '', '--json'], adminEnv());
    expect(ok.code, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ id: eventIds[1], state: 'pending', attempts: 0 });
    const text = await run(['deliveries', 'redeliver', account.id, eventIds[1] ?? ''], adminEnv());
    expect(text.stdout).toMatch(/^Delivery evt_\w+ is pending again; next attempt due at /);

    const conflict = await run(['deliveries', 'redeliver', account.id, eventIds[0] ?? ''], adminEnv());
    expect(conflict.code).toBe(1);
    expect(conflict.stderr).toContain('conflict');
  });

  // Sixteen processes of the CLI: a loaded CI machine took longer than the default 20 s for them.
  it('maps failures to exit codes 1, 2 and 3', { timeout: 60_000 }, async () => {
    const env = adminEnv();
    const missing = await run(['deliveries', 'show', account.id, 'evt_00000000000000000000000000'], env);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('not_found');
    const unknownAccount = await run(['deliveries', 'list', '00000000-0000-7000-8000-000000000000'], env);
    expect(unknownAccount.code).toBe(1);
    const wrongToken = await run(['deliveries', 'list', account.id], {
      ...env,
      WAYBILL_ADMIN_TOKEN: 'wrong',
    });
    expect(wrongToken.code).toBe(1);
    expect(wrongToken.stderr).toContain('WAYBILL_ADMIN_TOKEN');

    // Usage errors, refused before any request: run side by side, sixteen processes one after another took
    // longer than a test's 20 s on a slow machine.
    const usage = [
      ['deliveries'],
      ['deliveries', 'frob', account.id],
      ['deliveries', 'list'],
      ['deliveries', 'list', 'not-a-uuid'],
      ['deliveries', 'list', account.id, '--state', 'lost'],
      ['deliveries', 'list', account.id, '--limit', '101'],
      ['deliveries', 'show', account.id],
      ['deliveries', 'show', account.id, 'evt_x', '--dead'],
      ['deliveries', 'redeliver', account.id],
      ['deliveries', 'redeliver', account.id, 'evt_x', '--dead'],
      ['deliveries', 'redeliver', account.id, '--dead', '--state', 'dead'],
    ];
    const codes = await Promise.all(usage.map(async (args) => [args.join(' '), (await run(args, env)).code]));
    expect(codes).toEqual(usage.map((args) => [args.join(' '), 2]));
    expect((await run(['deliveries', 'list', account.id], { WAYBILL_URL: server.url })).code).toBe(2);
    expect((await run(['deliveries', 'list', account.id, '--url', 'http://127.0.0.1:9'], env)).code).toBe(3);
  });

  it('redelivers every dead delivery with --dead', async () => {
    flakyStatus = 500;
    const flaky = await createAccount('/flaky');
    await admin('POST', `/accounts/${flaky.id}/messages`, {
      messages: [{ id: 'dead-1', channel: 'SMS', channelUserId: '447700900601', sms: { status: '0' } }],
    });
    await admin('POST', `/accounts/${flaky.id}/receipts`, {
      receipts: [{ messageId: 'dead-1', drStatuscode: 'delivered' }],
    });
    const listState = async (state: string) => {
      const result = await run(['deliveries', 'list', flaky.id, '--state', state, '--json'], adminEnv());
      return (JSON.parse(result.stdout) as { deliveries: Delivery[] }).deliveries;
    };
    const [dead] = await eventually(async () => {
      const found = await listState('dead');
      return found.length > 0 ? found : undefined;
    }, 'a dead delivery');
    const shown = await run(['deliveries', 'show', flaky.id, dead?.id ?? '', '--json'], adminEnv());
    const detail = JSON.parse(shown.stdout) as Delivery;
    expect(detail.attemptLog?.map((a) => a.httpStatus)).toEqual([500, 500]);

    flakyStatus = 204;
    const again = await run(['deliveries', 'redeliver', flaky.id, '--dead'], adminEnv());
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toBe('Queued 1 dead delivery again.\n');
    await eventually(
      async () => ((await listState('delivered')).length === 1 ? true : undefined),
      'delivery',
    );
    const none = await run(['deliveries', 'redeliver', flaky.id, '--dead', '--json'], adminEnv());
    expect(JSON.parse(none.stdout)).toEqual({ redelivered: 0 });
  });
  it('backfills an account whose callbacks were off, once they are back on', async () => {
    const off = await createAccount('/ok');
    await admin('PATCH', `/accounts/${off.id}`, { callbackEnabled: false });
    const since = new Date(Date.now() - 60_000).toISOString();
    await admin('POST', `/accounts/${off.id}/messages`, {
      messages: [{ id: 'bf-1', channel: 'SMS', channelUserId: '447700900701', sms: { status: '0' } }],
    });
    await admin('POST', `/accounts/${off.id}/receipts`, {
      receipts: [{ messageId: 'bf-1', drStatuscode: 'delivered' }],
    });
    const refused = await run(['deliveries', 'backfill', off.id, '--since', since], adminEnv());
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('conflict');

    await admin('PATCH', `/accounts/${off.id}`, { callbackEnabled: true });
    const done = await run(['deliveries', 'backfill', off.id, '--since', since], adminEnv());
    expect(done.code, done.stderr).toBe(0);
    expect(done.stdout).toBe('Queued 1 delivery: the latest state of each recipient.\n');
    const again = await run(['deliveries', 'backfill', off.id, '--since', since, '--json'], adminEnv());
    expect(JSON.parse(again.stdout)).toEqual({ queued: 0 });
    for (const args of [
      ['deliveries', 'backfill', off.id],
      ['deliveries', 'backfill', off.id, '--since', 'yesterday'],
      ['deliveries', 'list', off.id, '--since', since],
    ]) {
      expect((await run(args, adminEnv())).code, args.join(' ')).toBe(2);
    }
  });
});
