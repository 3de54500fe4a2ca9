// The intake scenarios of `npm run bench` (docs/benchmarks.md, "Receipt intake"): receipts through one SMPP bind
// (intake-smpp) and through the Kannel adapter (intake-kannel), each beside the operator API's receipts
// (POST /admin/v1/accounts/{id}/receipts, batches of 1,000, two in flight, as the ingest scenario sends them)
// measured on the same server in the same round, so that their ratio holds however busy the machine is.
//
// One round: a fresh account per path (each with a callback URL, the relay off, so that applied receipts queue
// deliveries as in production), an `smpp` route bound to the SMSC simulator (bench/lib/smsc.mjs) and a `kannel`
// route, then per path `n` + warm-up outbound SMS recipients ingested (not measured; carrier ids on the SMPP
// ones), then each path's warm-up and measured receipts, one final receipt per recipient. Afterwards the
// account's receipt feed is read back: every receipt the server acknowledged (ESME_ROK, HTTP 200, `applied`)
// must be there, or the run fails — an acknowledgement given before the commit would show as a hole.
import http from 'node:http';
import { postgresCpuMs } from './cpu.mjs';
import { onDatabase } from './postgres.mjs';
import { int, random } from './random.mjs';
import { receiptFields, Smsc } from './smsc.mjs';

const BATCH = 1000;
const API_CONCURRENCY = 2;
const POOL = 200_000;
const STATS = [
  [0.88, 'DELIVRD', '000'],
  [0.96, 'UNDELIV', '001'],
  [1, 'EXPIRED', '000'],
];

const q = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];

/** n outbound SMS recipients of one path: ids, numbers, and (SMPP) carrier ids; and the receipt of each. */
function recipients(rand, prefix, n) {
  return Array.from({ length: n }, (_, i) => {
    const f = rand();
    const [, stat, err] = STATS.find(([upTo]) => f < upTo) ?? STATS[0];
    return {
      messageId: `${prefix}-${i.toString(36)}-${int(rand, 2 ** 31).toString(36)}`,
      to: `447${String(100_000_000 + i * 7 + int(rand, 7) + Math.floor(POOL * rand())).slice(-9)}`,
      carrierId: `${prefix}${i.toString(16).padStart(8, '0')}`,
      stat,
      err,
    };
  });
}

async function ingestMessages(server, accountId, list, route) {
  const createdAt = new Date(Date.now() - 600_000).toISOString();
  for (let i = 0; i < list.length; i += BATCH) {
    const messages = list.slice(i, i + BATCH).map((r) => ({
      id: r.messageId,
      channel: 'SMS',
      channelUserId: r.to,
      createdAt,
      text: 'Your parcel is out for delivery today.',
      sms: {
        network: '23410',
        price: 0.035,
        counts: 1,
        ...(route ? { carrier: { route, messageId: r.carrierId } } : {}),
      },
    }));
    const res = await server.admin.request('POST', `/accounts/${accountId}/messages`, { messages });
    if (res.body?.accepted !== messages.length)
      throw new Error(`ingest: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
  }
}

/** Everything a path measures, with the server's CPU (and PostgreSQL's) over the measured part. */
async function timed(server, databaseUrl, n, work) {
  const cpu0 = server.cpuMs();
  const db0 = postgresCpuMs(databaseUrl);
  const started = performance.now();
  const r = await work();
  const seconds = (performance.now() - started) / 1000;
  const latencies = [...r.latencies].sort((a, b) => a - b);
  return {
    n,
    seconds,
    receiptsPerSecond: n / seconds,
    p50Ms: q(latencies, 0.5),
    p99Ms: q(latencies, 0.99),
    cpuMsPer1000: ((server.cpuMs() - cpu0) / n) * 1000,
    dbCpuMsPer1000: ((postgresCpuMs(databaseUrl) - db0) / n) * 1000,
    acked: r.acked,
    failures: r.failures,
  };
}

// ── the three paths ──────────────────────────────────────────────────────────────────────────────────────

/** The operator API: batches of 1,000, API_CONCURRENCY in flight; latency is per batch. */
async function viaApi(server, accountId, list) {
  const bodies = [];
  for (let i = 0; i < list.length; i += BATCH) {
    const part = list.slice(i, i + BATCH);
    const drTime = new Date().toISOString();
    const receipts = part.map((r) => ({
      messageId: r.messageId,
      to: r.to,
      drStatuscode: r.stat === 'DELIVRD' ? 'delivered' : r.stat === 'UNDELIV' ? 'failed' : 'expired',
      drErrcode: r.stat === 'DELIVRD' ? '0' : r.stat === 'UNDELIV' ? '3' : '2',
      drTime,
    }));
    bodies.push({ part, text: JSON.stringify({ receipts }) });
  }
  const latencies = [];
  const acked = [];
  const failures = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: API_CONCURRENCY }, async () => {
      while (next < bodies.length) {
        const body = bodies[next++];
        const t = performance.now();
        const res = await server.admin.request('POST', `/accounts/${accountId}/receipts`, body.text);
        latencies.push(performance.now() - t);
        if (res.body?.applied === body.part.length) acked.push(...body.part);
        else failures.push(`${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
      }
    }),
  );
  return { latencies, acked, failures };
}

/** One SMPP bind: deliver_sm with `window` outstanding; latency is deliver_sm → deliver_sm_resp. */
async function viaSmpp(smsc, list, window) {
  const now = Date.now();
  const fields = list.map((r) => receiptFields(r, now));
  const { statuses, latencies } = await smsc.push(fields, window);
  const acked = list.filter((_, i) => statuses[i] === 0);
  const failures = statuses
    .map((s, i) => (s === 0 ? null : `${list[i]?.carrierId}: command_status ${s}`))
    .filter((x) => x !== null);
  return { latencies, acked, failures };
}

