import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createApiError } from '@waybill/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatWait, retryAfterSeconds } from '../../src/cli/client-commands.js';
import { flagName } from '../../src/cli/options.js';
import { ENV_NAMES } from '../../src/config.js';
import { MIGRATIONS } from '../../src/store/sqlite/migrations.js';
import { killAll, run, type Served, serve } from '../support/processes.js';

/** `--help` and `--version` everywhere, what `migrate` and `prune` report, and what the client commands print. */

const MAIN = resolve(import.meta.dirname, '../../dist/cli/main.js');
const VERSION = (
  JSON.parse(readFileSync(resolve(import.meta.dirname, '../../package.json'), 'utf8')) as { version: string }
).version;

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'waybill-commands-'));
});
afterAll(() => {
  killAll();
  rmSync(dir, { recursive: true, force: true });
});

describe('--help and --version', () => {
  // Each command line, and a text only its own usage has.
  const commands: [string[], RegExp][] = [
    [['serve'], /^Usage: waybill serve /],
    [['migrate'], /^Usage: waybill migrate /],
    [['prune'], /^Usage: waybill prune --older-than/],
    [
      ['accounts'],
      /^Usage:\n {2}waybill accounts create [\s\S]*waybill accounts rotate-secret[\s\S]*waybill accounts delete/,
    ],
    [['accounts', 'create'], /^Usage: waybill accounts create --name NAME[\s\S]*--credit-limit N /],
    [['accounts', 'show'], /^Usage: waybill accounts show <id\|key>\n/],
    [['accounts', 'rotate-secret'], /^Usage: waybill accounts rotate-secret <id\|key>\n/],
    [['accounts', 'delete'], /^Usage: waybill accounts delete <id\|key>\n/],
    [['dlr'], /^Usage: waybill dlr <messageid>/],
    [['messages'], /^Usage:\n {2}waybill messages --ids/],
    [['receipts'], /^Usage: waybill receipts /],
    [['deliveries'], /^Usage:\n {2}waybill deliveries list/],
    [['deliveries', 'list'], /^Usage:\n {2}waybill deliveries list/],
  ];

  it.each(commands)('waybill %s --help and -h print its usage and exit 0', async (args, usage) => {
    for (const flag of ['--help', '-h']) {
      const result = await run([...args, flag]);
      expect(result.code, `${args.join(' ')} ${flag}: ${result.stderr}`).toBe(0);
      expect(result.stdout).toMatch(usage);
      expect(result.stderr).toBe('');
    }
  });

  it('takes --help anywhere on the line, does nothing else, and `waybill help <command>` says the same', async () => {
    const db = join(dir, 'help.db');
    const result = await run([
      'accounts',
      'create',
      '--name',
      'Nobody',
      '--help',
      '--database-url',
      `sqlite:${db}`,
    ]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Usage: waybill accounts create/);
    expect(existsSync(db)).toBe(false);
    expect((await run(['help', 'prune'])).stdout).toBe((await run(['prune', '--help'])).stdout);
  });

  it('lists every setting flag of serve with its variable', async () => {
    const { stdout } = await run(['serve', '--help']);
    for (const [field, variable] of Object.entries(ENV_NAMES)) {
      expect(stdout).toMatch(new RegExp(`^ {2}--${flagName(field)} +${variable}$`, 'm'));
    }
    expect(stdout).toMatch(/^ {2}--no-demo +/m);
  });

  it('prints the version of @waybill/server with --version and -v', async () => {
    for (const flag of ['--version', '-v']) {
      expect(await run([flag])).toEqual({ code: 0, stdout: `${VERSION}\n`, stderr: '' });
    }
  });
});

describe('waybill migrate and prune', () => {
  it('migrate lists the migrations it applied, then says the schema is up to date', async () => {
    const url = `sqlite:${join(dir, 'migrate.db')}`;
    const first = await run(['migrate', '--database-url', url]);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toBe(
      `applied ${MIGRATIONS.length} migrations:\n${MIGRATIONS.map((m) => `  ${m.version}  ${m.name}\n`).join('')}`,
    );
    const again = await run(['migrate', '--database-url', url]);
    expect(again).toMatchObject({ code: 0, stdout: 'schema is up to date\n' });
  });

  it('prune keeps stderr quiet when it is not a terminal', async () => {
    const result = await run([
      'prune',
      '--older-than',
      '30',
      '--database-url',
      `sqlite:${join(dir, 'p.db')}`,
    ]);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe('');
    expect(result.stdout).toMatch(/^removed 0 message record\(s\) created before \S+\n$/);
  });

  const hasScript = spawnSync('script', ['--version']).status === 0;
  it.skipIf(!hasScript)('prune shows a ticking line on a terminal, and clears it at the end', () => {
    const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
    const line = [
      process.execPath,
      MAIN,
      'prune',
      '--older-than',
      '30',
      '--database-url',
      `sqlite:${join(dir, 't.db')}`,
    ]
      .map(quote)
      .join(' ');
    // util-linux `script` runs the command on a pseudo-terminal (stdout and stderr both) and copies its output.
    const result = spawnSync('script', ['-qec', line, '/dev/null'], { encoding: 'utf8', timeout: 30_000 });
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toContain('\rpruning… 0 s\x1b[K');
    expect(result.stdout).toContain('\r\x1b[Kremoved 0 message record');
  });
});

