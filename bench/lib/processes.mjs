// The processes a benchmark runs: the Waybill server in its production configuration, the bare node:http ceiling,
// and the load generator, each its own process, killed when this one exits.
import { execFileSync, fork, spawn } from 'node:child_process';
import { closeSync, createWriteStream, existsSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { adminClient } from './admin.mjs';
import { treeCpuMs, treeRssBytes } from './cpu.mjs';
import { cliMain, dataDir, repoRoot, serverDist } from './paths.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const ADMIN_TOKEN = 'bench-admin-token-0123456789abcdef';

const children = new Set();
process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(130));

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** `taskset -c <cpus>` in front of a command when taskset exists and the machine has the CPUs; else nothing. */
let hasTaskset;
export function pinned(cpus, command, args) {
  hasTaskset ??= (() => {
    try {
      execFileSync('taskset', ['-V'], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  })();
  if (!cpus || !hasTaskset) return [command, args];
  return ['taskset', ['-c', cpus, command, ...args]];
}

/** Where the processes started here write their standard output: 'file' (the default) or 'pipe'. */
let logOutput = 'file';

/**
 * `--log-output pipe`: every process started from now on writes its standard output to a pipe, which this
 * process copies to the same log file, as a container runtime's log collector reads a server's output.
 */
export function setLogOutput(kind) {
  if (kind !== 'file' && kind !== 'pipe') throw new Error(`--log-output is file or pipe, not ${kind}`);
  logOutput = kind;
}

/**
 * Starts a process that prints `listening at <url>` on stdout (the Waybill CLI's pino line, or the ceiling's),
 * with stdout to a log file (or a pipe to it: setLogOutput): log lines cost the server a write each, as in
 * production, and with a file this process drains no pipe while it loads. Resolves once the address is printed.
 */
async function startListening(label, command, args, env, cpus) {
  mkdirSync(join(dataDir, 'logs'), { recursive: true });
  const logFile = join(dataDir, 'logs', `${label}.log`);
  const fd = openSync(logFile, 'w');
  const [cmd, argv] = pinned(cpus, command, args);
  const out = logOutput === 'pipe' ? 'pipe' : fd;
  const child = spawn(cmd, argv, { env, stdio: ['ignore', out, 'pipe'], cwd: repoRoot });
  if (logOutput === 'pipe') child.stdout.pipe(createWriteStream(logFile, { fd: openSync(logFile, 'a') }));
  closeSync(fd);
  children.add(child);
  let stderr = '';
  child.stderr.on('data', (d) => {
    stderr += d;
  });
  const exited = new Promise((r) => child.once('exit', r));
  const deadline = Date.now() + 120_000;
  for (;;) {
    const match = /listening at (http:\/\/[^\s"]+)/.exec(readFileSync(logFile, 'utf8'));
    if (match) {
      const url = new URL(match[1]);
      return {
        label,
        url: match[1],
        host: url.hostname,
        port: Number(url.port),
        pid: child.pid,
        logFile,
        cpuMs: () => treeCpuMs(child.pid),
        rssBytes: () => treeRssBytes(child.pid),
        async stop() {
          child.kill('SIGTERM');
          await Promise.race([exited, sleep(10_000)]);
          child.kill('SIGKILL');
          children.delete(child);
        },
      };
    }
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${label} did not start (exit ${child.exitCode}):\n${stderr}`);
    }
    await sleep(25);
  }
}

/**
 * `waybill serve` on a database, in the production configuration: the defaults (access log on, info level), with
 * the dataset's pepper, an admin token for the operator API (the server's `admin` client uses it), and the
 * per-account rate limit off (the benchmark is one account asking as fast as it can; the limit would answer
 * 429). `dist` selects another build (`--server-dist`, `--baseline-dist`), to compare two builds side by side;
 * `env` adds or overrides settings.
 */
export async function startWaybill({
  databaseUrl,
  pepper,
  dist = serverDist,
  workers = 1,
  accessLog = true,
  cpus,
  env = {},
  label,
  cpuProf,
}) {
  const mainJs = cliMain(dist);
  if (!existsSync(mainJs)) throw new Error(`${mainJs} is missing: run npm run build`);
  // --cpu-prof: V8 writes the profile when the server exits (SIGTERM drains and exits).
  const profile = cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${cpuProf}`] : [];
  const args = [...profile, mainJs, 'serve', '--port', '0', '--no-demo'];
  if (workers !== 1) args.push('--workers', String(workers));
  const server = await startListening(
    label ?? 'waybill',
    process.execPath,
    args,
    {
      ...process.env,
      DATABASE_URL: databaseUrl,
      WAYBILL_PEPPER: pepper,
      WAYBILL_ADMIN_TOKEN: ADMIN_TOKEN,
      WAYBILL_RATE_PER_SECOND: '0',
      WAYBILL_ACCESS_LOG: accessLog ? 'on' : 'off',
      HOST: '127.0.0.1',
      ...env,
    },
    cpus,
  );
  return { ...server, admin: adminClient(server.url, ADMIN_TOKEN) };
}

/** The bare node:http server answering `body` to everything. */
export function startCeiling({ body, cpus, label = 'ceiling' }) {
  return startListening(
    label,
    process.execPath,
    [join(here, 'ceiling.mjs')],
    { ...process.env, CEILING_BODY_BASE64: Buffer.from(body).toString('base64') },
    cpus,
  );
}

/**
 * The lean reference (bench/lib/lean.mjs: /dlr, /messages, /receipts) on a SQLite dataset, with the server's pepper and cache
 * settings (`env`).
 */
export function startLean({ databaseUrl, pepper, cpus, env = {}, label = 'lean', cpuProf }) {
  // --cpu-prof: as for the server; lean.mjs exits on SIGTERM so that V8 writes the profile.
  const profile = cpuProf
    ? ['--cpu-prof', `--cpu-prof-dir=${cpuProf}`, '--cpu-prof-name=lean.cpuprofile']
    : [];
  return startListening(
    label,
    process.execPath,
    [...profile, join(here, 'lean.mjs')],
    { ...process.env, LEAN_SQLITE_FILE: databaseUrl.slice('sqlite:'.length), WAYBILL_PEPPER: pepper, ...env },
    cpus,
  );
}

/** The load generator process (bench/lib/loader.mjs); `run(job)` resolves with its result. */
export function startLoader({ cpus } = {}) {
  const [cmd, argv] = pinned(cpus, process.execPath, [join(here, 'loader.mjs')]);
  // fork needs a node binary first; with taskset, spawn with an IPC channel instead.
  const child =
    cmd === process.execPath
      ? fork(join(here, 'loader.mjs'), { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
      : spawn(cmd, argv, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  children.add(child);
  return {
    run(job) {
      return new Promise((resolveRun, reject) => {
        child.once('message', (m) => (m.ok ? resolveRun(m.result) : reject(new Error(m.error))));
        child.send(job);
      });
    },
    stop() {
      child.kill('SIGTERM');
      children.delete(child);
    },
  };
}
