#!/usr/bin/env node
// Load benchmarks of the query endpoints, against the built server run as a child process.
//
//   node bench/run.mjs --database-url sqlite:bench/.data/waybill-1m.db \
//                      --database-url postgres://postgres@127.0.0.1:5432/waybill_bench [--duration 10]
//
// Several --database-url run side by side: every scenario is measured on each engine in turn, in one session,
// so their ratios share the machine's conditions. Each database must have been filled by bench/seed.mjs; its
// manifest (account, sample ids and contacts) is found the way seed.mjs writes it, or given with --manifest
// (once per --database-url, same order).
//
// Scenarios (--scenarios, comma-separated; default all):
//   dlr       GET /dlr?key&secret&messageid=<random sample id>
//   history   GET /messages?channel&channelUserId=<random sample conversation>&size=20 (Basic auth)
//   long      page 1 of the long-history contact (≥10,000 messages on one channel), the baseline of `deep`
//   deep      the same contact, with a cursor ~100 pages back (pages 91–110, rotating)
//   accesslog /dlr at --connections with WAYBILL_ACCESS_LOG off and on, alternately (off, on, off, on, …)
// dlr/history/long/deep run twice: 1 connection (per-call latency) and --connections (throughput). Servers run with
// the access log off except in the accesslog scenario; their stdout (pino) goes to a file in bench/.data/logs.
import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '..');
const mainJs = join(root, 'packages/server/dist/cli/main.js');

const { values: opts } = parseArgs({
  options: {
    'database-url': { type: 'string', multiple: true },
    manifest: { type: 'string', multiple: true },
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '3' },
    connections: { type: 'string', default: '16' },
    scenarios: { type: 'string', default: 'dlr,history,long,deep,accesslog' },
    rounds: { type: 'string', default: '2' },
    'deep-pages': { type: 'string', default: '100' },
    'sqlite-cache-mb': { type: 'string' },
    server: { type: 'string', default: 'cli' }, // cli | app (bench/server.mjs, buildApp + listen)
    json: { type: 'string' },
  },
  strict: true,
});
const urls = opts['database-url'] ?? [];
if (urls.length === 0) {
  console.error('usage: node bench/run.mjs --database-url <url> [--database-url <url>…] [--duration s]');
  process.exit(2);
}
const DURATION = Number(opts.duration);
const WARMUP = Number(opts.warmup);
const CONNECTIONS = Number(opts.connections);
const ROUNDS = Number(opts.rounds);
const DEEP_PAGES = Number(opts['deep-pages']);
const scenarios = new Set(opts.scenarios.split(',').map((s) => s.trim()));
const logDir = join(here, '.data', 'logs');
mkdirSync(logDir, { recursive: true });

function manifestPathFor(url) {
  if (url.startsWith('sqlite:')) return resolve(`${url.slice('sqlite:'.length)}.manifest.json`);
  const db = new URL(url).pathname.replace(/^\//, '') || 'postgres';
  return join(here, '.data', `pg-${db}.manifest.json`);
}
const engineName = (url) => (url.startsWith('sqlite:') ? 'SQLite' : 'PostgreSQL');

// ---------------------------------------------------------------------------------------------------------
// The server, as a child process.
const children = new Set();
process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => process.exit(130));
}

