#!/usr/bin/env node
// `npm run bench -- [scenario…] [options]`: every hot path measured from outside, beside the machine's ceiling.
//
//   npm run bench                          every scenario on a 1,000,000-recipient SQLite dataset
//   npm run bench -- dlr --recipients 10000000
//   npm run bench -- dlr mode1 --database-url postgres://postgres@127.0.0.1:5432/waybill_bench
//   npm run bench -- --quick               every scenario, small and short: CI's check that they all still run
//   npm run bench -- dlr ingest --baseline-dist /tmp/old/packages/server/dist    two builds, alternately
//     (with --baseline-database-url sqlite:/tmp/old/bench.db when the builds store data differently: the
//     baseline then reads a dataset its own bench/datagen.mjs wrote, of the same size and seed)
//   npm run bench -- intake-smpp intake-kannel --smpp-window 100      receipts from an SMSC and from Kannel
//   npm run bench -- dlr --log-output pipe    every server's standard output to a pipe (as in a container)
//                                             instead of a file; this process copies it to the log file
//
// The dataset is generated once (bench/lib/datagen.mjs; bench/datagen.mjs by hand) and kept in bench/.data/.
// The built server runs as its own process in its production configuration (`waybill serve`, access log on;
// rate limit off), pinned to CPU 0; the load comes from another process (bench/lib/loader.mjs) pinned to CPU 1. Each read scenario is measured
// alternately against Waybill and against the ceiling, a bare node:http server answering the same bytes, in
// --rounds rounds, each round starting with the next of the servers (so each takes every place in turn); the
// figures are medians over the rounds, and the ratio is Waybill's req/s over the ceiling's.
// On SQLite the dlr, dlr-missing, mode1, history and receipts-feed scenarios also measure the lean reference
// (bench/lib/lean.mjs: those endpoints on node:http and better-sqlite3 alone) in the same rounds, once it has
// answered a few of the scenario's requests with Waybill's very bytes, and print Waybill's ratio to it beside
// the ratio to the ceiling.
// Server CPU per request comes from /proc. The ingest scenario (bench/lib/ingest.mjs) runs each build on its own
// fresh copy of the dataset, alternately, and reports records/s and server CPU per 1,000 records. The intake
// scenarios (bench/lib/intake.mjs) push receipts through one SMPP bind and the Kannel adapter, each round on a
// fresh copy, beside the operator API's receipts measured on the same server in the same round.
// The run ends with the goals of issue 19 (bench/lib/goals.mjs): each with this run's figure, or the scenario
// that measures it. docs/benchmarks.md explains the figures and records them.
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { runCallbacks } from './lib/callbacks.mjs';
import { commandLine } from './lib/cli.mjs';
import { postgresCpuMs } from './lib/cpu.mjs';
import { goalRows } from './lib/goals.mjs';
import { copyDatabase, dropDatabase, runIngest, runLeanIngest } from './lib/ingest.mjs';
import { runIntake } from './lib/intake.mjs';
import { DATASET_VERSION, dataDir, manifestPathFor, serverDist } from './lib/paths.mjs';
import { setLogOutput, startCeiling, startLean, startLoader, startWaybill } from './lib/processes.mjs';
import { fmt, leanShare, markdownTable, median } from './lib/report.mjs';
import { firstDifference, READ_SCENARIOS, rawGet, runReview, sampleBody } from './lib/scenarios.mjs';

/** The scenarios the lean reference (bench/lib/lean.mjs) is measured in as well: valid requests it serves. */
const LEAN_SCENARIOS = new Set(['dlr', 'dlr-missing', 'mode1', 'history', 'receipts-feed']);
const ALL = [
  ...Object.keys(READ_SCENARIOS),
  'workers',
  'review',
  'ingest',
  'intake-smpp',
  'intake-kannel',
  'callbacks',
];

