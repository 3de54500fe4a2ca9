import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, expect, it } from 'vitest';

/**
 * `npm start` runs the build and then the server through a shell. A SIGTERM to npm (a process manager
 * stopping it, `kill <npm pid>`) must reach the server: the script `exec`s it, so no shell sits between npm,
 * which forwards the signal, and the server, which would otherwise live on as an orphan holding the port.
 */

const ROOT = resolve(import.meta.dirname, '../../../..');
const dir = mkdtempSync(join(tmpdir(), 'waybill-npm-start-'));
let npm: ChildProcess | undefined;
const started: number[] = [];

afterAll(() => {
  npm?.kill('SIGKILL');
  for (const pid of started) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone already
    }
  }
  rmSync(dir, { recursive: true, force: true });
});

const freePort = (): Promise<number> =>
  new Promise((done, fail) => {
    const probe = createServer();
    probe.once('error', fail);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => done(typeof address === 'object' && address ? address.port : 0));
    });
  });

/** Every live process below `pid` (Linux /proc). */
function descendants(pid: number): number[] {
  const parents = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // The command name is in parentheses and may hold spaces; the parent pid is the second field after it.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parents.set(Number(entry), ppid);
    } catch {
      // exited while we looked
    }
  }
  const below: number[] = [];
  const walk = (parent: number) => {
    for (const [child, ppid] of parents) {
      if (ppid === parent) {
        below.push(child);
        walk(child);
      }
    }
  };
  walk(pid);
  return below;
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

const portFree = (port: number): Promise<boolean> =>
  new Promise((done) => {
    const probe = createServer();
    probe.once('error', () => done(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => done(true)));
  });

it.runIf(process.platform === 'linux')(
  'SIGTERM to the npm start process stops the server and frees its port',
  async () => {
    const port = await freePort();
    const env: Record<string, string | undefined> = {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_URL: `sqlite:${join(dir, 'waybill.db')}`,
    };
    for (const name of ['REDIS_URL', 'WAYBILL_PEPPER', 'WAYBILL_ADMIN_TOKEN']) delete env[name];
    npm = spawn('npm', ['start', '--', '--no-demo'], { cwd: ROOT, env });
    let output = '';
    const collect = (chunk: Buffer) => {
      output += chunk.toString();
    };
    npm.stdout?.on('data', collect);
    npm.stderr?.on('data', collect);
    const child = npm;
    const exited = new Promise<void>((done) => child.once('exit', () => done()));

    for (let waited = 0; !output.includes('listening at'); waited += 100) {
      if (waited > 25_000) throw new Error(`npm start did not start the server:\n${output}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const below = descendants(child.pid ?? 0);
    started.push(...below);
    expect(below.length, 'the server runs below npm').toBeGreaterThan(0);
    expect(await portFree(port)).toBe(false);

    child.kill('SIGTERM');
    await exited;
    for (let waited = 0; below.some(alive) && waited < 12_000; waited += 100) {
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(below.filter(alive), `still running after npm stopped:\n${output}`).toEqual([]);
    expect(await portFree(port)).toBe(true);
  },
  45_000,
);
