// The callbacks scenario of `npm run bench` (and bench/callbacks.mjs): callback relay throughput and lag.
//
// Starts `waybill serve` (SQLite file in a temporary directory unless a database is given; relay on, private
// destinations allowed) and a receiver in this process that answers 200 at once. Creates `accounts` accounts
// whose callbackUrl is the receiver, ingests n SMS messages (batches of 1000, not timed), then n receipts
// (batches of 1000, spread over the accounts; `rate` caps receipts/s, 0 = as fast as the API takes them) and
// waits until every delivery has arrived. With `instances: 2` (PostgreSQL only) two servers share the database,
// both relaying; receipt batches go to them in turn. Measures:
//   deliveries/s  n / (last arrival − start of the first receipt batch), and counting the message ingest too
//   lag p50/p99   arrival − the moment the ingest response of that receipt's batch came back
//   server CPU    user+system seconds the servers used while ingesting the receipts and delivering (/proc, Linux),
//                 and per delivery
//   PostgreSQL    the same for the database's backends (bench/lib/cpu.mjs postgresCpuMs), and per delivery
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import os from 'node:os';
import { join } from 'node:path';
import { postgresCpuMs } from './cpu.mjs';
import { serverDist } from './paths.mjs';
import { onServer } from './postgres.mjs';
import { sleep, startWaybill } from './processes.mjs';

const BATCH = 1000;