const { values: opts, positionals } = commandLine(
  import.meta.url,
  {
    quick: false,
    recipients: null,
    'database-url': null,
    duration: null,
    warmup: null,
    rounds: null,
    connections: '50',
    workers: '2',
    'server-dist': serverDist,
    'baseline-dist': null,
    'baseline-database-url': null,
    'access-log': 'on',
    'log-output': 'file',
    'ingest-records': null,
    'ingest-concurrency': '2',
    'intake-receipts': null,
    'smpp-window': '100',
    'kannel-connections': '64',
    'cpu-prof': null,
    'sqlite-cache-mb': null,
    json: null,
  },
  { positionals: true, epilogue: `scenarios: ${ALL.join(', ')}` },
);
const unknown = positionals.filter((s) => !ALL.includes(s));
if (unknown.length > 0) {
  console.error(`unknown scenario ${unknown.join(', ')}; known: ${ALL.join(', ')}`);
  process.exit(2);
}
if (!['file', 'pipe'].includes(opts['log-output'])) {
  console.error(`--log-output is file or pipe, not ${opts['log-output']}`);
  process.exit(2);
}
if (!/^[1-9][0-9]*$/.test(opts['ingest-concurrency'])) {
  console.error(`--ingest-concurrency is a number of batches, 1 or more, not ${opts['ingest-concurrency']}`);
  process.exit(2);
}
const QUICK = opts.quick;
const scenarios = positionals.length > 0 ? positionals : ALL;
const RECIPIENTS = Number(opts.recipients ?? (QUICK ? 20_000 : 1_000_000));
const DURATION_S = Number(opts.duration ?? (QUICK ? 0.5 : 10));
const WARMUP_S = Number(opts.warmup ?? (QUICK ? 0.2 : 2));
const ROUNDS = Number(opts.rounds ?? (QUICK ? 1 : 3));
const CONNECTIONS = Number(opts.connections);
const WORKERS = Number(opts.workers);
const INGEST_CONCURRENCY = Number(opts['ingest-concurrency']);
const INGEST_RECORDS = Number(opts['ingest-records'] ?? (QUICK ? 2_000 : 100_000));
const INTAKE_RECEIPTS = Number(opts['intake-receipts'] ?? (QUICK ? 1_000 : 30_000));
const dist = resolve(opts['server-dist']);
const baselineDist = opts['baseline-dist'] ? resolve(opts['baseline-dist']) : null;
const accessLog = opts['access-log'] !== 'off';
setLogOutput(opts['log-output']);
const errors = [];

// ---------------------------------------------------------------------------------------------------------
// The dataset.
const quickDir = QUICK ? mkdtempSync(join(os.tmpdir(), 'waybill-bench-')) : null;
process.on('exit', () => {
  if (quickDir) rmSync(quickDir, { recursive: true, force: true });
});
const databaseUrl =
  opts['database-url'] ??
  `sqlite:${QUICK ? join(quickDir, 'quick.db') : join(dataDir, `bench-${RECIPIENTS}.db`)}`;
const manifestPath = manifestPathFor(databaseUrl);
/** The dataset's manifest; null when there is none, or when it is of an older layout (generated again). */
function readManifest() {
  let found;
  try {
    found = JSON.parse(readFileSync(manifestPath, 'utf8'));
  } catch (error) {
    if (error.code === 'ENOENT') return null;
    throw error;
  }
  if (found.recipients !== RECIPIENTS && opts.recipients) {
    throw new Error(`${manifestPath} holds ${found.recipients} recipients, not ${RECIPIENTS}`);
  }
  if ((found.version ?? 1) < DATASET_VERSION) {
    console.error(`${manifestPath}: a dataset of an older layout (${found.version ?? 1}), generated again`);
    return null;
  }
  return found;
}
let manifest = readManifest();
if (manifest === null) {
  console.error(`generating ${RECIPIENTS.toLocaleString('en')} recipients into ${databaseUrl}…`);
  const { generate } = await import('./lib/datagen.mjs');
  // Quick mode keeps the long history short: its deep page is walked to first, a request per page.
  manifest = await generate({
    databaseUrl,
    recipients: RECIPIENTS,
    // A manifest still there is of an older layout: its SQLite file is written again from scratch.
    force: existsSync(manifestPath),
    ...(QUICK ? { longMessages: 3_000 } : {}),
  });
}
const engine = databaseUrl.startsWith('sqlite:') ? 'SQLite' : 'PostgreSQL';
// SQLite's page cache and memory map, sized to the file as docs/operations.md asks (at least the default 256):
// with less, random ids miss the cache and every lookup reads the file (measured in docs/benchmarks.md).
const sqliteCacheMb =
  engine === 'SQLite'
    ? Number(
        opts['sqlite-cache-mb'] ??
          Math.max(256, Math.ceil(statSync(databaseUrl.slice(7)).size / 2 ** 20 / 64) * 64),
      )
    : null;
