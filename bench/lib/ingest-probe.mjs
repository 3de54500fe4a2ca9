#!/usr/bin/env node
// Operator ingest throughput: POST /admin/v1/accounts/{id}/messages and …/receipts in batches of 1,000,
// against the built server run as a child process, reporting records/s and the server's CPU per 1,000 records.
//
// 1. Fill a template database once (through the same HTTP API; the account id goes to <template>.probe.json):
//      node bench/lib/ingest-probe.mjs prefill --database-url sqlite:/tmp/probe/t100k.db --records 100000
//      node bench/lib/ingest-probe.mjs prefill --database-url postgres://postgres@127.0.0.1:5432/probe_t100k …
// 2. Measure one or more builds side by side, each on its own fresh copy of the template, alternating rounds:
//      node bench/lib/ingest-probe.mjs run --template sqlite:/tmp/probe/t100k.db \
//        --dist before=/tmp/waybill-before/packages/server/dist --dist after=packages/server/dist \
//        --batches 20 --concurrency 2 --rounds 2
//    Without --template the copy starts empty (fine for profiling). --node-args=… passes flags to the server
//    (e.g. "--node-args=--cpu-prof --cpu-prof-dir=/tmp/prof"); --perf <file> records `perf record -g` of each
//    measured phase (start the server with --node-args=--perf-basic-prof to name JavaScript frames).
//
// The account has a callback URL (relay off), so applied receipts queue deliveries as they do for an account
// that uses callbacks. Server CPU is the server process's user + system time from /proc; on PostgreSQL the
// backends of the copied database are read too. The PostgreSQL prefill runs ANALYZE as it goes: a server
// without autovacuum (like the test server here) otherwise plans the ingest statements on empty statistics.
//
// Records are realistic: mostly outbound SMS with one recipient, ~8% with 2–3, some inbound SMS and WhatsApp;
// random UUID message ids; recipients drawn (skewed) from a pool of numbers, so most identities exist already.
// Receipts are one final receipt per SMS recipient of the measured message batches, in shuffled order.
import { spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import {
  closeSync,
  copyFileSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import http from 'node:http';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../..');
const ADMIN_TOKEN = 'ingest-probe-admin-token-0123456789';
const PEPPER = 'ingest-probe-pepper-0123456789';

const { values: opts, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    'database-url': { type: 'string' },
    template: { type: 'string' },
    dist: { type: 'string', multiple: true },
    records: { type: 'string', default: '100000' },
    batches: { type: 'string', default: '20' },
    warmup: { type: 'string', default: '2' },
    concurrency: { type: 'string', default: '2' },
    rounds: { type: 'string', default: '1' },
    pool: { type: 'string', default: '200000' },
    callbacks: { type: 'string', default: 'on' },
    'node-args': { type: 'string', default: '' },
    perf: { type: 'string' },
    seed: { type: 'string', default: '7' },
    workdir: { type: 'string', default: '/tmp/ingest-probe' },
    json: { type: 'string' },
  },
  strict: true,
});
const command = positionals[0] ?? 'run';
const BATCH = 1000;
mkdirSync(opts.workdir, { recursive: true });