describe('client commands print what the API says', () => {
  let server: Served;
  const env = () => ({ WAYBILL_URL: server.url, WAYBILL_KEY: 'DEMOKEY1', WAYBILL_SECRET: 'DEMOSECR' });
  const api = async (path: string): Promise<unknown> => {
    const response = await fetch(`${server.url}${path}`, {
      headers: { authorization: `Basic ${Buffer.from('DEMOKEY1:DEMOSECR').toString('base64')}` },
    });
    expect(response.status, path).toBe(200);
    return response.json();
  };
  const WHO = ['--channel', 'WHATSAPP', '--user', '447700900123'];
  const HISTORY = '/messages?channel=WHATSAPP&channelUserId=447700900123';

  beforeAll(async () => {
    server = await serve(['--database-url', 'sqlite::memory:'], {
      WAYBILL_LOCKOUT_FAILURES: '3',
      WAYBILL_LOCKOUT_SECONDS: '852',
      WAYBILL_ACCESS_LOG: 'off',
    });
  });
  afterAll(() => server?.stop());

  it('dlr --json prints the items exactly as the API sends them', async () => {
    const result = await run(['dlr', 'demo-sms-multi', '--json'], env());
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).not.toContain('drTimeDate');
    expect(JSON.parse(result.stdout)).toEqual(
      await api('/dlr?key=DEMOKEY1&secret=DEMOSECR&messageid=demo-sms-multi'),
    );
  });

  it('messages --json prints the envelope, nextCursor and hasMore included; --cursor reads the next page', async () => {
    const first = await run(['messages', ...WHO, '--size', '2', '--json'], env());
    expect(first.code, first.stderr).toBe(0);
    const page = JSON.parse(first.stdout) as { messages: unknown[]; nextCursor: string; hasMore: boolean };
    expect(page).toEqual(await api(`${HISTORY}&size=2`));
    expect(page.hasMore).toBe(true);

    const second = await run(
      ['messages', ...WHO, '--size', '2', '--cursor', page.nextCursor, '--json'],
      env(),
    );
    expect(second.code, second.stderr).toBe(0);
    expect(JSON.parse(second.stdout)).toEqual(
      await api(`${HISTORY}&size=2&cursor=${encodeURIComponent(page.nextCursor)}`),
    );

    const ids = await run(['messages', '--ids', 'demo-sms-0001,demo-wa-0001', '--json'], env());
    expect(JSON.parse(ids.stdout)).toEqual(await api('/messages?messageIds=demo-sms-0001,demo-wa-0001'));
  });

  it('the table says when older messages exist, with the command that shows them', async () => {
    const first = await run(['messages', ...WHO, '--size', '2'], env());
    expect(first.code, first.stderr).toBe(0);
    const hint = /\nOlder messages exist: waybill messages (.+)\n$/.exec(first.stdout);
    expect(hint?.[1]).toMatch(/^--channel WHATSAPP --user 447700900123 --size 2 --cursor \S+$/);
    const older = await run(['messages', ...(hint?.[1] ?? '').split(' ')], env());
    expect(older.code, older.stderr).toBe(0);
    const api2 = (await api(`${HISTORY}&size=2`)) as { nextCursor: string };
    const expected = (await api(`${HISTORY}&size=2&cursor=${encodeURIComponent(api2.nextCursor)}`)) as {
      messages: { id: string }[];
    };
    for (const m of expected.messages) expect(older.stdout).toContain(m.id);

    // A page with nothing older says nothing more.
    const all = await run(['messages', '--channel', 'SMS', '--user', '447700900201'], env());
    expect(all.code, all.stderr).toBe(0);
    expect(all.stdout).toContain('demo-sms-multi');
    expect(all.stdout).not.toContain('Older messages exist');
  });

  it('names the page size --size like the API; --limit is its deprecated alias', async () => {
    const size = await run(['messages', ...WHO, '--size', '3'], env());
    const limit = await run(['messages', ...WHO, '--limit', '3'], env());
    expect(limit.code).toBe(0);
    expect(limit.stdout).toBe(size.stdout);
    expect(limit.stderr).toContain('--limit is deprecated');
    for (const bad of [
      ['--size', '101'],
      ['--size', '0'],
      ['--limit', '500'],
      ['--size', '3', '--limit', '3'],
      ['--cursor', ''],
    ]) {
      const result = await run(['messages', ...WHO, ...bad], env());
      expect(result.code, bad.join(' ')).toBe(2);
    }
    expect((await run(['messages', '--ids', 'a', '--cursor', 'x'], env())).code).toBe(2);
  });

  // Last: it locks the demo key out.
  it('dlr on a locked-out key says how long to wait', async () => {
    for (let i = 0; i < 3; i++) await fetch(`${server.url}/dlr?key=DEMOKEY1&secret=WRONGSEC&messageid=x`);
    const result = await run(['dlr', 'demo-sms-multi'], env());
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /Too many requests \(.*HTTP 429.*\); try again in 14 min (1[0-2]|[0-9]) s\n$/,
    );
  });
});

describe('waits', () => {
  it('reads Retry-After as seconds or a date', () => {
    const error = (retryAfter: string) =>
      createApiError({
        status: 429,
        code: 429,
        descr: 'x',
        headers: new Headers({ 'retry-after': retryAfter }),
      });
    expect(retryAfterSeconds(error('852'))).toBe(852);
    const now = Date.parse('2026-11-23T10:00:00Z');
    expect(retryAfterSeconds(error('Mon, 23 Nov 2026 10:14:12 GMT'), now)).toBe(852);
    expect(retryAfterSeconds(createApiError({ status: 429, code: 429, descr: 'x' }))).toBeUndefined();
  });

  it('formats a wait for people', () => {
    expect(formatWait(0)).toBe('0 s');
    expect(formatWait(45)).toBe('45 s');
    expect(formatWait(60)).toBe('1 min');
    expect(formatWait(852)).toBe('14 min 12 s');
    expect(formatWait(3600)).toBe('1 h');
    expect(formatWait(7500)).toBe('2 h 5 min');
  });
});