const serverEnv = sqliteCacheMb ? { WAYBILL_SQLITE_CACHE_MB: String(sqliteCacheMb) } : {};
const dataset = { databaseUrl: manifest.databaseUrl, pepper: manifest.pepper };
/**
 * The baseline build's dataset: the same one, or its own copy when the two builds store data differently. A
 * copy must hold the same data (the same generator's size and seed): same counts, same ids asked for.
 */
const baselineDataset = (() => {
  const url = opts['baseline-database-url'];
  if (!url) return dataset;
  if (!existsSync(manifestPathFor(url)))
    throw new Error(`${url} has no manifest: write it with the baseline's own bench/datagen.mjs`);
  const theirs = JSON.parse(readFileSync(manifestPathFor(url), 'utf8'));
  for (const field of [
    'recipients',
    'records',
    'events',
    'key',
    'secret',
    'pepper',
    'dlrIds',
    'missingIds',
  ]) {
    if (JSON.stringify(theirs[field]) !== JSON.stringify(manifest[field]))
      throw new Error(`${url} holds other data than ${manifest.databaseUrl} (${field} differs)`);
  }
  return { databaseUrl: theirs.databaseUrl, pepper: theirs.pepper };
})();

console.log(
  `# waybill bench, ${new Date().toISOString().slice(0, 16)}Z: ${os.cpus().length} × ${os.cpus()[0]?.model}, ` +
    `${Math.round(os.totalmem() / 2 ** 30)} GiB, node ${process.version}\n` +
    `# ${engine}, ${manifest.recipients.toLocaleString('en')} recipients (${manifest.records.toLocaleString('en')} ` +
    `records, ${manifest.events.toLocaleString('en')} events${sqliteCacheMb ? `, cache ${sqliteCacheMb} MB` : ''}); ${CONNECTIONS} connections, ${ROUNDS} round(s) of ` +
    `${DURATION_S} s (+${WARMUP_S} s warm-up); access log ${accessLog ? 'on' : 'off'}` +
    (opts['log-output'] === 'pipe' ? ', standard output to a pipe' : '') +
    (INGEST_CONCURRENCY === 2 ? '' : `; ingest batches ${INGEST_CONCURRENCY} in flight`) +
    (baselineDist ? `; baseline build ${baselineDist}` : '') +
    (baselineDataset === dataset ? '' : ` on ${baselineDataset.databaseUrl}`),
);

const rows = [];

/** One measurement of `server` by `loader`, with the server's (and PostgreSQL's) CPU per request. */
async function measure(loader, server, requests) {
  const cpu0 = server.cpuMs();
  const db0 = postgresCpuMs(manifest.databaseUrl);
  const r = await loader.run({
    host: server.host,
    port: server.port,
    connections: CONNECTIONS,
    warmupMs: WARMUP_S * 1000,
    durationMs: DURATION_S * 1000,
    requests,
  });
  // CPU is read over warm-up and run alike, so divide by every request the server answered in that time.
  const answered = r.requests * ((DURATION_S + WARMUP_S) / DURATION_S);
  r.cpuUsPerRequest = ((server.cpuMs() - cpu0) * 1000) / answered;
  r.dbCpuUsPerRequest = ((postgresCpuMs(manifest.databaseUrl) - db0) * 1000) / answered;
  const bad = Object.entries(r.statuses).filter(([s]) => s !== '200');
  if (bad.length > 0 || r.socketErrors > 0 || r.requests === 0) {
    errors.push(
      `${server.label}: ${r.requests} answered, statuses ${JSON.stringify(r.statuses)}, ${r.socketErrors} socket errors`,
    );
  }
  return r;
}

function summarize(results) {
  return {
    rps: median(results.map((r) => r.rps)),
    p50Ms: median(results.map((r) => r.p50Ms)),
    p99Ms: median(results.map((r) => r.p99Ms)),
    cpuUsPerRequest: median(results.map((r) => r.cpuUsPerRequest)),
    dbCpuUsPerRequest: median(results.map((r) => r.dbCpuUsPerRequest)),
    loaderCpuShare: median(results.map((r) => r.loaderCpuMs / (r.seconds * 1000 + WARMUP_S * 1000))),
    requests: results.reduce((s, r) => s + r.requests, 0),
    rounds: results.map((r) => Math.round(r.rps)),
  };
}

