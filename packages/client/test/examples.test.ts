/**
 * Every example of the README is a file in packages/client/examples: `npm run typecheck` checks them in strict
 * mode, this test runs each one as is (Node runs TypeScript by stripping its types) against a real demo server
 * — `waybill serve` on an empty SQLite database, which loads the demo account DEMOKEY1 / DEMOSECR — and checks
 * that the README shows each file verbatim. Skips itself until the server and the SDK are built.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const CLIENT = fileURLToPath(new URL('..', import.meta.url));
const EXAMPLES = join(CLIENT, 'examples');
const README = join(CLIENT, 'README.md');
const MAIN = fileURLToPath(new URL('../../server/dist/cli/main.js', import.meta.url));
const BUILT = existsSync(MAIN) && existsSync(join(CLIENT, 'dist/index.js'));
const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

const exampleFiles = () =>
  readdirSync(EXAMPLES)
    .filter((f) => f.endsWith('.ts'))
    .sort();

/** The README's TypeScript blocks, each with the example file its marker names (if any). */
function readmeBlocks(): { file: string | undefined; code: string }[] {
  const lines = readFileSync(README, 'utf8').split('\n');
  const blocks: { file: string | undefined; code: string }[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (lines[i] !== '```ts') continue;
    const end = lines.indexOf('```', i + 1);
    const marker = /^<!-- example: examples\/([\w-]+\.ts) -->$/.exec(lines[i - 1] ?? '');
    blocks.push({ file: marker?.[1], code: `${lines.slice(i + 1, end).join('\n')}\n` });
    i = end;
  }
  return blocks;
}