async function startServer(url, manifest, { accessLog, label }) {
  const logFile = join(logDir, `${label}.log`);
  const fd = openSync(logFile, 'w');
  const env = {
    ...process.env,
    DATABASE_URL: url,
    WAYBILL_PEPPER: manifest.pepper,
    WAYBILL_RATE_PER_SECOND: '0',
    WAYBILL_LOG_LEVEL: 'info',
    WAYBILL_ACCESS_LOG: accessLog ? 'on' : 'off',
    HOST: '127.0.0.1',
  };
  if (opts['sqlite-cache-mb']) env.WAYBILL_SQLITE_CACHE_MB = opts['sqlite-cache-mb'];
  const args =
    opts.server === 'app' ? [join(here, 'server.mjs')] : [mainJs, 'serve', '--port', '0', '--no-demo'];
  // stdout goes to a file: the log lines cost the server what they cost in production (a write per line), and
  // nothing in this process has to drain a pipe while it is generating load.
  const child = spawn(process.execPath, args, { env, stdio: ['ignore', fd, 'pipe'] });
  closeSync(fd);
  children.add(child);
  let stderr = '';
  child.stderr.on('data', (d) => {
    stderr += d;
  });
  const exited = new Promise((resolveExit) => child.once('exit', (code) => resolveExit(code)));
  const deadline = Date.now() + 30_000;
  for (;;) {
    const match = /listening at (http:\/\/[^\s"]+)/.exec(readFileSync(logFile, 'utf8'));
    if (match) {
      return {
        url: match[1],
        pid: child.pid,
        databaseUrl: url,
        logFile,
        async stop() {
          child.kill('SIGTERM');
          await Promise.race([exited, sleep(5000)]);
          child.kill('SIGKILL');
          children.delete(child);
        },
      };
    }
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`server ${label} did not start (exit ${child.exitCode}):\n${stderr}`);
    }
    await sleep(50);
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** CPU time (user + system, ms) the process has used so far, from /proc (Linux); NaN elsewhere. */
function cpuMs(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return Number.NaN;
  }
}
const CLOCK_TICKS = 100; // USER_HZ on Linux

/** CPU time (ms) of the PostgreSQL backends serving database `db` (their command line names it); 0 for SQLite. */
function backendCpuMs(databaseUrl) {
  if (databaseUrl.startsWith('sqlite:')) return 0;
  const db = new URL(databaseUrl).pathname.replace(/^\//, '');
  let total = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(` ${db} `)) total += cpuMs(pid);
    } catch {
      // the process ended meanwhile
    }
  }
  return total;
}

// ---------------------------------------------------------------------------------------------------------
// Load generation: autocannon, with our own latency record (autocannon's histogram counts whole
// milliseconds, too coarse for sub-millisecond calls).
async function load(baseUrl, { connections, duration, nextPath, headers = {} }) {
  const latencies = [];
  const instance = autocannon({
    url: baseUrl,
    connections,
    duration,
    headers,
    requests: [
      {
        setupRequest(req) {
          req.path = nextPath();
          return req;
        },
      },
    ],
  });
  instance.on('response', (_client, statusCode, _bytes, ms) => {
    if (statusCode >= 200 && statusCode < 300) latencies.push(ms);
  });
  const result = await instance;
  latencies.sort((a, b) => a - b);
  const q = (p) =>
    latencies.length ? latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] : NaN;
  const non2xx = result.non2xx + result.errors + result.timeouts;
  return {
    rps: result.requests.total / result.duration,
    p50: q(0.5),
    p99: q(0.99),
    requests: result.requests.total,
    non2xx,
    duration: result.duration,
  };
}

async function measure(server, spec, { dbCpu = true } = {}) {
  const baseUrl = server.url;
  if (WARMUP > 0) await load(baseUrl, { ...spec, duration: WARMUP });
  const cpuBefore = cpuMs(server.pid);
  const dbBefore = backendCpuMs(server.databaseUrl);
  const result = await load(baseUrl, { ...spec, duration: DURATION });
  // PostgreSQL's backends, per request (a backend that exits during the run is missed: the pool keeps its
  // connections while busy, so that is rare).
  result.dbCpuUsPerRequest = dbCpu
    ? ((backendCpuMs(server.databaseUrl) - dbBefore) * 1000) / result.requests
    : Number.NaN;
  // The server process's own CPU per request (PostgreSQL's backends are not counted): steadier than req/s
  // on a shared machine, since it does not depend on how much CPU the process was given.
  result.cpuUsPerRequest = ((cpuMs(server.pid) - cpuBefore) * 1000) / result.requests;
  if (result.non2xx > 0) console.warn(`  ! ${result.non2xx} non-2xx/errors/timeouts`);
  return result;
}

// ---------------------------------------------------------------------------------------------------------
function targets(manifest) {
  const ids = manifest.sampleMessageIds;
  const convs = manifest.sampleConversations;
  const rnd = (n) => Math.floor(Math.random() * n);
  const auth = `Basic ${Buffer.from(`${manifest.key}:${manifest.secret}`).toString('base64')}`;
  return {
    auth,
    dlrPath: () =>
      `/dlr?key=${manifest.key}&secret=${manifest.secret}&messageid=${encodeURIComponent(ids[rnd(ids.length)])}`,
    historyPath: () => {
      const c = convs[rnd(convs.length)];
      return `/messages?channel=${c.channel}&channelUserId=${encodeURIComponent(c.channelUserId)}&size=20`;
    },
  };
}