// ---------------------------------------------------------------------------------------------------------
// Read scenarios: Waybill (and the baseline build) and the ceiling, alternately.
const readNames = scenarios.filter((s) => s in READ_SCENARIOS || s === 'workers');
if (readNames.length > 0) {
  const cpuProf = opts['cpu-prof'] ? resolve(opts['cpu-prof']) : undefined;
  const waybill = await startWaybill({
    ...dataset,
    dist,
    accessLog,
    cpus: '0',
    label: 'waybill',
    cpuProf,
    env: serverEnv,
  });
  const baseline = baselineDist
    ? await startWaybill({
        ...baselineDataset,
        dist: baselineDist,
        accessLog,
        cpus: '0',
        label: 'baseline',
        cpuProf,
        env: serverEnv,
      })
    : null;
  // The lean reference reads SQLite only.
  const lean =
    engine === 'SQLite' && readNames.some((s) => LEAN_SCENARIOS.has(s))
      ? await startLean({ ...dataset, cpus: '0', env: serverEnv, cpuProf })
      : null;
  const loader = startLoader({ cpus: '1' });
  const costs = new Map();
  try {
    for (const name of readNames.filter((s) => s !== 'workers')) {
      const scenario = READ_SCENARIOS[name];
      const paths = await scenario.requests(manifest, waybill.url);
      const requests = paths.map(({ path, headers }) => rawGet(path, headers));
      // A baseline on its own dataset gets its own requests: a feed cursor is bound to its account's id.
      const baselineRequests =
        baseline && baselineDataset !== dataset
          ? (await scenario.requests(manifest, baseline.url)).map(({ path, headers }) =>
              rawGet(path, headers),
            )
          : requests;
      const body = await sampleBody(waybill.url, paths);
      const ceiling = await startCeiling({ body, cpus: '0', label: `ceiling-${name}` });
      const got = { waybill: [], ceiling: [], baseline: [], lean: [] };
      let withLean = lean && LEAN_SCENARIOS.has(name) ? lean : null;
      // A lean reference that answers other bytes does other work: no ratio to it, and the run fails.
      const differs =
        withLean && (await firstDifference(scenario, paths, ['Waybill', waybill.url], ['lean', lean.url]));
      if (differs) {
        console.error(`${name}: THE LEAN REFERENCE ANSWERS OTHER BYTES THAN WAYBILL. ${differs}`);
        errors.push(`${name}: the lean reference differs from Waybill: ${differs}`);
        withLean = null;
      }
      try {
        // Each round starts with the next server of the list: the one measured right after another pays for
        // what that one left in the caches (an A/A run of one build against itself differed by 6%), so every
        // server takes every place in turn.
        const servers = [
          ['ceiling', ceiling],
          ['waybill', waybill],
          ...(baseline ? [['baseline', baseline]] : []),
          ...(withLean ? [['lean', withLean]] : []),
        ];
        for (let round = 0; round < ROUNDS; round++) {
          for (let i = 0; i < servers.length; i++) {
            const [key, server] = servers[(round + i) % servers.length];
            got[key].push(await measure(loader, server, key === 'baseline' ? baselineRequests : requests));
          }
        }
      } finally {
        await ceiling.stop();
      }
      const w = summarize(got.waybill);
      const c = summarize(got.ceiling);
      const b = baseline ? summarize(got.baseline) : null;
      const l = withLean ? summarize(got.lean) : null;
      costs.set(name, w);
      const row = {
        scenario: name,
        title: scenario.title,
        bodyBytes: body.length,
        waybill: w,
        ceiling: c,
        ratio: w.rps / c.rps,
        ...(b ? { baseline: b, baselineRatio: b.rps / c.rps } : {}),
        ...(l
          ? { lean: l, leanRatio: w.rps / l.rps, leanCpuRatio: l.cpuUsPerRequest / w.cpuUsPerRequest }
          : {}),
        target: scenario.target ?? null,
      };
      if (scenario.target?.costOf && costs.has(scenario.target.costOf)) {
        const first = costs.get(scenario.target.costOf);
        row.costRatio = w.cpuUsPerRequest / first.cpuUsPerRequest;
        row.rpsRatio = first.rps / w.rps;
      }
      if (name === 'dlr' || name === 'dlr-missing') row.serverRssMb = waybill.rssBytes() / 2 ** 20;
      rows.push(row);
      printRow(row);
    }
  } finally {
    await waybill.stop();
    await baseline?.stop();
    await lean?.stop();
    loader.stop();
  }

  if (readNames.includes('workers')) {
    // `waybill serve --workers N` takes both cores, so its loader is not pinned; it is held against the
    // single-process ceiling, measured as in the dlr scenario (server on CPU 0, loader on CPU 1).
    const paths = await READ_SCENARIOS.dlr.requests(manifest);
    const requests = paths.map(({ path, headers }) => rawGet(path, headers));
    const cluster = await startWaybill({
      ...dataset,
      dist,
      accessLog,
      workers: WORKERS,
      label: 'waybill-workers',
    });
    const body = await sampleBody(cluster.url, paths);
    const ceiling = await startCeiling({ body, cpus: '0', label: 'ceiling-workers' });
    const pinnedLoader = startLoader({ cpus: '1' });
    const freeLoader = startLoader();
    const got = { waybill: [], ceiling: [] };
    try {
      for (let round = 0; round < ROUNDS; round++) {
        got.ceiling.push(await measure(pinnedLoader, ceiling, requests));
        got.waybill.push(await measure(freeLoader, cluster, requests));
      }
    } finally {
      await ceiling.stop();
      await cluster.stop();
      pinnedLoader.stop();
      freeLoader.stop();
    }
    const w = summarize(got.waybill);
    const c = summarize(got.ceiling);
    const row = {
      scenario: 'workers',
      title: `/dlr, --workers ${WORKERS} (both cores) vs the one-core ceiling`,
      bodyBytes: body.length,
      waybill: w,
      ceiling: c,
      ratio: w.rps / c.rps,
      target: { ratio: 0.7 },
    };
    rows.push(row);
    printRow(row);
  }
}

