import { execFile, execFileSync, spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { isSupportedNode, MIN_NODE } from '../../src/cli/node-version.js';

/**
 * What a newcomer meets before the first command: `npm install` leaves a working `waybill` (and a clean
 * tree), and a Node.js too old for the service is refused with a sentence instead of a crash.
 */

const ROOT = resolve(import.meta.dirname, '../../../..');
const SERVER = resolve(ROOT, 'packages/server');
const MAIN = resolve(SERVER, 'dist/cli/main.js');

const json = <T>(path: string): T => JSON.parse(readFileSync(path, 'utf8')) as T;

interface Manifest {
  version: string;
  engines?: { node?: string };
  bin?: Record<string, string>;
  scripts?: Record<string, string>;
}

interface Lock {
  packages: Record<string, { bin?: Record<string, string>; hasInstallScript?: boolean; link?: boolean }>;
}

function exec(file: string, args: string[], env: NodeJS.ProcessEnv = process.env) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
    execFile(file, args, { env, timeout: 30_000 }, (error, stdout, stderr) =>
      done({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('waybill works right after npm install', () => {
  const server = json<Manifest>(join(SERVER, 'package.json'));
  const root = json<Manifest>(join(ROOT, 'package.json'));

  it('links a committed bin, not a build output npm cannot find at install time', () => {
    const bin = server.bin?.waybill;
    expect(bin).toBeDefined();
    // npm links bins while it installs, before anything is built: a target under dist/ is not there on a
    // fresh clone, and `npx waybill` then fails with "could not determine executable to run".
    expect(bin).not.toMatch(/^(\.\/)?dist\//);
    expect(existsSync(join(SERVER, bin as string))).toBe(true);
    // Committed, not ignored like a build output (`git check-ignore` exits 1 for a path it would keep).
    expect(spawnSync('git', ['check-ignore', '-q', bin as string], { cwd: SERVER }).status).toBe(1);
    expect(readFileSync(join(SERVER, bin as string), 'utf8')).toMatch(/^#!\/usr\/bin\/env node\n/);
  });

  it('builds during npm install (the root prepare script), so the bin has something to run', () => {
    expect(root.scripts?.prepare).toMatch(/\btsc -b\b|\bnpm run build\b/);
  });

  it('answers through node_modules/.bin/waybill as npx runs it', async () => {
    const linked = join(ROOT, 'node_modules/.bin/waybill');
    expect(realpathSync(linked)).toBe(realpathSync(join(SERVER, server.bin?.waybill as string)));
    const result = await exec(process.execPath, [linked, '--version']);
    expect(result).toMatchObject({ code: 0, stdout: `${server.version}\n` });
  });

  it('says what to do when the CLI is not built', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'waybill-bin-'));
    dirs.push(dir);
    mkdirSync(join(dir, 'bin'));
    copyFileSync(join(SERVER, server.bin?.waybill as string), join(dir, 'bin', 'waybill.js'));
    const result = await exec(process.execPath, [join(dir, 'bin', 'waybill.js'), '--version']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('npm run build');
  });
});

describe('an unsupported Node.js is refused with one sentence', () => {
  it('keeps the CLI check, the engines fields and .npmrc in step', () => {
    const range = `>=${MIN_NODE.replace(/\.0$/, '')}`;
    expect(json<Manifest>(join(ROOT, 'package.json')).engines?.node).toBe(range);
    expect(json<Manifest>(join(SERVER, 'package.json')).engines?.node).toBe(range);
    // engine-strict turns npm's warning about `engines` into a refusal to install.
    expect(readFileSync(join(ROOT, '.npmrc'), 'utf8')).toMatch(/^engine-strict\s*=\s*true$/m);
  });

  it('compares versions', () => {
    expect(isSupportedNode(MIN_NODE)).toBe(true);
    expect(isSupportedNode('v24.0.0')).toBe(true);
    expect(isSupportedNode('22.13.0')).toBe(true);
    expect(isSupportedNode('23.0.0')).toBe(true);
    expect(isSupportedNode('22.11.9')).toBe(false);
    expect(isSupportedNode('v20.20.2')).toBe(false);
    expect(isSupportedNode('18.0.0')).toBe(false);
  });

  const old = findOldNode();
  it.skipIf(old === undefined)(`refuses to start on ${old?.version ?? 'an older Node.js'}`, async () => {
    const node = old?.path as string;
    // Every command: the check runs before anything loads better-sqlite3, which crashes on an older Node.
    for (const args of [['--version'], ['migrate', '--database-url', 'sqlite::memory:'], ['serve']]) {
      const result = await exec(node, [MAIN, ...args]);
      expect(result.code, args.join(' ')).toBe(1);
      expect(result.stdout).toBe('');
      // One line: which Node.js is needed, which one this is, and what to do.
      expect(result.stderr).toMatch(
        /^waybill needs Node\.js 22\.12 or newer, but \S+ is Node\.js [\d.]+: [^\n]+\n$/,
      );
      expect(result.stderr).toContain(`is Node.js ${old?.version}: switch to a newer Node.js`);
    }
  });
});

describe('npm install leaves package-lock.json as it is', () => {
  const lock = json<Lock>(join(ROOT, 'package-lock.json'));

  it('marks every installed package with an install step as npm does (hasInstallScript)', () => {
    for (const [path, entry] of Object.entries(lock.packages)) {
      if (!path.startsWith('node_modules/') || entry.link) continue;
      const dir = join(ROOT, path);
      if (!existsSync(join(dir, 'package.json'))) continue; // another platform's optional package
      const scripts = json<Manifest>(join(dir, 'package.json')).scripts ?? {};
      const installs =
        ['preinstall', 'install', 'postinstall'].some((name) => name in scripts) ||
        existsSync(join(dir, 'binding.gyp'));
      expect(entry.hasInstallScript === true, path).toBe(installs);
    }
  });

  it('records the bins of the workspaces as their package.json says', () => {
    for (const workspace of ['packages/server', 'packages/client']) {
      const manifest = json<Manifest>(join(ROOT, workspace, 'package.json'));
      expect(lock.packages[workspace]?.bin, workspace).toEqual(manifest.bin);
    }
  });

  it('keeps the Biome binaries of every platform (npm ci refuses the lockfile without them)', () => {
    const biome = Object.keys(lock.packages).filter((path) => path.startsWith('node_modules/@biomejs/cli-'));
    expect(biome).toHaveLength(10);
  });
});

/** A `node` older than MIN_NODE on this machine (the system one), if there is one. */
function findOldNode(): { path: string; version: string } | undefined {
  const own = realpathSync(process.execPath);
  const candidates = [
    ...(process.env.PATH ?? '').split(delimiter).map((dir) => join(dir, 'node')),
    '/usr/bin/node',
    '/usr/local/bin/node',
  ];
  for (const path of new Set(candidates)) {
    if (!existsSync(path) || realpathSync(path) === own) continue;
    try {
      const version = execFileSync(path, ['-p', 'process.versions.node'], { timeout: 10_000 })
        .toString()
        .trim();
      if (!isSupportedNode(version)) return { path, version };
    } catch {
      // Not a runnable node.
    }
  }
  return undefined;
}
