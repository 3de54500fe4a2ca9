// The processes a benchmark runs: the Waybill server in its production configuration, the bare node:http ceiling,
// and the load generator, each its own process; plus the CPU accounting read from /proc.
import { execFileSync, fork, spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
export const benchDir = resolve(here, '..');
export const repoRoot = resolve(benchDir, '..');
export const dataDir = join(benchDir, '.data');
export const ADMIN_TOKEN = 'bench-admin-token-0123456789abcdef';

const children = new Set();
process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(130));

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** `taskset -c <cpus>` in front of a command when taskset exists and the machine has the CPUs; else nothing. */
let hasTaskset;
function pinned(cpus, command, args) {
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

/**
 * Starts a process that prints `listening at <url>` on stdout (the Waybill CLI's pino line, or the ceiling's),
 * with stdout to a log file: log lines cost the server a write each, as in production, and this process drains
 * no pipe while it loads. Resolves once the address is printed.
 */
async function startListening(label, command, args, env, cpus) {
  mkdirSync(join(dataDir, 'logs'), { recursive: true });
  const logFile = join(dataDir, 'logs', `${label}.log`);
  const fd = openSync(logFile, 'w');
  const [cmd, argv] = pinned(cpus, command, args);
  const child = spawn(cmd, argv, { env, stdio: ['ignore', fd, 'pipe'], cwd: repoRoot });
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
 * `waybill serve` on a dataset, in the production configuration: the defaults (access log on, info level), with
 * the dataset's pepper, an admin token for the ingest scenarios, and the per-account rate limit off (the
 * benchmark is one account asking as fast as it can; the limit would answer 429). `dist` selects another build
 * (`--server-dist`), to compare two builds side by side.
 */
export function startWaybill({
  manifest,
  dist,
  workers = 1,
  accessLog = true,
  cpus,
  env = {},
  label,
  cpuProf,
}) {
  const mainJs = join(dist, 'cli/main.js');
  if (!existsSync(mainJs)) throw new Error(`${mainJs} is missing: run npm run build`);
  // --cpu-prof: V8 writes the profile when the server exits (SIGTERM drains and exits).
  const profile = cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${cpuProf}`] : [];
  const args = [...profile, mainJs, 'serve', '--port', '0', '--no-demo'];
  if (workers !== 1) args.push('--workers', String(workers));
  return startListening(
    label ?? 'waybill',
    process.execPath,
    args,
    {
      ...process.env,
      DATABASE_URL: manifest.databaseUrl,
      WAYBILL_PEPPER: manifest.pepper,
      WAYBILL_ADMIN_TOKEN: ADMIN_TOKEN,
      WAYBILL_RATE_PER_SECOND: '0',
      WAYBILL_ACCESS_LOG: accessLog ? 'on' : 'off',
      HOST: '127.0.0.1',
      ...env,
    },
    cpus,
  );
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

// ---------------------------------------------------------------------------------------------------------
// /proc accounting (Linux). A server with --workers is a cluster primary and its workers: count them all.
const CLOCK_TICKS = 100; // USER_HZ

function stat(pid) {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return text.slice(text.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

function descendants(pid) {
  const all = [pid];
  const byParent = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = stat(entry);
    if (fields) byParent.set(entry, Number(fields[1]));
  }
  for (let i = 0; i < all.length; i++) {
    for (const [child, parent] of byParent) if (parent === all[i]) all.push(Number(child));
  }
  return all;
}

/** User + system CPU (ms) of a process and its descendants. */
export function treeCpuMs(pid) {
  let total = 0;
  for (const p of descendants(pid)) {
    const f = stat(p);
    if (f) total += ((Number(f[11]) + Number(f[12])) * 1000) / CLOCK_TICKS;
  }
  return total;
}

/** Resident memory (bytes) of a process and its descendants. */
export function treeRssBytes(pid) {
  let total = 0;
  for (const p of descendants(pid)) {
    try {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${p}/status`, 'utf8'));
      if (m) total += Number(m[1]) * 1024;
    } catch {
      // ended meanwhile
    }
  }
  return total;
}

/** CPU (ms) of the PostgreSQL backends serving database `db` (their command line names it). */
export function postgresCpuMs(databaseUrl) {
  if (!databaseUrl.startsWith('postgres')) return 0;
  const db = new URL(databaseUrl).pathname.replace(/^\//, '');
  let total = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(` ${db} `)) {
        const f = stat(pid);
        if (f) total += ((Number(f[11]) + Number(f[12])) * 1000) / CLOCK_TICKS;
      }
    } catch {
      // ended meanwhile
    }
  }
  return total;
}