function printRow(r) {
  const w = r.waybill;
  const c = r.ceiling;
  let line =
    `${r.scenario.padEnd(14)} ${fmt(w.rps).padStart(7)} req/s  p50 ${fmt(w.p50Ms, 2)} p99 ${fmt(w.p99Ms, 2)} ms  ` +
    `${fmt(w.cpuUsPerRequest)} µs CPU/req | ceiling ${fmt(c.rps).padStart(7)} req/s ${fmt(c.cpuUsPerRequest)} µs | ` +
    `ratio ${fmt(r.ratio, 2)}`;
  if (r.baseline) {
    line += ` (baseline build ${fmt(r.baselineRatio, 2)}, ${fmt(r.baseline.rps)} req/s, ${fmt(r.baseline.cpuUsPerRequest)} µs CPU/req)`;
  }
  if (r.lean) {
    line += ` | Waybill ${leanShare(r)}`;
  }
  if (r.costRatio !== undefined) line += ` | cost ×${fmt(r.costRatio, 2)} of ${r.target.costOf}`;
  if (r.serverRssMb !== undefined) line += ` | RSS ${fmt(r.serverRssMb)} MB`;
  if (engine === 'PostgreSQL') line += ` | PostgreSQL ${fmt(w.dbCpuUsPerRequest)} µs/req`;
  line += ` | loader CPU ${fmt(w.loaderCpuShare * 100)}%`;
  console.log(line);
}

// ---------------------------------------------------------------------------------------------------------
// The review page's query (store and domain, in this process), one call at a time.
if (scenarios.includes('review')) {
  try {
    for (const r of await runReview({
      manifest,
      dist,
      databaseUrl: manifest.databaseUrl,
      calls: QUICK ? 10 : 100,
      warmup: QUICK ? 2 : 10,
    })) {
      rows.push(r);
      console.log(
        `${r.scenario.padEnd(16)} p50 ${fmt(r.p50Ms, 1)} p99 ${fmt(r.p99Ms, 1)} max ${fmt(r.maxMs, 1)} ms ` +
          `(${r.calls} calls; ${fmt(r.sent)} recipients, ${r.networks} networks, ${r.days} days) | target ≤ ${r.target.maxMs} ms`,
      );
      if (r.maxMs > r.target.maxMs && !QUICK) errors.push(`${r.scenario}: slowest call ${fmt(r.maxMs)} ms`);
    }
  } catch (error) {
    errors.push(`review: ${error.message}`);
  }
}

