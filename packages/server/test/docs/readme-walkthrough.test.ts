import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, expect, it } from 'vitest';

/**
 * The README's "Feed it and receive callbacks" walk-through, run as written: its shell blocks, grouped by the
 * terminal their first line names. Every terminal but the last runs in the background (the server, the
 * receiver); the last one's blocks run in order in one shell, as a person types them. Only the two port numbers
 * change (free ones instead of 8080 and 9090), and DATABASE_URL points into a temporary directory, so the test
 * neither collides with a running server nor writes into the repository's ./data.
 */

const ROOT = resolve(import.meta.dirname, '../../../..');
const SECTION = '## Feed it and receive callbacks';
const dir = mkdtempSync(join(tmpdir(), 'waybill-readme-'));
const background: ChildProcess[] = [];

afterAll(async () => {
  for (const child of background) stopGroup(child);
  await Promise.all(background.map((child) => (child.exitCode === null ? exitOf(child, 5_000) : undefined)));
  rmSync(dir, { recursive: true, force: true });
});

/** The shell blocks of the section, by terminal number, in the order they appear. */
function walkthrough(): Map<number, string[]> {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const start = readme.indexOf(SECTION);
  expect(start, `README has a section "${SECTION}"`).toBeGreaterThanOrEqual(0);
  const rest = readme.slice(start + SECTION.length);
  const section = rest.slice(0, rest.search(/^## /m) === -1 ? undefined : rest.search(/^## /m));
  const terminals = new Map<number, string[]>();
  for (const [, block] of section.matchAll(/^```sh\n([\s\S]*?)^```$/gm)) {
    const terminal = Number(/^# Terminal (\d+)/.exec(block ?? '')?.[1]);
    expect(terminal, `every shell block names its terminal:\n${block}`).toBeGreaterThan(0);
    terminals.set(terminal, [...(terminals.get(terminal) ?? []), block ?? '']);
  }
  return terminals;
}

const freePort = (): Promise<number> =>
  new Promise((done, fail) => {
    const probe = createServer();
    probe.once('error', fail);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => done(typeof address === 'object' && address ? address.port : 0));
    });
  });

const listening = (port: number): Promise<boolean> =>
  new Promise((done) => {
    const socket = createConnection({ port, host: '127.0.0.1' });
    socket.once('connect', () => {
      socket.destroy();
      done(true);
    });
    socket.once('error', () => done(false));
  });

async function until(
  what: string,
  check: () => boolean | Promise<boolean>,
  output: () => string,
  ms = 25_000,
) {
  for (const deadline = Date.now() + ms; !(await check()); ) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}:\n${output()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** SIGTERM to the whole process group of a background terminal (the shell, npm, the server below it). */
function stopGroup(child: ChildProcess): void {
  try {
    if (child.pid !== undefined) process.kill(-child.pid, 'SIGTERM');
  } catch {
    // gone already
  }
}

const exitOf = (child: ChildProcess, ms: number): Promise<void> =>
  new Promise((done) => {
    const timer = setTimeout(() => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // gone already
      }
      done();
    }, ms);
    child.once('exit', () => {
      clearTimeout(timer);
      done();
    });
  });

function shell(script: string, env: NodeJS.ProcessEnv, detached: boolean) {
  const child = spawn('bash', ['-c', script], { cwd: ROOT, env, detached });
  let output = '';
  const collect = (chunk: Buffer) => {
    output += chunk.toString();
  };
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  return { child, output: () => output };
}

it.runIf(process.platform !== 'win32')(
  'the README walk-through feeds the server, and the push and /dlr arrive as it says',
  async () => {
    const terminals = walkthrough();
    const numbers = [...terminals.keys()].sort((a, b) => a - b);
    expect(numbers.length).toBeGreaterThanOrEqual(2);
    const [serverPort, receiverPort] = [await freePort(), await freePort()];
    const ports = (block: string) =>
      block.replace(/\b8080\b/g, String(serverPort)).replace(/\b9090\b/g, String(receiverPort));

    // The walk-through's own settings only: none of the test run's database, token or port settings.
    const env: NodeJS.ProcessEnv = { DATABASE_URL: `sqlite:${join(dir, 'waybill.db')}` };
    for (const [name, value] of Object.entries(process.env)) {
      if (!/^(DATABASE_URL|REDIS_URL|PORT|HOST|WAYBILL_.*)$/.test(name)) env[name] ??= value;
    }

    const last = numbers.at(-1) ?? 0;
    const started = numbers.slice(0, -1).map((n) => {
      const run = shell((terminals.get(n) ?? []).map(ports).join('\n'), env, true);
      background.push(run.child);
      return run;
    });
    const [server, receiver] = started;
    const logs = () => started.map((s, i) => `--- terminal ${numbers[i]}\n${s.output()}`).join('\n');
    await until('the server', () => listening(serverPort), logs);
    await until('the receiver', () => listening(receiverPort), logs);

    const feed = shell(`set -e\n${(terminals.get(last) ?? []).map(ports).join('\n')}`, env, false);
    await exitOf(feed.child, 25_000);
    expect(feed.child.exitCode, `terminal ${last}:\n${feed.output()}\n${logs()}`).toBe(0);

    // What the README says the two ingest commands print.
    expect(feed.output()).toContain('1 message accepted.\n');
    expect(feed.output()).toContain('1 receipt sent: 1 applied, 0 ignored, 0 unknown.\n');
    const dlr = JSON.parse(feed.output().trim().split('\n').at(-1) ?? '') as Record<string, unknown>[];
    expect(dlr).toEqual([expect.objectContaining({ messageid: 'order-1', drStatuscode: 'delivered' })]);
    await until(
      'the push',
      () => receiver?.output().includes('"drStatuscode":"delivered"') ?? false,
      logs,
      10_000,
    );
    const push = JSON.parse(receiver?.output().trim().split('\n').at(-1) ?? '') as Record<string, unknown>;
    expect(push).toMatchObject({ messageid: 'order-1', to: '447700900123', drStatuscode: 'delivered' });
    expect(server?.output()).toContain(`listening at http://127.0.0.1:${serverPort}`);
  },
  60_000,
);
