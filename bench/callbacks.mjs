#!/usr/bin/env node
// Callback relay throughput and lag, against the built server run as a child process.
//
//   npm run build && node bench/callbacks.mjs [--n 20000] [--accounts 1] [--rate 0] [--access-log on]
//                                             [--database-url sqlite:/tmp/x.db] [--keep]
//
// Starts `waybill serve` (SQLite file in a temporary directory unless --database-url is given; relay on, private
// destinations allowed, access log on), and a receiver in this process that answers 200 at once. Creates
// --accounts accounts whose callbackUrl is the receiver, ingests N SMS messages (batches of 1000, not timed),
// then N receipts (batches of 1000, spread over the accounts; --rate caps receipts/s, 0 = as fast as the API
// takes them) and waits until every delivery has arrived. Prints:
//   deliveries/s  N / (last arrival − start of the first receipt batch), and counting the message ingest too
//   lag p50/p99   arrival − the moment the ingest response of that receipt's batch came back
//   server CPU    user+system seconds the server used while delivering (from /proc, Linux)
// Extra server settings pass through the environment (WAYBILL_CALLBACK_CONCURRENCY=…, …).
import { spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const here = dirname(fileURLToPath(import.meta.url));
// WAYBILL_SERVER_DIST: another build's dist directory (npm run bench -- --server-dist passes it on).
const mainJs = resolve(
  process.env.WAYBILL_SERVER_DIST ?? resolve(here, '../packages/server/dist'),
  'cli/main.js',
);

const { values: opts } = parseArgs({
  options: {
    n: { type: 'string', default: '20000' },
    accounts: { type: 'string', default: '1' },
    rate: { type: 'string', default: '0' },
    'access-log': { type: 'string', default: 'on' },
    'database-url': { type: 'string' },
    keep: { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
  },
  strict: true,
});
const N = Number(opts.n);
const ACCOUNTS = Number(opts.accounts);
const RATE = Number(opts.rate);
const BATCH = 1000;
const ADMIN = 'bench-callbacks-admin-token';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const CLOCK_TICKS = 100; // USER_HZ on Linux
function cpuMs(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return Number.NaN;
  }
}

// ---------------------------------------------------------------------------------------------------------
// The receiver: 200 at once, first arrival of each webhook-id recorded.
const arrivals = new Map(); // webhook-id -> { at, messageid }
let requests = 0;
let allArrived = () => {};
const done = new Promise((r) => {
  allArrived = r;
});
const receiver = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const at = performance.now();
    requests++;
    res.writeHead(200).end();
    const id = req.headers['webhook-id'];
    if (!arrivals.has(id)) {
      const item = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      arrivals.set(id, { at, messageid: item.messageid });
      if (arrivals.size === N) allArrived();
    }
  });
});
receiver.keepAliveTimeout = 60_000;
await new Promise((r) => receiver.listen(0, '127.0.0.1', r));
const receiverUrl = `http://127.0.0.1:${receiver.address().port}/hook`;

// ---------------------------------------------------------------------------------------------------------
// The server.
const dir = mkdtempSync(join(os.tmpdir(), 'waybill-bench-callbacks-'));
const databaseUrl = opts['database-url'] ?? `sqlite:${join(dir, 'waybill.db')}`;
const logFile = join(dir, 'server.log');
const fd = openSync(logFile, 'w');
const child = spawn(process.execPath, [mainJs, 'serve', '--port', '0', '--no-demo'], {
  env: {
    ...process.env,
    DATABASE_URL: databaseUrl,
    HOST: '127.0.0.1',
    WAYBILL_PEPPER: 'bench-callbacks-pepper-0123456789',
    WAYBILL_ADMIN_TOKEN: ADMIN,
    WAYBILL_RATE_PER_SECOND: '0',
    WAYBILL_ACCESS_LOG: opts['access-log'],
    WAYBILL_LOG_LEVEL: process.env.WAYBILL_LOG_LEVEL ?? 'info',
    WAYBILL_CALLBACK_RELAY: 'on',
    WAYBILL_CALLBACK_ALLOW_PRIVATE: 'true',
  },
  stdio: ['ignore', fd, 'inherit'],
});
closeSync(fd);
const cleanup = () => {
  child.kill('SIGKILL');
  if (!opts.keep) rmSync(dir, { recursive: true, force: true });
};
process.on('exit', cleanup);
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(130));