// ---------------------------------------------------------------------------------------------------------
// Ingest through the operator API: each build on its own fresh copy of the dataset, alternately, --rounds times.
if (scenarios.includes('ingest')) {
  const builds = [
    { label: 'waybill', dist, databaseUrl: manifest.databaseUrl },
    ...(baselineDist
      ? [{ label: 'baseline', dist: baselineDist, databaseUrl: baselineDataset.databaseUrl }]
      : []),
  ];
  const got = new Map(builds.map((b) => [b.label, []]));
  // On SQLite, the lean store-only reference writes the same records in each round (bench/lib/lean-ingest.mjs).
  const leanIngest = engine === 'SQLite' ? [] : null;
  const runLean = async (round) => {
    const copy = await copyDatabase(manifest.databaseUrl, 'ingest-lean');
    try {
      leanIngest.push(
        await runLeanIngest({ databaseUrl: copy, records: INGEST_RECORDS, seed: 99 + round, cpus: '0' }),
      );
    } finally {
      await dropDatabase(copy);
    }
  };
  for (let round = 0; round < ROUNDS; round++) {
    // The reference takes each place among the builds in turn: a round's first run was seen slower.
    const leanAt = round % (builds.length + 1);
    for (const [place, build] of builds.entries()) {
      if (leanIngest && place === leanAt) await runLean(round);
      const copy = await copyDatabase(build.databaseUrl, `ingest-${build.label}`);
      try {
        const server = await startWaybill({
          databaseUrl: copy,
          pepper: manifest.pepper,
          dist: build.dist,
          accessLog,
          cpus: '0',
          label: `${build.label}-ingest`,
          cpuProf: opts['cpu-prof'] ? resolve(opts['cpu-prof']) : undefined,
          // The ingest account has a callback URL: receipts queue deliveries, which nothing sends here.
          env: { ...serverEnv, WAYBILL_CALLBACK_RELAY: 'off' },
        });
        try {
          got.get(build.label).push(
            await runIngest({
              server,
              databaseUrl: copy,
              records: INGEST_RECORDS,
              seed: 99 + round,
              concurrency: INGEST_CONCURRENCY,
            }),
          );
        } finally {
          await server.stop();
        }
      } finally {
        await dropDatabase(copy);
      }
    }
    if (leanIngest && leanAt === builds.length) await runLean(round);
  }
  const summarizeIngest = (results) => {
    const of = (key) => median(results.map((r) => r[key]));
    return {
      recordsPerSecond: of('recordsPerSecond'),
      p50Ms: of('p50Ms'),
      p99Ms: of('p99Ms'),
      cpuMsPer1000: of('cpuMsPer1000'),
      answeredCpuMsPer1000: of('answeredCpuMsPer1000'),
      dbCpuMsPer1000: of('dbCpuMsPer1000'),
      rounds: results.map((r) => Math.round(r.recordsPerSecond)),
    };
  };
  for (const kind of ['messages', 'receipts']) {
    const [k, b] = builds.map((build) => summarizeIngest(got.get(build.label).map((r) => r[kind])));
    const f = leanIngest ? summarizeIngest(leanIngest.map((r) => r[kind])) : null;
    const row = {
      scenario: `ingest-${kind}`,
      title: `operator API, ${kind}, batches of 1,000`,
      ingest: k,
      ...(b ? { baseline: b } : {}),
      ...(f ? { lean: f, leanShareByCpu: f.cpuMsPer1000 / k.cpuMsPer1000 } : {}),
    };
    rows.push(row);
    // On SQLite the phase's CPU runs a second past its last answer, its log's checkpoints with it
    // (ingest.mjs SETTLE_MS); beside it, what the last answer had cost.
    const cost = (x) =>
      `${fmt(x.cpuMsPer1000, 1)} ms CPU per 1,000` +
      (engine === 'SQLite' ? ` (${fmt(x.answeredCpuMsPer1000, 1)} by the last answer)` : '') +
      (engine === 'PostgreSQL' ? ` (PostgreSQL ${fmt(x.dbCpuMsPer1000, 1)})` : '');
    console.log(
      `${row.scenario.padEnd(16)} ${fmt(k.recordsPerSecond).padStart(7)} records/s  ` +
        `batch p50 ${fmt(k.p50Ms)} p99 ${fmt(k.p99Ms)} ms  ${cost(k)}` +
        (b ? ` | baseline build ${fmt(b.recordsPerSecond)} records/s, ${cost(b)}` : ''),
    );
    if (f)
      console.log(
        `${''.padEnd(16)}   lean store-only reference ${fmt(f.recordsPerSecond)} records/s, ${cost(f)}; ` +
          `Waybill's share of it by CPU ${fmt(row.leanShareByCpu, 2)}×`,
      );
    for (const [label, results] of got) {
      const failed = results.filter((r) => r[kind].failures > 0);
      for (const r of failed)
        errors.push(
          `ingest ${kind} (${label}): ${r[kind].failures} failed batches, first ${r[kind].firstFailure}`,
        );
    }
  }
}