/** A receiver that answers 200 at once and records the first arrival of each webhook-id. */
async function startReceiver(n) {
  const arrivals = new Map(); // webhook-id -> { at, messageid }
  let requests = 0;
  let allArrived = () => {};
  const done = new Promise((r) => {
    allArrived = r;
  });
  const server = createServer((req, res) => {
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
        if (arrivals.size === n) allArrived();
      }
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${server.address().port}/hook`,
    arrivals,
    done,
    requests: () => requests,
    close() {
      server.close();
      server.closeAllConnections();
    },
  };
}

/** Posts the records of `from`…`from + BATCH` to `kind` (messages or receipts), grouped by account. */
async function postBatch(server, accountOf, n, from, kind, item) {
  const byAccount = new Map();
  for (let i = from; i < Math.min(n, from + BATCH); i++) {
    const list = byAccount.get(accountOf(i)) ?? [];
    list.push(item(i));
    byAccount.set(accountOf(i), list);
  }
  const answers = [];
  for (const [id, list] of byAccount) {
    answers.push({ list, answer: await server.admin.post(`/accounts/${id}/${kind}`, { [kind]: list }) });
  }
  return answers;
}

/**
 * A new empty database beside the one `url` names, `<name>_<label>`, for one run (each run, and each build of
 * a side-by-side comparison, starts from an empty outbox); `drop()` removes it.
 */
export async function freshDatabase(url, label) {
  const name = `${new URL(url).pathname.replace(/^\//, '')}_${label}`
    .replace(/[^a-z0-9_]/gi, '_')
    .toLowerCase();
  await onServer(url, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await onServer(url, `CREATE DATABASE ${name}`);
  const fresh = new URL(url);
  fresh.pathname = `/${name}`;
  return {
    url: fresh.toString(),
    drop: () => onServer(url, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

export async function runCallbacks({
  n = 20_000,
  accounts: accountCount = 1,
  rate = 0,
  accessLog = 'on',
  databaseUrl,
  instances = 1,
  pepper = 'bench-callbacks-pepper-0123456789',
  dist = serverDist,
  label = 'waybill-callbacks',
  cpuProf,
  keep = false,
}) {
  if (instances > 1 && !databaseUrl?.startsWith('postgres')) {
    throw new Error('several instances share a PostgreSQL database: give --database-url postgres://…');
  }
  const receiver = await startReceiver(n);
  const dir = mkdtempSync(join(os.tmpdir(), 'waybill-bench-callbacks-'));
  const url = databaseUrl ?? `sqlite:${join(dir, 'waybill.db')}`;
  const servers = [];
  try {
    // One at a time: the first migrates the schema.
    for (let i = 0; i < instances; i++) {
      servers.push(
        await startWaybill({
          databaseUrl: url,
          pepper,
          dist,
          accessLog: accessLog !== 'off',
          label: instances > 1 ? `${label}-${i + 1}` : label,
          cpuProf,
          env: {
            WAYBILL_LOG_LEVEL: process.env.WAYBILL_LOG_LEVEL ?? 'info',
            WAYBILL_CALLBACK_RELAY: 'on',
            WAYBILL_CALLBACK_ALLOW_PRIVATE: 'true',
          },
        }),
      );
    }
    const server = servers[0];
    const accounts = [];
    for (let a = 0; a < accountCount; a++) {
      accounts.push(
        (await server.admin.post('/accounts', { name: `bench-${a}`, callbackUrl: receiver.url })).id,
      );
    }
    const accountOf = (i) => accounts[i % accountCount];
    const to = (i) => `44770${String(i).padStart(8, '0')}`;

    // Messages first (not timed): each receipt then applies at once.
    const messagesStart = performance.now();
    for (let from = 0; from < n; from += BATCH) {
      await postBatch(server, accountOf, n, from, 'messages', (i) => ({
        id: `bench-${i}`,
        channel: 'SMS',
        channelUserId: to(i),
      }));
    }
    const messagesMs = performance.now() - messagesStart;

    // Receipts, timed.
    const serversCpuMs = () => servers.reduce((total, s) => total + s.cpuMs(), 0);
    const cpuBefore = serversCpuMs();
    const dbCpuBefore = postgresCpuMs(url);
    const answeredAt = new Map(); // messageid -> when its batch's ingest response came back
    const start = performance.now();
    for (let from = 0; from < n; from += BATCH) {
      if (rate > 0) {
        const due = start + (from / rate) * 1000;
        if (due > performance.now()) await sleep(due - performance.now());
      }
      const answers = await postBatch(
        servers[(from / BATCH) % instances],
        accountOf,
        n,
        from,
        'receipts',
        (i) => ({
          messageId: `bench-${i}`,
          drStatuscode: 'delivered',
        }),
      );
      const at = performance.now();
      for (const { list, answer } of answers) {
        if (answer.applied !== list.length) throw new Error(`applied ${answer.applied} of ${list.length}`);
        for (const r of list) answeredAt.set(r.messageId, at);
      }
    }
    const ingestMs = performance.now() - start;
    // Deliveries run during the ingest too, so this split is rough: what the ingest phase cost the database.
    const dbCpuIngestMs = postgresCpuMs(url) - dbCpuBefore;
    let timer;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`timed out: ${receiver.arrivals.size} of ${n} arrived; ${server.logFile}`)),
        600_000,
      );
    });
    await Promise.race([receiver.done, timeout]).finally(() => clearTimeout(timer));
    const serverCpuMs = serversCpuMs() - cpuBefore;
    const dbCpuMs = postgresCpuMs(url) - dbCpuBefore;
    const arrivals = [...receiver.arrivals.values()];
    const last = Math.max(...arrivals.map((a) => a.at));
    const elapsed = last - start;
    const lags = arrivals.map((a) => a.at - (answeredAt.get(a.messageid) ?? a.at)).sort((x, y) => x - y);
    const q = (p) => lags[Math.min(lags.length - 1, Math.floor(p * lags.length))];
    return {
      n,
      accounts: accountCount,
      rate: rate || 'unlimited',
      accessLog,
      instances,
      databaseUrl: databaseUrl ?? 'sqlite (temporary file)',
      messagesIngestS: +(messagesMs / 1000).toFixed(2),
      receiptsIngestS: +(ingestMs / 1000).toFixed(2),
      deliveriesPerS: Math.round(n / (elapsed / 1000)),
      deliveriesPerSFromMessages: Math.round(n / ((last - messagesStart) / 1000)),
      elapsedS: +(elapsed / 1000).toFixed(2),
      lagP50Ms: Math.round(q(0.5)),
      lagP99Ms: Math.round(q(0.99)),
      lagMaxMs: Math.round(lags.at(-1)),
      repeats: receiver.requests() - n,
      serverCpuS: +(serverCpuMs / 1000).toFixed(2),
      serverCpuUsPerDelivery: Math.round((serverCpuMs * 1000) / n),
      ...(url.startsWith('postgres')
        ? {
            dbCpuS: +(dbCpuMs / 1000).toFixed(2),
            dbCpuUsPerDelivery: Math.round((dbCpuMs * 1000) / n),
            dbCpuDuringIngestS: +(dbCpuIngestMs / 1000).toFixed(2),
          }
        : {}),
      ...(keep ? { kept: dir } : {}),
    };
  } finally {
    receiver.close();
    await Promise.all(servers.map((s) => s.stop()));
    if (!keep) rmSync(dir, { recursive: true, force: true });
  }
}