let base;
for (const deadline = Date.now() + 30_000; ; ) {
  const match = /listening at (http:\/\/[^\s"]+)/.exec(readFileSync(logFile, 'utf8'));
  if (match) {
    base = match[1];
    break;
  }
  if (child.exitCode !== null || Date.now() > deadline)
    throw new Error(`server did not start; see ${logFile}`);
  await sleep(50);
}

async function admin(path, body) {
  const res = await fetch(`${base}/admin/v1${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const json = await res.json();
  if (res.status >= 300) throw new Error(`${path}: ${res.status} ${JSON.stringify(json).slice(0, 300)}`);
  return json;
}

const accounts = [];
for (let a = 0; a < ACCOUNTS; a++) {
  accounts.push((await admin('/accounts', { name: `bench-${a}`, callbackUrl: receiverUrl })).id);
}
const to = (i) => `44770${String(i).padStart(8, '0')}`;
const accountOf = (i) => accounts[i % ACCOUNTS];

// Messages first (not timed): each receipt then applies at once.
const messagesStart = performance.now();
for (let from = 0; from < N; from += BATCH) {
  const byAccount = new Map();
  for (let i = from; i < Math.min(N, from + BATCH); i++) {
    const list = byAccount.get(accountOf(i)) ?? [];
    list.push({ id: `bench-${i}`, channel: 'SMS', channelUserId: to(i) });
    byAccount.set(accountOf(i), list);
  }
  for (const [id, messages] of byAccount) await admin(`/accounts/${id}/messages`, { messages });
}
const messagesMs = performance.now() - messagesStart;

// Receipts, timed.
const cpuBefore = cpuMs(child.pid);
const answeredAt = new Map(); // messageid -> when its batch's ingest response came back
const start = performance.now();
for (let from = 0; from < N; from += BATCH) {
  if (RATE > 0) {
    const due = start + (from / RATE) * 1000;
    if (due > performance.now()) await sleep(due - performance.now());
  }
  const byAccount = new Map();
  for (let i = from; i < Math.min(N, from + BATCH); i++) {
    const list = byAccount.get(accountOf(i)) ?? [];
    list.push({ messageId: `bench-${i}`, drStatuscode: 'delivered' });
    byAccount.set(accountOf(i), list);
  }
  for (const [id, receipts] of byAccount) {
    const result = await admin(`/accounts/${id}/receipts`, { receipts });
    if (result.applied !== receipts.length)
      throw new Error(`applied ${result.applied} of ${receipts.length}`);
    const at = performance.now();
    for (const r of receipts) answeredAt.set(r.messageId, at);
  }
}
const ingestMs = performance.now() - start;
const timeout = setTimeout(() => {
  console.error(`timed out: ${arrivals.size} of ${N} arrived; server log ${logFile}`);
  process.exit(1);
}, 600_000);
await done;
clearTimeout(timeout);
const last = Math.max(...[...arrivals.values()].map((a) => a.at));
const elapsed = last - start;
const cpu = cpuMs(child.pid) - cpuBefore;

const lags = [...arrivals.values()]
  .map((a) => a.at - (answeredAt.get(a.messageid) ?? a.at))
  .sort((x, y) => x - y);
const q = (p) => lags[Math.min(lags.length - 1, Math.floor(p * lags.length))];
const result = {
  n: N,
  accounts: ACCOUNTS,
  rate: RATE || 'unlimited',
  accessLog: opts['access-log'],
  databaseUrl: databaseUrl.startsWith('sqlite:') ? 'sqlite (temporary file)' : databaseUrl,
  messagesIngestS: +(messagesMs / 1000).toFixed(2),
  receiptsIngestS: +(ingestMs / 1000).toFixed(2),
  deliveriesPerS: Math.round(N / (elapsed / 1000)),
  deliveriesPerSFromMessages: Math.round(N / ((last - messagesStart) / 1000)),
  elapsedS: +(elapsed / 1000).toFixed(2),
  lagP50Ms: Math.round(q(0.5)),
  lagP99Ms: Math.round(q(0.99)),
  lagMaxMs: Math.round(lags.at(-1)),
  repeats: requests - N,
  serverCpuS: +(cpu / 1000).toFixed(2),
};
if (opts.json) console.log(JSON.stringify(result));
else {
  console.log(
    `callbacks: ${N} receipts → ${N} deliveries, ${ACCOUNTS} account(s), access log ${opts['access-log']}`,
  );
  console.log(`  messages ingest     ${result.messagesIngestS} s (not timed below)`);
  console.log(`  receipts ingest     ${result.receiptsIngestS} s (${result.rate} receipts/s asked)`);
  console.log(
    `  deliveries/s        ${result.deliveriesPerS}  (${result.elapsedS} s, first receipt batch → last arrival)`,
  );
  console.log(`                      ${result.deliveriesPerSFromMessages}  counting the message ingest too`);
  console.log(
    `  lag p50 / p99 / max ${result.lagP50Ms} / ${result.lagP99Ms} / ${result.lagMaxMs} ms (ingest response → arrival)`,
  );
  console.log(`  repeats             ${result.repeats}`);
  console.log(`  server CPU          ${result.serverCpuS} s`);
  if (opts.keep) console.log(`  data and log in     ${dir}`);
}
receiver.close();
receiver.closeAllConnections();
child.kill('SIGTERM');
await Promise.race([new Promise((r) => child.once('exit', r)), sleep(12_000)]);
process.exit(0);