/** Walks the long-history contact back `pages` pages; returns the cursors of pages pages-9 … pages+10. */
async function deepCursors(baseUrl, manifest, auth) {
  const { channel, channelUserId } = manifest.longHistory;
  const base = `${baseUrl}/messages?channel=${channel}&channelUserId=${encodeURIComponent(channelUserId)}&size=20`;
  const cursors = [];
  let cursor = null;
  for (let page = 1; page <= DEEP_PAGES + 10; page++) {
    const res = await fetch(cursor ? `${base}&cursor=${encodeURIComponent(cursor)}` : base, {
      headers: { authorization: auth },
    });
    if (res.status !== 200) throw new Error(`history page ${page}: HTTP ${res.status} ${await res.text()}`);
    const body = await res.json();
    if (!body.hasMore) throw new Error(`the long history ends at page ${page}`);
    cursor = body.nextCursor;
    // The cursor that fetches page `page + 1`.
    if (page + 1 >= DEEP_PAGES - 9) cursors.push(cursor);
  }
  return { base, cursors };
}

// ---------------------------------------------------------------------------------------------------------
const engines = urls.map((url, k) => {
  const manifestPath = opts.manifest?.[k] ?? manifestPathFor(url);
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'));
  return { url, name: engineName(url), manifest, t: targets(manifest) };
});
const fmt = (x, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : '–');
const rows = [];
const record = (engine, scenario, connections, r) => {
  rows.push({ engine: engine.name, scenario, connections, ...r });
  console.log(
    `  ${engine.name.padEnd(10)} ${scenario.padEnd(22)} c=${String(connections).padEnd(3)} ` +
      `${r.rps.toFixed(0).padStart(6)} req/s  p50 ${r.p50.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms  ` +
      `CPU µs/req server ${r.cpuUsPerRequest.toFixed(0)} db ${fmt(r.dbCpuUsPerRequest, 0)}  (${r.requests} requests)`,
  );
};

console.log(
  `waybill bench: ${os.cpus().length} × ${os.cpus()[0]?.model}, node ${process.version}, ` +
    `${DURATION} s per run (+${WARMUP} s warm-up), ${CONNECTIONS} connections for throughput`,
);
for (const e of engines) console.log(`  ${e.name}: ${e.url} (${e.manifest.records} records)`);

const mainScenarios = ['dlr', 'history', 'long', 'deep'].filter((s) => scenarios.has(s));
if (mainScenarios.length > 0) {
  const servers = [];
  for (const e of engines)
    servers.push(await startServer(e.url, e.manifest, { accessLog: false, label: `${e.name}-off` }));
  try {
    const deep = [];
    for (const [k, e] of engines.entries()) {
      deep[k] = scenarios.has('deep') ? await deepCursors(servers[k].url, e.manifest, e.t.auth) : null;
    }
    for (const scenario of mainScenarios) {
      for (const connections of [1, CONNECTIONS]) {
        // Engines alternate within each scenario, so their figures come from the same few minutes.
        for (const [k, e] of engines.entries()) {
          let spec;
          if (scenario === 'dlr') spec = { nextPath: e.t.dlrPath };
          else if (scenario === 'history')
            spec = { nextPath: e.t.historyPath, headers: { authorization: e.t.auth } };
          else if (scenario === 'long') {
            const { channel, channelUserId } = e.manifest.longHistory;
            const path = `/messages?channel=${channel}&channelUserId=${encodeURIComponent(channelUserId)}&size=20`;
            spec = { nextPath: () => path, headers: { authorization: e.t.auth } };
          } else {
            const { base, cursors } = deep[k];
            const path = new URL(base).pathname + new URL(base).search;
            let n = 0;
            spec = {
              nextPath: () => `${path}&cursor=${encodeURIComponent(cursors[n++ % cursors.length])}`,
              headers: { authorization: e.t.auth },
            };
          }
          const label = {
            dlr: '/dlr',
            history: 'history page 1',
            long: 'long history, page 1',
            deep: `long history, page ~${DEEP_PAGES}`,
          }[scenario];
          record(e, label, connections, await measure(servers[k], { ...spec, connections }));
        }
      }
    }
  } finally {
    for (const s of servers) await s.stop();
  }
}

