// The ingest scenario of `npm run bench`: messages, then their receipts, through the operator API in batches of
// 1,000, into a fresh account on the dataset's database (deleted afterwards, so the dataset stays as generated).
// Records are realistic outbound SMS: UUID-like ids, 8% sent to 2-3 numbers, text, send status, network, price;
// receipts carry a final code and a drTime. Bodies are generated and serialized before the clock starts; two
// batches are in flight at a time, so the server never waits on this process between batches.
import { ADMIN_TOKEN, postgresCpuMs } from './processes.mjs';
import { random } from './scenarios.mjs';

const BATCH = 1000;
const CONCURRENCY = 2;

function generate(records, seed) {
  const rand = random(seed);
  const hex = (n) => {
    let s = '';
    for (let i = 0; i < n; i++) s += '0123456789abcdef'[Math.floor(rand() * 16)];
    return s;
  };
  const messages = [];
  const receipts = [];
  const createdAt = new Date(Date.now() - 3_600_000);
  while (messages.length < records) {
    const id = `${hex(8)}-${hex(4)}-4${hex(3)}-a${hex(3)}-${hex(12)}`;
    const recipients = rand() < 0.08 ? 2 + Math.floor(rand() * 2) : 1;
    for (let r = 0; r < recipients && messages.length < records; r++) {
      const to = `447${String(Math.floor(rand() * 1e9)).padStart(9, '0')}`;
      messages.push({
        id,
        channel: 'SMS',
        channelUserId: to,
        direction: 'outbound',
        createdAt: createdAt.toISOString(),
        text: `Your verification code is ${100000 + Math.floor(rand() * 900000)}. It expires in 10 minutes.`,
        sms: { status: '0', network: '23410', price: 0.035, counts: 1 },
      });
      receipts.push({
        messageId: id,
        to,
        drStatuscode: rand() < 0.9 ? 'delivered' : 'failed',
        drErrcode: '0',
        drTime: new Date(createdAt.getTime() + 5000).toISOString(),
      });
    }
  }
  const batches = (list, key) => {
    const out = [];
    for (let i = 0; i < list.length; i += BATCH)
      out.push(JSON.stringify({ [key]: list.slice(i, i + BATCH) }));
    return out;
  };
  return { messages: batches(messages, 'messages'), receipts: batches(receipts, 'receipts') };
}

async function admin(baseUrl, method, path, body) {
  const res = await fetch(`${baseUrl}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

/** Posts `bodies` to `path`, CONCURRENCY at a time; records/s, batch latency and server CPU per 1,000 records. */
async function post(baseUrl, server, databaseUrl, path, bodies, records) {
  const latencies = [];
  let failures = 0;
  let next = 0;
  const cpu0 = server.cpuMs();
  const db0 = postgresCpuMs(databaseUrl);
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < bodies.length) {
        const body = bodies[next++];
        const t = performance.now();
        const res = await admin(baseUrl, 'POST', path, body);
        latencies.push(performance.now() - t);
        const count = res.body?.accepted ?? res.body?.applied;
        if (res.status !== 200 && res.status !== 201) {
          failures++;
          if (failures === 1)
            console.error(`  ${path}: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
        } else if (count === undefined) failures++;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const q = (p) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))];
  return {
    records,
    seconds,
    recordsPerSecond: records / seconds,
    p50Ms: q(0.5),
    p99Ms: q(0.99),
    cpuMsPer1000: ((server.cpuMs() - cpu0) / records) * 1000,
    dbCpuMsPer1000: ((postgresCpuMs(databaseUrl) - db0) / records) * 1000,
    failures,
  };
}

export async function runIngest({ baseUrl, server, databaseUrl = '', records, seed = 99 }) {
  const data = generate(records, seed);
  const created = await admin(baseUrl, 'POST', '/accounts', { name: 'bench-ingest' });
  if (created.status !== 201) throw new Error(`creating the ingest account: ${created.status}`);
  const id = created.body.id;
  try {
    const messages = await post(
      baseUrl,
      server,
      databaseUrl,
      `/accounts/${id}/messages`,
      data.messages,
      records,
    );
    const receipts = await post(
      baseUrl,
      server,
      databaseUrl,
      `/accounts/${id}/receipts`,
      data.receipts,
      records,
    );
    return { messages, receipts };
  } finally {
    await admin(baseUrl, 'DELETE', `/accounts/${id}`);
  }
}
