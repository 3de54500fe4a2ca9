// The ingest scenario of `npm run bench`: messages, then one final receipt per SMS recipient of them, POSTed
// through the operator API in batches of 1,000, two in flight (`--ingest-concurrency`), against a server on its
// own fresh copy of the dataset (copyDatabase), so that builds compared side by side each start from the same
// database.
//
// Records are realistic: 86% outbound SMS (8% of ids sent to 2–3 numbers), 2% inbound SMS, 12% WhatsApp (40%
// of it inbound); UUID-like message ids; recipients drawn, skewed towards a few busy numbers, from a pool of
// 200,000. Receipts are mostly delivered, some failed, expired or only accepted, in shuffled order. The account
// has a callback URL (start the server with the relay off), so applied receipts queue deliveries as they do for
// an account that uses callbacks. Bodies are generated and serialized before the clock starts.
import { execFile } from 'node:child_process';
import { closeSync, copyFileSync, existsSync, fsyncSync, openSync, rmSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { postgresCpuMs } from './cpu.mjs';
import { onServer } from './postgres.mjs';
import { pinned } from './processes.mjs';
import { int, pick, random } from './random.mjs';

const BATCH = 1000;
/** Batches in flight at a time, unless the caller asks for another number (`--ingest-concurrency`). */
const CONCURRENCY = 2;
const WARMUP_BATCHES = 2;
const POOL = 200_000;
const NETWORKS = ['23410', '23415', '23420', '23430', '26201', '20801', '310260'];
const TEXTS = [
  'Your verification code is 482913. It expires in 10 minutes.',
  'Your parcel 7731 is out for delivery today between 10:00 and 14:00.',
  'Hi! Your appointment is confirmed for tomorrow at 9:00. Reply STOP to opt out.',
  'Payment of EUR 42.10 received, thank you.',
  'ok thanks',
];
const FINALS = [
  [0.85, 'delivered', '0'],
  [0.92, 'failed', '1'],
  [0.96, 'expired', '2'],
  [1, 'accepted', '0'],
];

/** The record generator of one run: message batches, and the receipt batches of their SMS recipients. */
function records(seed) {
  const rand = random(seed);
  const hex = (n) => {
    let s = '';
    for (let i = 0; i < n; i++) s += '0123456789abcdef'[int(rand, 16)];
    return s;
  };
  const phone = () => `447${String(100_000_000 + Math.floor(POOL * rand() ** 2)).slice(-9)}`;

  /** One batch of exactly BATCH message items; the SMS recipients (for receipts) go to `recipients`. */
  function messages(recipients, createdAt) {
    const items = [];
    while (items.length < BATCH) {
      const r = rand();
      const id = `${hex(8)}-${hex(4)}-4${hex(3)}-a${hex(3)}-${hex(12)}`;
      if (r < 0.86) {
        const n = rand() < 0.08 ? 2 + int(rand, 2) : 1;
        const seen = new Set();
        for (let k = 0; k < n && items.length < BATCH; k++) {
          let to = phone();
          while (seen.has(to)) to = phone();
          seen.add(to);
          const sms = { network: pick(rand, NETWORKS), price: 0.035, counts: 1 };
          items.push({ id, channel: 'SMS', channelUserId: to, createdAt, text: pick(rand, TEXTS), sms });
          recipients.push({ messageId: id, to });
        }
      } else if (r < 0.88) {
        items.push({
          id,
          channel: 'SMS',
          channelUserId: phone(),
          direction: 'inbound',
          createdAt,
          text: 'ok',
        });
      } else {
        const inbound = rand() < 0.4;
        items.push({
          id,
          channel: 'WHATSAPP',
          channelUserId: phone(),
          direction: inbound ? 'inbound' : 'outbound',
          createdAt,
          text: pick(rand, TEXTS),
          ...(inbound ? {} : { status: pick(rand, ['sent', 'delivered', 'read']) }),
        });
      }
    }
    return items;
  }

  /** Receipt batches for these recipients: one final receipt each, `to` always given, shuffled. */
  function receipts(recipients, drTimeBase) {
    const list = recipients.map(({ messageId, to }) => {
      const drTime = new Date(drTimeBase + int(rand, 60_000)).toISOString();
      const f = rand();
      const [, code, err] = FINALS.find(([upTo]) => f < upTo) ?? FINALS[0];
      return { messageId, to, drStatuscode: code, drErrcode: err, drTime, network: pick(rand, NETWORKS) };
    });
    for (let i = list.length - 1; i > 0; i--) {
      const j = int(rand, i + 1);
      [list[i], list[j]] = [list[j], list[i]];
    }
    const batches = [];
    for (let i = 0; i < list.length; i += BATCH) batches.push(list.slice(i, i + BATCH));
    return batches;
  }
  return { messages, receipts };
}

/**
 * The records of one run, as item objects in batches of BATCH: two warm-up batches of messages and their
 * receipts, then `count` messages and their receipts. The same `seed` gives the same records (lean-ingest.mjs
 * writes the very records a server is sent). Their createdAt is an hour ago, their receipts' drTime now.
 */
export function ingestWorkload(seed, count) {
  const gen = records(seed);
  const createdAt = new Date(Date.now() - 3_600_000).toISOString();
  const batchesOf = (n) => {
    const recipients = [];
    const messages = Array.from({ length: n }, () => gen.messages(recipients, createdAt));
    return { messages, recipients };
  };
  const warm = batchesOf(WARMUP_BATCHES);
  const measured = batchesOf(Math.max(1, Math.round(count / BATCH)));
  return {
    warm: { messages: warm.messages, receipts: gen.receipts(warm.recipients, Date.now()) },
    measured: { messages: measured.messages, receipts: gen.receipts(measured.recipients, Date.now()) },
  };
}

const accepted = (answer, n) => answer?.accepted === n;
const applied = (answer, n) =>
  answer?.unknown?.length === 0 && answer.applied + answer.ignored + answer.unknown.length === n;

/**
 * Posts the serialized `bodies` to `path`, `concurrency` at a time: records/s, batch latency, the server's CPU
 * (and PostgreSQL's) per 1,000 records, and how many batches failed `check`.
 */
async function post(server, databaseUrl, path, bodies, check, concurrency) {
  const records = bodies.reduce((s, b) => s + b.n, 0);
  const latencies = [];
  const failures = [];
  let next = 0;
  const cpu0 = server.cpuMs();
  const db0 = postgresCpuMs(databaseUrl);
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < bodies.length) {
        const body = bodies[next++];
        const t = performance.now();
        const res = await server.admin.request('POST', path, body.text);
        latencies.push(performance.now() - t);
        if (!check(res.body, body.n))
          failures.push(`${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const cpuAnswered = server.cpuMs();
  if (databaseUrl.startsWith('sqlite:')) await sleep(SETTLE_MS);
  latencies.sort((a, b) => a - b);
  const q = (p) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))];
  return {
    records,
    seconds,
    recordsPerSecond: records / seconds,
    p50Ms: q(0.5),
    p99Ms: q(0.99),
    cpuMsPer1000: ((server.cpuMs() - cpu0) / records) * 1000,
    answeredCpuMsPer1000: ((cpuAnswered - cpu0) / records) * 1000,
    dbCpuMsPer1000: ((postgresCpuMs(databaseUrl) - db0) / records) * 1000,
    failures: failures.length,
    firstFailure: failures[0] ?? null,
  };
}

/**
 * How long the harness lets a SQLite server run after a phase's last answer before it reads the phase's CPU: five
 * ticks of the server's checkpointer (every 200 ms), so that the CPU counted includes copying the phase's log into
 * the database file, not only the checkpoints that ran before the last answer. PostgreSQL's own checkpoints are
 * outside the server, and not waited for.
 */
export const SETTLE_MS = 1000;

/**
 * One ingest run against `server` (started on `databaseUrl`, from startWaybill): a fresh account, two warm-up
 * batches of messages and their receipts, then `records` messages and their receipts, measured.
 */
export async function runIngest({
  server,
  databaseUrl,
  records: count,
  seed = 99,
  concurrency = CONCURRENCY,
}) {
  const account = await server.admin.post('/accounts', {
    name: 'bench-ingest',
    callbackUrl: 'https://callbacks.example.com/waybill',
  });
  const base = `/accounts/${account.id}`;
  const work = ingestWorkload(seed, count);
  const bodies = (field, batches) =>
    batches.map((batch) => ({ text: JSON.stringify({ [field]: batch }), n: batch.length }));
  const warm = {
    messages: bodies('messages', work.warm.messages),
    receipts: bodies('receipts', work.warm.receipts),
  };
  const measured = {
    messages: bodies('messages', work.measured.messages),
    receipts: bodies('receipts', work.measured.receipts),
  };
  await post(server, databaseUrl, `${base}/messages`, warm.messages, accepted, concurrency);
  await post(server, databaseUrl, `${base}/receipts`, warm.receipts, applied, concurrency);
  const messages = await post(
    server,
    databaseUrl,
    `${base}/messages`,
    measured.messages,
    accepted,
    concurrency,
  );
  const receipts = await post(
    server,
    databaseUrl,
    `${base}/receipts`,
    measured.receipts,
    applied,
    concurrency,
  );
  return { messages, receipts };
}

/**
 * The same run's records written by the lean store-only reference (lean-ingest.mjs) into `databaseUrl` (a
 * fresh SQLite copy), in its own process on `cpus`: its messages and receipts phases, as runIngest's.
 */
export async function runLeanIngest({ databaseUrl, records: count, seed = 99, cpus }) {
  const script = fileURLToPath(new URL('./lean-ingest.mjs', import.meta.url));
  const [command, args] = pinned(cpus, process.execPath, [
    script,
    sqliteFile(databaseUrl),
    String(seed),
    String(count),
  ]);
  const { stdout } = await promisify(execFile)(command, args, { maxBuffer: 1 << 20 });
  return JSON.parse(stdout);
}

// ---------------------------------------------------------------------------------------------------------
// Fresh copies of the dataset, one per server.

const sqliteFile = (url) => url.slice('sqlite:'.length);
const databaseName = (url) => new URL(url).pathname.slice(1);

/**
 * A copy of the database of `databaseUrl` named after `label`: a file beside a SQLite dataset (written out
 * now, or the server's first checkpoint would fsync the whole copy inside the measurement), or a database made
 * from a PostgreSQL one as its template. Nothing may be connected to the source meanwhile.
 */
export async function copyDatabase(databaseUrl, label) {
  const name = label.replace(/[^a-z0-9_]/gi, '_').toLowerCase();
  if (databaseUrl.startsWith('sqlite:')) {
    const source = sqliteFile(databaseUrl);
    const target = `${source}.${name}.db`;
    for (const suffix of ['', '-wal']) {
      rmSync(target + suffix, { force: true });
      if (!existsSync(source + suffix)) continue;
      copyFileSync(source + suffix, target + suffix);
      const fd = openSync(target + suffix, 'r+');
      fsyncSync(fd);
      closeSync(fd);
    }
    rmSync(`${target}-shm`, { force: true });
    return `sqlite:${target}`;
  }
  const source = databaseName(databaseUrl);
  const copy = new URL(databaseUrl);
  copy.pathname = `/${source}_${name}`;
  await onServer(databaseUrl, `DROP DATABASE IF EXISTS ${source}_${name} WITH (FORCE)`);
  await onServer(databaseUrl, `CREATE DATABASE ${source}_${name} TEMPLATE ${source}`);
  return copy.toString();
}

/** Removes a copy made by copyDatabase. */
export async function dropDatabase(databaseUrl) {
  if (databaseUrl.startsWith('sqlite:')) {
    for (const suffix of ['', '-wal', '-shm']) rmSync(sqliteFile(databaseUrl) + suffix, { force: true });
  } else {
    await onServer(databaseUrl, `DROP DATABASE IF EXISTS ${databaseName(databaseUrl)} WITH (FORCE)`);
  }
}