const accessLogRatios = [];
if (scenarios.has('accesslog')) {
  for (const e of engines) {
    const off = await startServer(e.url, e.manifest, { accessLog: false, label: `${e.name}-accesslog-off` });
    const on = await startServer(e.url, e.manifest, { accessLog: true, label: `${e.name}-accesslog-on` });
    try {
      const got = { off: [], on: [] };
      for (let round = 0; round < ROUNDS; round++) {
        for (const [mode, server] of [
          ['off', off],
          ['on', on],
        ]) {
          // Two servers share the database here, and the idle one's pool closes connections meanwhile: the
          // backends' CPU cannot be told apart, so it is not reported.
          const r = await measure(
            server,
            { nextPath: e.t.dlrPath, connections: CONNECTIONS },
            { dbCpu: false },
          );
          got[`${mode}Cpu`] = [...(got[`${mode}Cpu`] ?? []), r.cpuUsPerRequest];
          got[mode].push(r.rps);
          record(e, `/dlr access log ${mode}`, CONNECTIONS, r);
        }
      }
      const mean = (xs) => xs.reduce((s, x) => s + x, 0) / xs.length;
      const pairs = got.on.map((on, i) => on / got.off[i]);
      const cpuRatio = mean(got.onCpu) / mean(got.offCpu);
      accessLogRatios.push({
        engine: e.name,
        off: mean(got.off),
        on: mean(got.on),
        ratio: mean(got.on) / mean(got.off),
        pairRatios: pairs,
        cpuRatio,
      });
    } finally {
      await off.stop();
      await on.stop();
    }
  }
}

// ---------------------------------------------------------------------------------------------------------
console.log(
  '\n| engine | scenario | connections | req/s | p50 ms | p99 ms | server CPU µs/req | PostgreSQL CPU µs/req | requests |',
);
console.log('|---|---|---:|---:|---:|---:|---:|---:|---:|');
for (const r of rows) {
  console.log(
    `| ${r.engine} | ${r.scenario} | ${r.connections} | ${fmt(r.rps, 0)} | ${fmt(r.p50)} | ${fmt(r.p99)} | ${fmt(r.cpuUsPerRequest, 0)} | ${r.engine === 'SQLite' ? '–' : fmt(r.dbCpuUsPerRequest, 0)} | ${r.requests} |`,
  );
}
if (engines.length > 1) {
  console.log(
    '\n| scenario | connections | ' +
      engines.map((e) => `${e.name} req/s`).join(' | ') +
      ` | ${engines[1].name} / ${engines[0].name} |`,
  );
  console.log(`|---|---:|${engines.map(() => '---:|').join('')}---:|`);
  const keyed = new Map();
  for (const r of rows) {
    if (r.scenario.startsWith('/dlr access log')) continue;
    const key = `${r.scenario}\u0000${r.connections}`;
    keyed.set(key, { ...(keyed.get(key) ?? {}), [r.engine]: r });
  }
  for (const [key, byEngine] of keyed) {
    const [scenario, connections] = key.split('\u0000');
    const a = byEngine[engines[0].name];
    const b = byEngine[engines[1].name];
    console.log(
      `| ${scenario} | ${connections} | ${engines.map((e) => fmt(byEngine[e.name]?.rps, 0)).join(' | ')} | ${fmt(b && a ? b.rps / a.rps : NaN)} |`,
    );
  }
}
if (accessLogRatios.length > 0) {
  console.log(
    '\n| engine | /dlr req/s, access log off (mean) | on (mean) | on / off | on / off per round | server CPU per request, on / off |',
  );
  console.log('|---|---:|---:|---:|---|---:|');
  for (const r of accessLogRatios) {
    console.log(
      `| ${r.engine} | ${fmt(r.off, 0)} | ${fmt(r.on, 0)} | ${fmt(r.ratio)} | ${r.pairRatios.map((x) => fmt(x)).join(', ')} | ${fmt(r.cpuRatio)} |`,
    );
  }
}
if (opts.json) {
  writeFileSync(
    opts.json,
    `${JSON.stringify({ date: new Date().toISOString(), cpus: os.cpus().length, duration: DURATION, rows, accessLogRatios }, null, 2)}\n`,
  );
}