describe('the README examples', () => {
  it('are shown verbatim, every TypeScript block being one of the example files', () => {
    const blocks = readmeBlocks();
    expect(blocks.length).toBeGreaterThan(0);
    for (const block of blocks) {
      expect(block.file, `a TypeScript block without an example marker:\n${block.code}`).toBeDefined();
      expect(block.code, String(block.file)).toBe(readFileSync(join(EXAMPLES, String(block.file)), 'utf8'));
    }
    expect(blocks.map((b) => b.file).sort()).toStrictEqual(exampleFiles());
  });

  it('use only ids of the demo data', () => {
    for (const file of exampleFiles()) {
      const code = readFileSync(join(EXAMPLES, file), 'utf8');
      expect(code, file).not.toMatch(/'m-\d|0190c0de|saved-cursor/);
    }
  });
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

describe.skipIf(!BUILT)('the README examples, run against the demo server', () => {
  let server: ChildProcess | undefined;
  let dir = '';
  let baseUrl = '';

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'waybill-examples-'));
    const child = spawn(process.execPath, [MAIN, 'serve', '--port', '0'], {
      cwd: ROOT,
      env: {
        ...process.env,
        HOST: '127.0.0.1',
        DATABASE_URL: `sqlite:${join(dir, 'demo.db')}`,
        WAYBILL_PEPPER: randomBytes(32).toString('hex'),
        WAYBILL_ACCESS_LOG: 'off',
        WAYBILL_CALLBACK_RELAY: 'off',
        WAYBILL_ADMIN_TOKEN: '',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    server = child;
    baseUrl = await new Promise<string>((resolve, reject) => {
      let output = '';
      const timer = setTimeout(() => reject(new Error(`server did not start:\n${output}`)), 30_000);
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        const match = /listening at (http:\/\/[^\s"]+)/.exec(output);
        if (match?.[1] && output.includes('DEMOKEY1')) {
          clearTimeout(timer);
          resolve(match[1]);
        }
      };
      child.stdout?.on('data', onData);
      child.stderr?.on('data', onData);
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`server exited with ${code}:\n${output}`));
      });
    });
  });

  afterAll(async () => {
    server?.kill('SIGTERM');
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const demoEnv = (): NodeJS.ProcessEnv => {
    const { SAVED_CURSOR: _ignored, ...env } = process.env;
    return { ...env, WAYBILL_URL: baseUrl, WAYBILL_KEY: 'DEMOKEY1', WAYBILL_SECRET: 'DEMOSECR' };
  };

  const run = (file: string, env: Record<string, string> = {}): Promise<Run> =>
    new Promise((resolve) => {
      execFile(
        process.execPath,
        [join(EXAMPLES, file)],
        { cwd: CLIENT, env: { ...demoEnv(), ...env }, timeout: 20_000 },
        (error, stdout, stderr) => {
          const code = error ? (typeof error.code === 'number' ? error.code : null) : 0;
          resolve({ code, stdout, stderr });
        },
      );
    });

  const lines = (text: string) => text.split('\n').filter((l) => l !== '');

  it('quickstart.ts', async () => {
    const { code, stdout } = await run('quickstart.ts');
    expect(code).toBe(0);
    expect(stdout).toBe('demo-sms-multi went to 3 numbers\n');
  });

  it('dlr.ts: every kind of item, narrowed', async () => {
    const { code, stdout, stderr } = await run('dlr.ts');
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const out = lines(stdout);
    expect(out).toHaveLength(4);
    expect(out[0]).toMatch(/^447700900201: delivered at \d{4}-\d\d-\d\dT/);
    expect(out[1]).toBe('447700900202: failed (Number deactivated or invalid)');
    expect(out[2]).toMatch(/^33612345678: delivered at /);
    expect(out[3]).toBe('447700900137: no receipt yet, send status 1');
  });

  it('messages-by-id.ts: 45 records, oldest first', async () => {
    const { code, stdout } = await run('messages-by-id.ts');
    expect(code).toBe(0);
    const ids = lines(stdout).map((l) => l.split(' ')[1]);
    expect(ids).toStrictEqual(
      Array.from({ length: 45 }, (_, i) => `demo-wa-${String(i + 1).padStart(4, '0')}`),
    );
  });

  it('history.ts: a walk, campaign pages, the latest by contact id', async () => {
    const { code, stdout } = await run('history.ts');
    expect(code).toBe(0);
    const out = lines(stdout);
    expect(out).toHaveLength(60 + 3 + 1);
    expect(out[0]).toMatch(/ inbound \[demo\] Customer reply #240$/);
    expect(out.slice(60, 62).map((l) => l.split(' ').slice(0, 2).join(' '))).toStrictEqual([
      '5 true',
      '5 true',
    ]);
    expect(out[62]).toBe('2 false null');
    expect(out[63]?.split(' ')).toStrictEqual(
      Array.from({ length: 10 }, (_, i) => `demo-wa-${String(240 - i).padStart(4, '0')}`),
    );
  });

  it('history-resume.ts: resumes just before the saved page', async () => {
    const { code, stdout } = await run('history-resume.ts');
    expect(code).toBe(0);
    expect(lines(stdout).map((l) => l.split(' ')[1])).toStrictEqual([
      'demo-wa-0220',
      'demo-wa-0219',
      'demo-wa-0218',
      'demo-wa-0217',
      'demo-wa-0216',
    ]);
  });

  it('warnings.ts: no warning from a current server', async () => {
    const { code, stdout, stderr } = await run('warnings.ts');
    expect(code).toBe(0);
    expect(stdout).toBe('1 record\n');
    expect(stderr).toBe('');
  });

  it('receipt-feed.ts: every receipt of the demo data, then where to resume', async () => {
    const { code, stdout } = await run('receipt-feed.ts');
    expect(code).toBe(0);
    const out = lines(stdout);
    expect(out.length).toBeGreaterThan(5);
    for (const line of out.slice(0, -1)) expect(line).toMatch(/^evt_[0-9A-Z]{26} \S+ demo-sms-\S+ \d+ \w+$/);
    const cursor = /^resume with (\S+)$/.exec(out.at(-1) ?? '')?.[1];
    expect(cursor).toBeDefined();
    // Resumed from there, the feed has nothing new.
    const resumed = await run('receipt-feed.ts', { SAVED_CURSOR: String(cursor) });
    expect(resumed.code).toBe(0);
    expect(lines(resumed.stdout)).toStrictEqual([`resume with ${cursor}`]);
  });

  it('receipt-follow.ts: follows until SIGINT, then says where to resume', async () => {
    const child = spawn(process.execPath, [join(EXAMPLES, 'receipt-follow.ts')], {
      cwd: CLIENT,
      env: demoEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    const deadline = Date.now() + 15_000;
    while (lines(stdout).length < 10 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    child.kill('SIGINT');
    expect(await exited).toBe(0);
    const out = lines(stdout);
    expect(out.length).toBeGreaterThanOrEqual(10);
    expect(out.at(-1)).toMatch(/^stopped; resume with \S+$/);
  });

  it('errors.ts: succeeds, and explains wrong credentials and an unreachable server', async () => {
    const ok = await run('errors.ts');
    expect(ok).toMatchObject({ code: 0, stdout: 'ok: 3 items\n' });
    const wrong = await run('errors.ts', { WAYBILL_SECRET: 'WRONGSEC' });
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain('check WAYBILL_KEY / WAYBILL_SECRET');
    const down = await run('errors.ts', { WAYBILL_URL: 'http://127.0.0.1:9' });
    expect(down.code).toBe(1);
    expect(down.stderr).toContain('is the server running?');
  });

  it('timeouts.ts', async () => {
    const { code, stdout } = await run('timeouts.ts');
    expect(code).toBe(0);
    expect(stdout).toBe('3 items\n');
  });

  it('webhook-server.ts: accepts a signed receipt, refuses a forged one and a signed non-receipt', async () => {
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const child = spawn(process.execPath, [join(EXAMPLES, 'webhook-server.ts')], {
      cwd: CLIENT,
      env: { ...demoEnv(), WAYBILL_CALLBACK_SECRET: secret, PORT: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      let stdout = '';
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
      });
      const deadline = Date.now() + 15_000;
      while (!/port: \d+/.test(stdout) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      const port = /port: (\d+)/.exec(stdout)?.[1];
      expect(port).toBeDefined();

      // The body a callback carries: the recipient's /dlr item as the demo server answers it.
      const dlr = await fetch(`${baseUrl}/dlr?key=DEMOKEY1&secret=DEMOSECR&messageid=demo-sms-multi`);
      const body = JSON.stringify(((await dlr.json()) as unknown[])[0]);
      const deliver = (payload: string, signature?: string) => {
        const id = `evt_${randomBytes(8).toString('hex')}`;
        const timestamp = String(Math.floor(Date.now() / 1000));
        const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
        const hmac = createHmac('sha256', key).update(`${id}.${timestamp}.${payload}`).digest('base64');
        return fetch(`http://127.0.0.1:${port}/`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'webhook-id': id,
            'webhook-timestamp': timestamp,
            'webhook-signature': signature ?? `v1,${hmac}`,
          },
          body: payload,
        });
      };

      expect((await deliver(body)).status).toBe(204);
      await new Promise((r) => setTimeout(r, 100));
      expect(stdout).toMatch(/^demo-sms-multi 447700900201 delivered \d{4}-\d\d-\d\dT\S+Z$/m);
      const forged = await deliver(body, `v1,${randomBytes(32).toString('base64')}`);
      expect([forged.status, await forged.text()]).toStrictEqual([400, 'invalid_signature']);
      const notReceipt = await deliver('{"hello":1}');
      expect([notReceipt.status, await notReceipt.text()]).toStrictEqual([400, 'invalid_payload']);
    } finally {
      child.kill('SIGTERM');
    }
  });
});