// ---------------------------------------------------------------------------------------------------------
// Deterministic randomness for the shape of the data (mulberry32); ids are random UUIDs, unique per run.
let state = Number(opts.seed) >>> 0;
const rand = () => {
  state = (state + 0x6d2b79f5) >>> 0;
  let t = state;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const int = (n) => Math.floor(rand() * n);
const pick = (list) => list[int(list.length)];
const POOL = Number(opts.pool);
// Skewed towards a few busy numbers, with a long tail.
const phone = () => `447${String(100_000_000 + Math.floor(POOL * rand() ** 2)).slice(-9)}`;
const NETWORKS = ['23410', '23415', '23420', '23430', '26201', '20801', '310260'];
const TEXTS = [
  'Your verification code is 482913. It expires in 10 minutes.',
  'Your parcel 7731 is out for delivery today between 10:00 and 14:00.',
  'Hi! Your appointment is confirmed for tomorrow at 9:00. Reply STOP to opt out.',
  'Payment of EUR 42.10 received, thank you.',
  'ok thanks',
];

/** One batch of exactly `BATCH` message items; SMS recipients (for receipts) go to `recipients`. */
function messageBatch(recipients, createdAt) {
  const items = [];
  while (items.length < BATCH) {
    const r = rand();
    const id = randomUUID();
    if (r < 0.86) {
      const n = rand() < 0.08 ? 2 + int(2) : 1;
      const seen = new Set();
      for (let k = 0; k < n && items.length < BATCH; k++) {
        let to = phone();
        while (seen.has(to)) to = phone();
        seen.add(to);
        items.push({
          id,
          channel: 'SMS',
          channelUserId: to,
          createdAt,
          text: pick(TEXTS),
          sms: { network: pick(NETWORKS), price: 0.035, counts: 1 },
        });
        recipients.push({ messageId: id, to, multi: n > 1 });
      }
    } else if (r < 0.88) {
      items.push({ id, channel: 'SMS', channelUserId: phone(), direction: 'inbound', createdAt, text: 'ok' });
    } else {
      const inbound = rand() < 0.4;
      items.push({
        id,
        channel: 'WHATSAPP',
        channelUserId: phone(),
        direction: inbound ? 'inbound' : 'outbound',
        createdAt,
        text: pick(TEXTS),
        ...(inbound ? {} : { status: pick(['sent', 'delivered', 'read']) }),
      });
    }
  }
  return items;
}

/** Receipt batches for these recipients: one final receipt each (a few accepted first), shuffled. */
function receiptBatches(recipients, drTimeBase) {
  const receipts = [];
  for (const { messageId, to } of recipients) {
    const drTime = new Date(drTimeBase + int(60_000)).toISOString();
    const f = rand();
    const [code, err] =
      f < 0.85
        ? ['delivered', '0']
        : f < 0.92
          ? ['failed', '1']
          : f < 0.96
            ? ['expired', '2']
            : ['accepted', '0'];
    // `to` is given always, as a pipeline relaying a carrier's receipt would.
    receipts.push({ messageId, to, drStatuscode: code, drErrcode: err, drTime, network: pick(NETWORKS) });
  }
  for (let i = receipts.length - 1; i > 0; i--) {
    const j = int(i + 1);
    [receipts[i], receipts[j]] = [receipts[j], receipts[i]];
  }
  const batches = [];
  for (let i = 0; i < receipts.length; i += BATCH) batches.push(receipts.slice(i, i + BATCH));
  return batches;
}

// ---------------------------------------------------------------------------------------------------------
// HTTP.
let agent = new http.Agent({ keepAlive: true, maxSockets: 16 });

function post(baseUrl, path, body) {
  return new Promise((resolvePost, reject) => {
    const payload = typeof body === 'string' ? Buffer.from(body) : Buffer.from(JSON.stringify(body));
    const req = http.request(
      new URL(path, baseUrl),
      {
        method: 'POST',
        agent,
        headers: {
          authorization: `Bearer ${ADMIN_TOKEN}`,
          'content-type': 'application/json',
          'content-length': payload.length,
        },
      },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          if (res.statusCode < 200 || res.statusCode > 299) {
            reject(new Error(`${path} answered ${res.statusCode}: ${text.slice(0, 500)}`));
          } else resolvePost(JSON.parse(text));
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** Posts pre-serialized bodies with `concurrency` requests in flight; checks every answer. */
async function postAll(baseUrl, path, bodies, concurrency, check) {
  let next = 0;
  const worker = async () => {
    while (next < bodies.length) {
      const body = bodies[next++];
      check(await post(baseUrl, path, body.text), body.n);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

// ---------------------------------------------------------------------------------------------------------
// Databases: a fresh copy of the template (or an empty one) per server.
const isSqlite = (url) => url.startsWith('sqlite:');
const sqlitePath = (url) => url.slice('sqlite:'.length);
const pgAdmin = (url) => {
  const u = new URL(url);
  u.pathname = '/postgres';
  return u.toString();
};
const pgName = (url) => new URL(url).pathname.replace(/^\//, '');
const psql = (url, sql) => {
  const r = spawnSync('psql', [url, '-v', 'ON_ERROR_STOP=1', '-qAtc', sql], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`psql: ${r.stderr}`);
  return r.stdout.trim();
};

function freshCopy(template, label) {
  if (isSqlite(template)) {
    const target = join(opts.workdir, `${label}.db`);
    for (const suffix of ['', '-wal', '-shm']) rmSync(target + suffix, { force: true });
    if (existsSync(sqlitePath(template))) {
      // The template was checkpointed (TRUNCATE) when it was made: the main file is the whole database.
      copyFileSync(sqlitePath(template), target);
      // Written out now: otherwise the server's first checkpoint fsyncs the whole copy, inside the measurement.
      const fd = openSync(target, 'r+');
      fsyncSync(fd);
      closeSync(fd);
    }
    return `sqlite:${target}`;
  }
  const name = `ingest_probe_${label.replace(/[^a-z0-9_]/gi, '_').toLowerCase()}`;
  const admin = pgAdmin(template);
  psql(admin, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  const source = pgName(template);
  const hasTemplate = psql(admin, `SELECT count(*) FROM pg_database WHERE datname = '${source}'`) === '1';
  psql(admin, hasTemplate ? `CREATE DATABASE ${name} TEMPLATE ${source}` : `CREATE DATABASE ${name}`);
  const u = new URL(template);
  u.pathname = `/${name}`;
  return u.toString();
}

function dropCopy(url) {
  if (isSqlite(url)) {
    for (const suffix of ['', '-wal', '-shm']) rmSync(sqlitePath(url) + suffix, { force: true });
  } else psql(pgAdmin(url), `DROP DATABASE IF EXISTS ${pgName(url)} WITH (FORCE)`);
}

// ---------------------------------------------------------------------------------------------------------
// The server, as a child process; CPU from /proc.
const children = new Set();
process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});

async function startServer(dist, databaseUrl, label) {
  const logFile = join(opts.workdir, `${label}.log`);
  const fd = openSync(logFile, 'w');
  const nodeArgs = opts['node-args'].split(' ').filter(Boolean);
  const child = spawn(
    process.execPath,
    [...nodeArgs, join(dist, 'cli/main.js'), 'serve', '--port', '0', '--no-demo'],
    {
      env: {
        ...process.env,
        DATABASE_URL: databaseUrl,
        WAYBILL_PEPPER: PEPPER,
        WAYBILL_ADMIN_TOKEN: ADMIN_TOKEN,
        WAYBILL_CALLBACK_RELAY: 'off',
        WAYBILL_LOG_LEVEL: 'info',
        HOST: '127.0.0.1',
      },
      stdio: ['ignore', fd, fd],
    },
  );
  closeSync(fd);
  children.add(child);
  const exited = new Promise((r) => child.once('exit', r));
  const deadline = Date.now() + 60_000;
  for (;;) {
    const match = /listening at (http:\/\/[^\s"]+)/.exec(readFileSync(logFile, 'utf8'));
    if (match) {
      return {
        url: match[1],
        pid: child.pid,
        async stop() {
          // Idle keep-alive sockets would hold the server's graceful shutdown for its whole grace period.
          agent.destroy();
          agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
          child.kill('SIGTERM');
          await Promise.race([exited, sleep(10_000, { unref: true })]);
          child.kill('SIGKILL');
          children.delete(child);
        },
      };
    }
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`server ${label} did not start:\n${readFileSync(logFile, 'utf8').slice(-2000)}`);
    }
    await sleep(50);
  }
}

const sleep = (ms, { unref = false } = {}) =>
  new Promise((r) => {
    const timer = setTimeout(r, ms);
    if (unref) timer.unref();
  });

function cpuMs(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10; // USER_HZ = 100
}

/** CPU (ms) of the PostgreSQL backends of database `name` (their process title names it). */
function backendCpuMs(databaseUrl) {
  if (isSqlite(databaseUrl)) return 0;
  const name = pgName(databaseUrl);
  let total = 0;
  for (const line of spawnSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' }).stdout.split('\n')) {
    const m = /^\s*(\d+)\s+postgres: (?:\S+: )?\S+ (\S+) /.exec(line);
    if (m && m[2] === name) {
      try {
        total += cpuMs(Number(m[1]));
      } catch {
        // ended meanwhile
      }
    }
  }
  return total;
}

async function createAccount(baseUrl) {
  const body = { name: 'ingest-probe' };
  // Callbacks on (relay off): applied receipts queue deliveries, as on an account that uses them.
  if (opts.callbacks === 'on') body.callbackUrl = 'https://callbacks.example.com/waybill';
  const created = await post(baseUrl, '/admin/v1/accounts', body);
  return created.id;
}

const serialize = (field, batches) =>
  batches.map((items) => ({ text: JSON.stringify({ [field]: items }), n: items.length }));

/** Measures one phase; with --perf, perf records the server for exactly this phase. */
async function phase(server, databaseUrl, path, bodies, check, perfLabel) {
  const records = bodies.reduce((s, b) => s + b.n, 0);
  let perf = null;
  if (opts.perf) {
    perf = spawn('perf', ['record', '-g', '-p', String(server.pid), '-o', `${opts.perf}.${perfLabel}`], {
      stdio: 'ignore',
    });
    await sleep(300);
  }
  const cpu0 = cpuMs(server.pid);
  const db0 = backendCpuMs(databaseUrl);
  const t0 = performance.now();
  await postAll(server.url, path, bodies, Number(opts.concurrency), check);
  const seconds = (performance.now() - t0) / 1000;
  const cpu = cpuMs(server.pid) - cpu0;
  const db = backendCpuMs(databaseUrl) - db0;
  if (perf) {
    perf.kill('SIGINT');
    await new Promise((r) => perf.once('exit', r));
  }
  return {
    records,
    seconds,
    perSecond: records / seconds,
    cpuMsPer1000: (cpu * 1000) / records,
    dbCpuMsPer1000: isSqlite(databaseUrl) ? null : (db * 1000) / records,
  };
}

const checkAccepted = (answer, n) => {
  if (answer.accepted !== n) throw new Error(`accepted ${answer.accepted} of ${n}`);
};
const checkReceipts = (answer, n) => {
  if (answer.applied + answer.ignored + answer.unknown.length !== n) {
    throw new Error(`receipts: ${JSON.stringify(answer).slice(0, 300)}`);
  }
  if (answer.unknown.length > 0) throw new Error(`unknown receipts: ${answer.unknown.length}`);
};

// ---------------------------------------------------------------------------------------------------------
if (command === 'prefill') {
  const url = opts['database-url'];
  if (!url) throw new Error('prefill needs --database-url');
  const dist = resolve(root, opts.dist?.[0]?.split('=').pop() ?? 'packages/server/dist');
  if (isSqlite(url)) {
    mkdirSync(dirname(sqlitePath(url)), { recursive: true });
    for (const suffix of ['', '-wal', '-shm']) rmSync(sqlitePath(url) + suffix, { force: true });
  } else {
    psql(pgAdmin(url), `DROP DATABASE IF EXISTS ${pgName(url)} WITH (FORCE)`);
    psql(pgAdmin(url), `CREATE DATABASE ${pgName(url)}`);
  }
  const server = await startServer(dist, url, 'prefill');
  const accountId = await createAccount(server.url);
  const total = Number(opts.records);
  const t0 = performance.now();
  const start = Date.now() - 30 * 86_400_000;
  for (let done = 0; done < total; ) {
    const recipients = [];
    const chunk = [];
    for (let k = 0; k < (isSqlite(url) ? 10 : 2) && done < total; k++, done += BATCH) {
      chunk.push(messageBatch(recipients, new Date(start + (done / total) * 29 * 86_400_000).toISOString()));
    }
    await postAll(
      server.url,
      `/admin/v1/accounts/${accountId}/messages`,
      serialize('messages', chunk),
      Number(opts.concurrency),
      checkAccepted,
    );
    const receipts = receiptBatches(recipients, start + (done / total) * 29 * 86_400_000 + 5000);
    await postAll(
      server.url,
      `/admin/v1/accounts/${accountId}/receipts`,
      serialize('receipts', receipts),
      Number(opts.concurrency),
      checkReceipts,
    );
    // The test server runs without autovacuum: fresh statistics keep the planner on the indexes it would use.
    if (!isSqlite(url)) psql(url, 'ANALYZE');
    const s = (performance.now() - t0) / 1000;
    process.stdout.write(`\r  ${done} records, ${s.toFixed(0)} s, ${Math.round(done / s)} records/s   `);
  }
  console.log();
  await server.stop();
  if (isSqlite(url)) {
    const { default: Database } = await import('better-sqlite3');
    const db = new Database(sqlitePath(url));
    db.pragma('wal_checkpoint(TRUNCATE)');
    db.close();
  } else {
    psql(url, 'VACUUM (ANALYZE)');
  }
  writeFileSync(
    `${isSqlite(url) ? sqlitePath(url) : join(opts.workdir, pgName(url))}.probe.json`,
    JSON.stringify({ accountId, records: total }),
  );
  console.log(`prefilled ${url}: ${total} records, account ${accountId}`);
} else if (command === 'run') {
  const template = opts.template ?? opts['database-url'] ?? `sqlite:${join(opts.workdir, 'empty.db')}`;
  const sidecar = `${isSqlite(template) ? sqlitePath(template) : join(opts.workdir, pgName(template))}.probe.json`;
  const templateAccount = existsSync(sidecar) ? JSON.parse(readFileSync(sidecar, 'utf8')).accountId : null;
  const dists = (opts.dist ?? ['current=packages/server/dist']).map((d) => {
    const [name, path] = d.includes('=') ? d.split('=') : [d, d];
    return { name, path: resolve(root, path) };
  });
  const batches = Number(opts.batches);
  const warmup = Number(opts.warmup);
  const results = [];
  for (let round = 1; round <= Number(opts.rounds); round++) {
    for (const dist of dists) {
      const label = `${dist.name}-r${round}`;
      const url = freshCopy(template, label);
      const server = await startServer(dist.path, url, label);
      try {
        const accountId = templateAccount ?? (await createAccount(server.url));
        const createdAt = new Date().toISOString();
        const warmRecipients = [];
        const warm = serialize(
          'messages',
          Array.from({ length: warmup }, () => messageBatch(warmRecipients, createdAt)),
        );
        const recipients = [];
        const measured = serialize(
          'messages',
          Array.from({ length: batches }, () => messageBatch(recipients, createdAt)),
        );
        const base = `/admin/v1/accounts/${accountId}`;
        await postAll(server.url, `${base}/messages`, warm, 1, checkAccepted);
        await postAll(
          server.url,
          `${base}/receipts`,
          serialize('receipts', receiptBatches(warmRecipients, Date.now())),
          1,
          checkReceipts,
        );
        const messages = await phase(
          server,
          url,
          `${base}/messages`,
          measured,
          checkAccepted,
          `${label}-messages`,
        );
        const receiptBodies = serialize('receipts', receiptBatches(recipients, Date.now()));
        const receipts = await phase(
          server,
          url,
          `${base}/receipts`,
          receiptBodies,
          checkReceipts,
          `${label}-receipts`,
        );
        results.push({ build: dist.name, round, messages, receipts });
        const fmt = (p) =>
          `${Math.round(p.perSecond).toLocaleString('en').padStart(7)} records/s, server CPU ${p.cpuMsPer1000.toFixed(1).padStart(6)} ms/1000` +
          (p.dbCpuMsPer1000 === null ? '' : `, PostgreSQL CPU ${p.dbCpuMsPer1000.toFixed(1)} ms/1000`);
        console.log(
          `${label.padEnd(14)} messages ${fmt(messages)}  (${messages.records} in ${messages.seconds.toFixed(2)} s)`,
        );
        console.log(
          `${''.padEnd(14)} receipts ${fmt(receipts)}  (${receipts.records} in ${receipts.seconds.toFixed(2)} s)`,
        );
      } finally {
        await server.stop();
        dropCopy(url);
      }
    }
  }
  if (opts.json) writeFileSync(opts.json, JSON.stringify(results, null, 2));
} else {
  console.error('usage: ingest-probe.mjs prefill|run …');
  process.exit(2);
}
agent.destroy();