// ---------------------------------------------------------------------------------------------------------
// Receipt intake: one SMPP bind and the Kannel adapter, each beside the operator API's receipts in the same
// round, on a fresh copy of the dataset per round.
const intakePaths = ['smpp', 'kannel'].filter((p) => scenarios.includes(`intake-${p}`));
if (intakePaths.length > 0) {
  const window = Number(opts['smpp-window']);
  const connections = Number(opts['kannel-connections']);
  const got = [];
  for (let round = 0; round < ROUNDS; round++) {
    // The API first in odd rounds, last in even ones: a machine that gets busier over a round favours neither.
    const paths = round % 2 === 0 ? ['api', ...intakePaths] : [...intakePaths, 'api'];
    const copy = await copyDatabase(manifest.databaseUrl, 'intake');
    try {
      const server = await startWaybill({
        databaseUrl: copy,
        pepper: manifest.pepper,
        dist,
        accessLog,
        cpus: '0',
        label: 'waybill-intake',
        cpuProf: opts['cpu-prof'] ? resolve(opts['cpu-prof']) : undefined,
        env: { ...serverEnv, WAYBILL_CALLBACK_RELAY: 'off' },
      });
      try {
        got.push(
          await runIntake({
            server,
            databaseUrl: copy,
            paths,
            n: INTAKE_RECEIPTS,
            warmup: Math.min(1_000, Math.ceil(INTAKE_RECEIPTS / 10)),
            window,
            connections,
            seed: 7 + round,
          }),
        );
      } finally {
        await server.stop();
      }
    } finally {
      await dropDatabase(copy);
    }
  }
  const of = (path, key) => median(got.map((r) => r[path][key]));
  const rounds = (path) => got.map((r) => Math.round(r[path].receiptsPerSecond));
  const cost = (path) =>
    `${fmt(of(path, 'cpuMsPer1000'), 1)} ms CPU per 1,000` +
    (engine === 'PostgreSQL' ? ` (PostgreSQL ${fmt(of(path, 'dbCpuMsPer1000'), 1)})` : '');
  const api = of('api', 'receiptsPerSecond');
  for (const path of intakePaths) {
    const rps = of(path, 'receiptsPerSecond');
    // The ratio of the round, then its median: both paths of one round saw the same machine.
    const ratios = got.map((r) => r[path].receiptsPerSecond / r.api.receiptsPerSecond);
    const ratio = median(ratios);
    const how = path === 'smpp' ? `window ${window}` : `${connections} connections`;
    rows.push({
      scenario: `intake-${path}`,
      title: path === 'smpp' ? `one SMPP bind, ${how}` : `Kannel dlr-url fetches, ${how}`,
      intake: {
        rps,
        p50Ms: of(path, 'p50Ms'),
        p99Ms: of(path, 'p99Ms'),
        cpuMsPer1000: of(path, 'cpuMsPer1000'),
        rounds: rounds(path),
        ratio,
        ratios,
      },
      api: { rps: api, rounds: rounds('api'), cpuMsPer1000: of('api', 'cpuMsPer1000') },
    });
    console.log(
      `${`intake-${path}`.padEnd(16)} ${fmt(rps).padStart(7)} receipts/s  ack p50 ${fmt(of(path, 'p50Ms'), 2)} ` +
        `p99 ${fmt(of(path, 'p99Ms'), 2)} ms  ${how}  ${cost(path)}  rounds ${rounds(path).join(', ')} | ` +
        `API receipts ${fmt(api)}/s (rounds ${rounds('api').join(', ')}): ratio ${fmt(ratio, 2)} ` +
        `(rounds ${ratios.map((x) => fmt(x, 2)).join(', ')})`,
    );
  }
  console.log(
    `${'intake-api'.padEnd(16)} ${fmt(api).padStart(7)} receipts/s  batch p50 ${fmt(of('api', 'p50Ms'))} ` +
      `p99 ${fmt(of('api', 'p99Ms'))} ms  batches of 1,000, 2 in flight  ${cost('api')}`,
  );
  for (const [round, r] of got.entries()) {
    for (const [path, x] of Object.entries(r)) {
      if (x.failures.length > 0)
        errors.push(
          `intake ${path}, round ${round + 1}: ${x.failures.length} not acknowledged, first ${x.failures[0]}`,
        );
      if (x.missing > 0)
        errors.push(
          `intake ${path}, round ${round + 1}: ${x.missing} acknowledged receipts missing from the feed`,
        );
    }
  }
}