/** Kannel's dlr-url fetches: GET, direct form, `connections` keep-alive connections, one request each. */
async function viaKannel(server, token, accountId, list, connections) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const date = new Date().toISOString().replace(/[-T:]/g, '').slice(2, 12);
  const paths = list.map((r) => {
    const reply =
      `id:${r.carrierId} sub:001 dlvrd:${r.stat === 'DELIVRD' ? '001' : '000'} submit date:${date} ` +
      `done date:${date} stat:${r.stat} err:${r.err} text:Your parcel is out`;
    const type = r.stat === 'DELIVRD' ? 1 : 2;
    return (
      `/intake/v1/kannel?token=${token}&account=${accountId}&messageid=${encodeURIComponent(r.messageId)}` +
      `&to=${r.to}&type=${type}&reply=${encodeURIComponent(reply)}`
    );
  });
  const get = (path) =>
    new Promise((resolve) => {
      const req = http.get({ host: server.host, port: server.port, path, agent }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d) => {
          body += d;
        });
        res.on('end', () => resolve({ status: res.statusCode, body }));
      });
      req.on('error', (error) => resolve({ status: 0, body: error.message }));
    });
  const latencies = [];
  const acked = [];
  const failures = [];
  let next = 0;
  try {
    await Promise.all(
      Array.from({ length: connections }, async () => {
        while (next < paths.length) {
          const i = next++;
          const t = performance.now();
          const res = await get(paths[i]);
          latencies.push(performance.now() - t);
          if (res.status === 200) acked.push(list[i]);
          else failures.push(`${res.status} ${res.body.slice(0, 200)}`);
        }
      }),
    );
  } finally {
    agent.destroy();
  }
  return { latencies, acked, failures };
}

/** The recipients of `acked` that have no event in the account's receipt feed. */
async function missingFromFeed(server, account, acked) {
  const auth = `Basic ${Buffer.from(`${account.key}:${account.secret}`).toString('base64')}`;
  const seen = new Set();
  let after = null;
  for (;;) {
    const cursor = after ? `&after=${encodeURIComponent(after)}` : '';
    const res = await fetch(`${server.url}/receipts?limit=1000${cursor}`, {
      headers: { authorization: auth },
    });
    if (res.status !== 200) throw new Error(`/receipts: ${res.status} ${await res.text()}`);
    const page = await res.json();
    for (const e of page.receipts) seen.add(`${e.receipt.messageid} ${e.receipt.to}`);
    if (!page.hasMore) break;
    after = page.nextCursor;
  }
  return acked.filter((r) => !seen.has(`${r.messageId} ${r.to}`)).length;
}

/**
 * One round against `server` (started on `databaseUrl` with the callback relay off): `paths` among 'api',
 * 'smpp', 'kannel', in that order: each one's `warmup` receipts first, then each one's `n` measured.
 */
export async function runIntake({ server, databaseUrl, paths, n, warmup, window, connections, seed }) {
  const rand = random(seed);
  const smsc = new Smsc();
  const port = await smsc.listen();
  try {
    const accounts = {};
    for (const path of paths) {
      accounts[path] = await server.admin.post('/accounts', {
        name: `bench-intake-${path}`,
        callbackUrl: 'https://callbacks.example.com/waybill',
      });
    }
    let token = null;
    if (paths.includes('smpp')) {
      await server.admin.post('/routes', {
        name: 'bench-smsc',
        kind: 'smpp',
        accounts: [accounts.smpp.id],
        smpp: { host: '127.0.0.1', port, systemId: 'waybill', password: 'bench' },
      });
    }
    if (paths.includes('kannel')) {
      const route = await server.admin.post('/routes', {
        name: 'bench-kannel',
        kind: 'kannel',
        accounts: [accounts.kannel.id],
      });
      token = route.token;
    }
    const lists = {};
    for (const path of paths) {
      const list = recipients(rand, path.slice(0, 1), warmup + n);
      await ingestMessages(server, accounts[path].id, list, path === 'smpp' ? 'bench-smsc' : null);
      lists[path] = { warm: list.slice(0, warmup), measured: list.slice(warmup) };
    }
    // The binds read the routes every 5 s.
    if (paths.includes('smpp')) await smsc.waitForBind(15_000);

    const run = {
      api: (list) => viaApi(server, accounts.api.id, list),
      smpp: (list) => viaSmpp(smsc, list, window),
      kannel: (list) => viaKannel(server, token, accounts.kannel.id, list, connections),
    };
    // Every path's warm-up first, then, on PostgreSQL, fresh statistics: the copy's were taken on the empty
    // tables of the dataset (no deliveries, no carrier ids), and autovacuum would not analyze them before the
    // round ends, so the planner would size these tables as they were before the warm-up. A server that has
    // run for minutes has them (docs/benchmarks.md, "Receipt intake").
    const warmed = {};
    for (const path of paths) warmed[path] = await run[path](lists[path].warm);
    if (databaseUrl.startsWith('postgres')) await onDatabase(databaseUrl, 'ANALYZE');
    const results = {};
    for (const path of paths) {
      const { measured } = lists[path];
      const w = warmed[path];
      const r = await timed(server, databaseUrl, measured.length, () => run[path](measured));
      const acked = [...w.acked, ...r.acked];
      const missing = await missingFromFeed(server, accounts[path], acked);
      results[path] = {
        ...r,
        acked: acked.length,
        failures: [...w.failures, ...r.failures],
        missing,
      };
    }
    return results;
  } finally {
    await smsc.close();
  }
}
