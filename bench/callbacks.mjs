#!/usr/bin/env node
// Callback relay throughput and lag (bench/lib/callbacks.mjs), with more knobs than the `callbacks` scenario of
// `npm run bench`: several accounts, paced receipts, another database, two instances, two builds.
//
//   npm run build && node bench/callbacks.mjs [--n 20000] [--accounts 1] [--rate 0] [--access-log on]
//                                             [--database-url sqlite:/tmp/x.db | postgres://…/name]
//                                             [--instances 1] [--baseline-dist /tmp/old/packages/server/dist]
//                                             [--rounds 1] [--cpu-prof dir] [--keep] [--json]
//
// On PostgreSQL each run gets an empty database of its own beside the one named (`<name>_<build>_<round>`,
// dropped after it). --instances 2 starts two servers on it, both relaying, receipt batches sent to them in
// turn (PostgreSQL only). --baseline-dist runs that build too, alternately with this one (each round starting
// with the other), --rounds times each, and prints them side by side. Server and PostgreSQL CPU are per
// delivery, receipt ingest included.
//
// Extra server settings pass through the environment (WAYBILL_CALLBACK_CONCURRENCY=…, …); the server's log is
// bench/.data/logs/waybill-callbacks.log.
import { resolve } from 'node:path';
import { freshDatabase, runCallbacks } from './lib/callbacks.mjs';
import { commandLine } from './lib/cli.mjs';
import { serverDist } from './lib/paths.mjs';

const { values: opts } = commandLine(import.meta.url, {
  n: '20000',
  accounts: '1',
  rate: '0',
  'access-log': 'on',
  'database-url': null,
  instances: '1',
  'baseline-dist': null,
  rounds: '1',
  'cpu-prof': null,
  keep: false,
  json: false,
});
const databaseUrl = opts['database-url'];
const builds = [
  { label: 'waybill', dist: serverDist },
  ...(opts['baseline-dist'] ? [{ label: 'baseline', dist: resolve(opts['baseline-dist']) }] : []),
];
const results = [];
for (let round = 1; round <= Number(opts.rounds); round++) {
  // Each round starts with the other build: the second run of a round was seen favoured, whichever build it was.
  for (const build of round % 2 === 1 ? builds : [...builds].reverse()) {
    const fresh = databaseUrl?.startsWith('postgres')
      ? await freshDatabase(databaseUrl, `${build.label}_${round}`)
      : null;
    try {
      const r = await runCallbacks({
        n: Number(opts.n),
        accounts: Number(opts.accounts),
        rate: Number(opts.rate),
        accessLog: opts['access-log'],
        databaseUrl: fresh?.url ?? databaseUrl,
        instances: Number(opts.instances),
        dist: build.dist,
        label: `${build.label}-callbacks`,
        ...(opts['cpu-prof'] ? { cpuProf: resolve(opts['cpu-prof'], `${build.label}-${round}`) } : {}),
        keep: opts.keep,
      });
      results.push({ build: build.label, round, ...r });
      if (!opts.json) print(build.label, round, r);
    } finally {
      if (!opts.keep) await fresh?.drop();
    }
  }
}
if (opts.json) console.log(JSON.stringify(results));
else if (results.length > 1) {
  console.log('\nbuild     round  deliveries/s  Waybill CPU µs/delivery  PostgreSQL CPU µs/delivery');
  for (const r of results) {
    console.log(
      `${r.build.padEnd(9)} ${String(r.round).padStart(5)}  ${String(r.deliveriesPerS).padStart(12)}  ` +
        `${String(r.serverCpuUsPerDelivery).padStart(23)}  ${String(r.dbCpuUsPerDelivery ?? '-').padStart(26)}`,
    );
  }
}
process.exit(0);

function print(label, round, r) {
  console.log(
    `callbacks (${label}, round ${round}): ${r.n} receipts → ${r.n} deliveries, ${r.accounts} account(s), ` +
      `${r.instances} instance(s), access log ${r.accessLog}`,
  );
  console.log(`  messages ingest     ${r.messagesIngestS} s (not timed below)`);
  console.log(`  receipts ingest     ${r.receiptsIngestS} s (${r.rate} receipts/s asked)`);
  console.log(
    `  deliveries/s        ${r.deliveriesPerS}  (${r.elapsedS} s, first receipt batch → last arrival)`,
  );
  console.log(`                      ${r.deliveriesPerSFromMessages}  counting the message ingest too`);
  console.log(
    `  lag p50 / p99 / max ${r.lagP50Ms} / ${r.lagP99Ms} / ${r.lagMaxMs} ms (ingest response → arrival)`,
  );
  console.log(`  repeats             ${r.repeats}`);
  console.log(`  server CPU          ${r.serverCpuS} s, ${r.serverCpuUsPerDelivery} µs per delivery`);
  if (r.dbCpuS !== undefined) {
    console.log(
      `  PostgreSQL CPU      ${r.dbCpuS} s, ${r.dbCpuUsPerDelivery} µs per delivery ` +
        `(${r.dbCpuDuringIngestS} s of it while the receipts were ingested)`,
    );
  }
  if (r.kept) console.log(`  database in         ${r.kept}`);
}
