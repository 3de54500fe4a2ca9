import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAll, type Result, type Served, serve } from '../support/processes.js';

/**
 * `waybill ingest`, `waybill accounts update` and `waybill accounts rotate-callback-secret` as an operator runs
 * them: the built CLI against `waybill serve` on a SQLite file both of them open.
 */

const MAIN = resolve(import.meta.dirname, '../../dist/cli/main.js');
const TOKEN = randomBytes(16).toString('hex');
const PEPPER = randomBytes(16).toString('hex');

interface Account {
  id: string;
  key: string;
  secret: string;
  callbackSecret: string;
}

let dir = '';
let database = '';
let server: Served;

/** The built CLI with `input` on its stdin (the child gets none of the test's database or token settings). */
function waybill(args: string[], env: Record<string, string> = {}, input = ''): Promise<Result> {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(
      ([k]) =>
        !['DATABASE_URL', 'REDIS_URL', 'WAYBILL_PEPPER', 'WAYBILL_ADMIN_TOKEN', 'WAYBILL_URL'].includes(k),
    ),
  );
  const child = spawn(process.execPath, [MAIN, ...args], { env: { ...base, ...env } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  child.stdin.end(input);
  return new Promise((done) => child.once('close', (code) => done({ code: code ?? 1, stdout, stderr })));
}

const adminEnv = () => ({ WAYBILL_URL: server.url, WAYBILL_ADMIN_TOKEN: TOKEN });
const databaseEnv = () => ({ DATABASE_URL: database, WAYBILL_PEPPER: PEPPER });

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

const createAccount = (name: string) => admin<Account>('POST', '/accounts', { name }, 201);

/** The ids of `ids` the account has stored, through GET /messages. */
async function stored(account: Account, ids: string[]): Promise<string[]> {
  const response = await fetch(`${server.url}/messages?messageIds=${ids.join(',')}`, {
    headers: { authorization: `Basic ${Buffer.from(`${account.key}:${account.secret}`).toString('base64')}` },
  });
  const body = (await response.json()) as { messages: { id: string }[] };
  return body.messages.map((m) => m.id).sort();
}

const sms = (i: number) => ({
  id: `in-${i}`,
  channel: 'SMS',
  channelUserId: `4477009${String(i).padStart(5, '0')}`,
});

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'waybill-ingest-'));
  database = `sqlite:${join(dir, 'waybill.db')}`;
  server = await serve(['--no-demo'], {
    DATABASE_URL: database,
    WAYBILL_PEPPER: PEPPER,
    WAYBILL_ADMIN_TOKEN: TOKEN,
    WAYBILL_ACCESS_LOG: 'off',
    WAYBILL_CALLBACK_ALLOW_PRIVATE: 'true',
  });
});

afterAll(async () => {
  await server?.stop();
  killAll();
  rmSync(dir, { recursive: true, force: true });
});