// Callback deliveries to a local receiver.
if (scenarios.includes('callbacks')) {
  try {
    const r = await runCallbacks({
      n: QUICK ? 200 : 20_000,
      dist,
      accessLog: accessLog ? 'on' : 'off',
      ...(!QUICK && engine === 'PostgreSQL' ? dataset : {}),
    });
    rows.push({ scenario: 'callbacks', title: 'callback deliveries to a local receiver', callbacks: r });
    console.log(
      `callbacks        ${fmt(r.deliveriesPerS).padStart(7)} deliveries/s  lag p50 ${r.lagP50Ms} p99 ${r.lagP99Ms} ms  ` +
        `(${r.n} receipts, ${r.repeats} repeats)`,
    );
  } catch (error) {
    errors.push(`callbacks: ${error.message}`);
  }
}

// ---------------------------------------------------------------------------------------------------------
console.log(
  `\n${markdownTable(
    [
      ['scenario', ''],
      ['Waybill req/s', ':'],
      ['p50 ms', ':'],
      ['p99 ms', ':'],
      ['server CPU µs/req', ':'],
      ['ceiling req/s', ':'],
      ['ratio', ':'],
      ['target', ''],
    ],
    rows
      .filter((r) => r.waybill)
      .map((r) => {
        const t = r.target;
        const target = !t
          ? ''
          : t.ratio
            ? `≥ ${t.ratio}×${t.p99Ms ? `, p99 ≤ ${t.p99Ms} ms` : ''}`
            : `cost ≤ ${t.costRatio}× ${t.costOf}: ×${fmt(r.costRatio, 2)}`;
        return [
          r.title,
          fmt(r.waybill.rps),
          fmt(r.waybill.p50Ms, 2),
          fmt(r.waybill.p99Ms, 2),
          `${fmt(r.waybill.cpuUsPerRequest)}${r.baseline ? ` (was ${fmt(r.baseline.cpuUsPerRequest)})` : ''}`,
          fmt(r.ceiling.rps),
          `**${fmt(r.ratio, 2)}×**${r.baseline ? ` (was ${fmt(r.baselineRatio, 2)}×)` : ''}${r.lean ? `; ${leanShare(r)}` : ''}`,
          target,
        ];
      }),
  )}`,
);

// The goals of issue 19, from this run's rows; the dataset's size is the generator's record of it.
const datasetBytes =
  manifest.generation?.bytes ?? (engine === 'SQLite' ? statSync(databaseUrl.slice(7)).size : null);
const goals = goalRows({ rows, engine, recipients: manifest.recipients, datasetBytes });
console.log(
  `\nGoals (issue 19)${QUICK ? ' — --quick: figures of a short check that everything runs, not measurements' : ''}\n\n` +
    markdownTable(
      [
        ['goal', ''],
        ['target', ''],
        ['this run', ''],
        ['status', ''],
        ['measured by', ''],
      ],
      goals.map((g) => [g.goal, g.target, g.measured, g.verdict, g.by]),
    ),
);
if (opts.json) {
  writeFileSync(
    opts.json,
    `${JSON.stringify({ date: new Date().toISOString(), engine, manifest: { recipients: manifest.recipients, records: manifest.records, events: manifest.events, bytes: databaseUrl.startsWith('sqlite:') ? statSync(databaseUrl.slice(7)).size : null }, rows, goals }, null, 2)}\n`,
  );
}
if (errors.length > 0) {
  console.error(`\n${errors.length} scenario(s) had errors:\n  ${errors.join('\n  ')}`);
  process.exit(1);
}
