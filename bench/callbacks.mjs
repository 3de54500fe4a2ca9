#!/usr/bin/env node
// Callback relay throughput and lag (bench/lib/callbacks.mjs), with more knobs than the `callbacks` scenario of
// `npm run bench`: several accounts, paced receipts, another database.
//
//   npm run build && node bench/callbacks.mjs [--n 20000] [--accounts 1] [--rate 0] [--access-log on]
//                                             [--database-url sqlite:/tmp/x.db] [--keep] [--json]
//
// Extra server settings pass through the environment (WAYBILL_CALLBACK_CONCURRENCY=…, …); the server's log is
// bench/.data/logs/waybill-callbacks.log.
import { runCallbacks } from './lib/callbacks.mjs';
import { commandLine } from './lib/cli.mjs';

const { values: opts } = commandLine(import.meta.url, {
  n: '20000',
  accounts: '1',
  rate: '0',
  'access-log': 'on',
  'database-url': null,
  keep: false,
  json: false,
});
const r = await runCallbacks({
  n: Number(opts.n),
  accounts: Number(opts.accounts),
  rate: Number(opts.rate),
  accessLog: opts['access-log'],
  databaseUrl: opts['database-url'],
  keep: opts.keep,
});
if (opts.json) console.log(JSON.stringify(r));
else {
  console.log(
    `callbacks: ${r.n} receipts → ${r.n} deliveries, ${r.accounts} account(s), access log ${r.accessLog}`,
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
  console.log(`  server CPU          ${r.serverCpuS} s`);
  if (r.kept) console.log(`  database in         ${r.kept}`);
}
process.exit(0);