describe('waybill ingest', () => {
  it('sends NDJSON in batches of 1000 and names refused items by their place in the whole input', async () => {
    const account = await createAccount('ndjson');
    const items: Record<string, unknown>[] = Array.from({ length: 2500 }, (_, i) => sms(i));
    items[1234] = { ...sms(1234), colour: 'red' };
    items[2100] = { ...sms(2100), channel: 'PIGEON' };
    const file = join(dir, 'messages.ndjson');
    writeFileSync(file, `${items.map((m) => JSON.stringify(m)).join('\n')}\n`);

    const stopped = await waybill(['ingest', 'messages', account.id, file], adminEnv());
    expect(stopped.code).toBe(1);
    expect(stopped.stderr).toContain('item 1234 (line 1235): unknown field "colour"');
    expect(stopped.stderr).not.toContain('item 234 ');
    expect(stopped.stderr).not.toContain('item 2100');
    expect(stopped.stderr).toContain(
      'nothing of items 1000-1999 was written; 500 messages after it were not sent',
    );
    expect(stopped.stdout).toBe('1000 messages accepted.\n');
    expect(await stored(account, ['in-999', 'in-1000', 'in-2000'])).toEqual(['in-999']);

    const all = await waybill(['ingest', 'messages', account.id, file, '--keep-going', '--json'], adminEnv());
    expect(all.code).toBe(1);
    const outcome = JSON.parse(all.stdout) as { accepted: number; errors: { index: number; line: number }[] };
    expect(outcome.accepted).toBe(1000);
    expect(outcome.errors.map((e) => [e.index, e.line])).toEqual([
      [1234, 1235],
      [2100, 2101],
    ]);
    expect(all.stderr).toMatch(/item 2100 \(line 2101\): .*channel/);
    expect(all.stderr).toContain('nothing of items 1000-1999, items 2000-2499 was written');
    expect(await stored(account, ['in-999', 'in-1000', 'in-2000'])).toEqual(['in-999']);

    // Fixed, the whole file again: the first thousand are updated in place, the rest written.
    writeFileSync(file, items.map((_, i) => JSON.stringify(sms(i))).join('\n'));
    const fixed = await waybill(['ingest', 'messages', account.id, file], adminEnv());
    expect(fixed).toMatchObject({ code: 0, stdout: '2500 messages accepted.\n' });
    expect(await stored(account, ['in-999', 'in-1000', 'in-2499'])).toEqual(['in-1000', 'in-2499', 'in-999']);
  });

  it('cuts batches under the 5 MiB body limit as well as at 1000 items', async () => {
    const account = await createAccount('large');
    // 200 items of 60 kB: 12 MB in all, which the server would refuse (413) as one body.
    const text = 'x'.repeat(60_000);
    const items = Array.from({ length: 200 }, (_, i) => ({ ...sms(i), text }));
    const file = join(dir, 'large.json');
    writeFileSync(file, JSON.stringify(items));
    const result = await waybill(['ingest', 'messages', account.id, file], adminEnv());
    expect(result, result.stderr).toMatchObject({ code: 0, stdout: '200 messages accepted.\n' });
    expect(await stored(account, ['in-0', 'in-199'])).toEqual(['in-0', 'in-199']);
  });

  const hasScript = spawnSync('script', ['--version']).status === 0;
  it.skipIf(!hasScript)('shows its progress on a terminal, and clears the line at the end', async () => {
    const account = await createAccount('terminal');
    const file = join(dir, 'terminal.ndjson');
    writeFileSync(file, Array.from({ length: 1500 }, (_, i) => JSON.stringify(sms(i))).join('\n'));
    const quote = (word: string) => `'${word.replaceAll("'", `'\\''`)}'`;
    const line = [process.execPath, MAIN, 'ingest', 'messages', account.id, file].map(quote).join(' ');
    // util-linux `script` runs the command on a pseudo-terminal (stdout and stderr both) and copies its output.
    const result = spawnSync('script', ['-qec', line, '/dev/null'], {
      encoding: 'utf8',
      timeout: 30_000,
      env: { ...process.env, ...adminEnv() },
    });
    expect(result.status, result.stdout).toBe(0);
    expect(result.stdout).toContain('\rsending 1500 messages… 0 s\x1b[K');
    expect(result.stdout).toContain('\r\x1b[K1500 messages accepted.');
  });

  it('takes the API body or a JSON array on stdin, and reports receipts as the API counts them', async () => {
    const account = await createAccount('stdin');
    const messages = { messages: [{ ...sms(1), id: 'rc-1', sms: { status: '0' } }] };
    const sent = await waybill(['ingest', 'messages', account.id, '-'], adminEnv(), JSON.stringify(messages));
    expect(sent).toMatchObject({ code: 0, stdout: '1 message accepted.\n' });

    const receipts = [
      { messageId: 'rc-1', drStatuscode: 'delivered', drTime: '2026-11-22 10:00:02.000' },
      { messageId: 'rc-1', drStatuscode: 'delivered', drTime: '2026-11-22 10:00:02.000' },
      { messageId: 'rc-later', drStatuscode: 'delivered' },
    ];
    const result = await waybill(
      ['ingest', 'receipts', account.id, '-', '--json'],
      adminEnv(),
      JSON.stringify(receipts),
    );
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({
      applied: 1,
      ignored: 1,
      unknown: [{ messageId: 'rc-later', to: null }],
    });
    const table = await waybill(
      ['ingest', 'receipts', account.id, '-'],
      adminEnv(),
      JSON.stringify({ receipts }),
    );
    expect(table.stdout).toContain('3 receipts sent: 0 applied, 2 ignored, 1 unknown.');
    expect(table.stdout).toContain('  rc-later\n');

    const dlr = await fetch(`${server.url}/dlr?key=${account.key}&secret=${account.secret}&messageid=rc-1`);
    expect(JSON.stringify(await dlr.json())).toContain('"drStatuscode":"delivered"');
  });

  it('refuses unreadable input and bad usage before sending anything (exit 2)', async () => {
    const account = await createAccount('usage');
    const env = adminEnv();
    const wrongKind = await waybill(
      ['ingest', 'messages', account.id, '-'],
      env,
      '{"receipts":[{"messageId":"x"}]}',
    );
    expect(wrongKind.code).toBe(2);
    expect(wrongKind.stderr).toContain('the input holds receipts, not messages');
    const broken = await waybill(['ingest', 'messages', account.id, '-'], env, '{"id":"a"}\n{"id":\n');
    expect(broken.code).toBe(2);
    expect(broken.stderr).toContain('line 2 is not JSON');
    expect((await waybill(['ingest', 'messages', account.id, '-'], env, '  \n')).code).toBe(2);
    expect(
      (await waybill(['ingest', 'messages', account.id, join(dir, 'missing.json')], env)).stderr,
    ).toContain('no such file');
    expect((await waybill(['ingest', 'messages', 'not-a-uuid', '-'], env, '[]')).code).toBe(2);
    expect((await waybill(['ingest', 'messages', account.id], env)).code).toBe(2);
    const noToken = await waybill(
      ['ingest', 'messages', account.id, '-'],
      { WAYBILL_URL: server.url },
      '[{}]',
    );
    expect(noToken.code).toBe(2);
    expect(noToken.stderr).toContain('WAYBILL_ADMIN_TOKEN');
    expect(await stored(account, ['a'])).toEqual([]);
  });

  it('exits 1 when the API refuses the request and 3 when the server cannot be reached', async () => {
    const account = await createAccount('failures');
    const input = JSON.stringify([sms(7)]);
    const wrong = await waybill(
      ['ingest', 'messages', account.id, '-'],
      { ...adminEnv(), WAYBILL_ADMIN_TOKEN: 'not-the-token' },
      input,
    );
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain('check WAYBILL_ADMIN_TOKEN');
    expect(wrong.stderr).not.toContain('not-the-token');
    const unknownAccount = await waybill(
      ['ingest', 'messages', '00000000-0000-7000-8000-000000000000', '-'],
      adminEnv(),
      input,
    );
    expect(unknownAccount.code).toBe(1);
    const down = await waybill(
      ['ingest', 'messages', account.id, '-', '--url', 'http://127.0.0.1:9'],
      adminEnv(),
      input,
    );
    expect(down.code).toBe(3);
  });
});

describe('waybill accounts update and rotate-callback-secret', () => {
  it('changes only the given fields, and the running server answers with them', async () => {
    const account = await createAccount('update');
    const updated = await waybill(
      [
        'accounts',
        'update',
        account.id,
        '--callback-url',
        'https://hooks.example.com/dlr',
        '--balance',
        '12.5',
        '--ip-whitelist',
        '10.0.0.0/8,::1',
      ],
      databaseEnv(),
    );
    expect(updated.code, updated.stderr).toBe(0);
    const printed = JSON.parse(updated.stdout) as Record<string, unknown>;
    expect(printed).toMatchObject({
      id: account.id,
      name: 'update',
      balance: 12.5,
      ipWhitelist: ['10.0.0.0/8', '::1'],
    });
    expect(printed).not.toHaveProperty('secret');
    expect(await admin('GET', `/accounts/${account.id}`)).toMatchObject({
      callbackUrl: 'https://hooks.example.com/dlr',
      balance: 12.5,
      dlrQueryEnabled: true,
    });

    const paused = await waybill(
      ['accounts', 'update', account.key, '--callback-enabled', 'false', '--no-callback-url'],
      databaseEnv(),
    );
    expect(paused.code, paused.stderr).toBe(0);
    expect(await admin('GET', `/accounts/${account.id}`)).toMatchObject({
      callbackUrl: null,
      callbackEnabled: false,
      balance: 12.5,
    });
  });

  it('refuses what the operator API refuses, and an update without a field (exit 2)', async () => {
    const account = await createAccount('refuse');
    const env = databaseEnv();
    const ftp = await waybill(
      ['accounts', 'update', account.id, '--callback-url', 'ftp://example.com/'],
      env,
    );
    expect(ftp.code).toBe(2);
    expect(ftp.stderr).toContain('--callback-url');
    const range = await waybill(['accounts', 'update', account.id, '--ip-whitelist', '10.0.0.1/8'], env);
    expect(range.code).toBe(2);
    expect(range.stderr).toContain('--ip-whitelist: "10.0.0.1/8" has host bits set');
    expect((await waybill(['accounts', 'update', account.id, '--callback-enabled', 'yes'], env)).code).toBe(
      2,
    );
    expect((await waybill(['accounts', 'update', account.id], env)).code).toBe(2);
    expect(
      (
        await waybill(
          ['accounts', 'update', account.id, '--callback-url', 'https://a.example/', '--no-callback-url'],
          env,
        )
      ).code,
    ).toBe(2);
    expect(
      (await waybill(['accounts', 'update', '00000000-0000-7000-8000-000000000000', '--balance', '1'], env))
        .code,
    ).toBe(1);
  });

  it('prints a new callback secret once, and the running server signs with it', async () => {
    const pushes: { body: string; headers: IncomingHttpHeaders }[] = [];
    const receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => {
        body += chunk.toString();
      });
      req.on('end', () => {
        pushes.push({ body, headers: req.headers });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((ready) => receiver.listen(0, '127.0.0.1', ready));
    try {
      const port = (receiver.address() as AddressInfo).port;
      const account = await admin<Account>(
        'POST',
        '/accounts',
        { name: 'rotate', callbackUrl: `http://127.0.0.1:${port}/dlr` },
        201,
      );
      const rotated = await waybill(['accounts', 'rotate-callback-secret', account.id], databaseEnv());
      expect(rotated.code, rotated.stderr).toBe(0);
      const { callbackSecret } = JSON.parse(rotated.stdout) as { callbackSecret: string };
      expect(callbackSecret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      expect(callbackSecret).not.toBe(account.callbackSecret);
      const shown = await waybill(['accounts', 'show', account.id], databaseEnv());
      expect(shown.stdout).not.toContain('whsec_');

      const message = JSON.stringify([{ ...sms(1), id: 'signed-1', sms: { status: '0' } }]);
      expect((await waybill(['ingest', 'messages', account.id, '-'], adminEnv(), message)).code).toBe(0);
      const receipt = JSON.stringify([{ messageId: 'signed-1', drStatuscode: 'delivered' }]);
      expect((await waybill(['ingest', 'receipts', account.id, '-'], adminEnv(), receipt)).code).toBe(0);
      for (let waited = 0; pushes.length === 0 && waited < 10_000; waited += 50) {
        await new Promise((r) => setTimeout(r, 50));
      }
      const push = pushes[0];
      expect(push, 'no callback arrived').toBeDefined();
      const headers = push?.headers as Record<string, string>;
      expect(() => new Webhook(callbackSecret).verify(push?.body ?? '', headers)).not.toThrow();
    } finally {
      await new Promise((done) => receiver.close(done));
    }

    const help = await waybill(['accounts', 'rotate-callback-secret', '--help']);
    expect(help).toMatchObject({ code: 0 });
    expect(help.stdout).toContain('WAYBILL_CALLBACK_SECRET_GRACE_SECONDS');
  });
});
