#!/usr/bin/env node
// Fills a database with a realistic Waybill dataset through the Store interface (the same code path the
// operator ingest API uses, minus HTTP), and writes a manifest the load script picks its targets from.
//
//   node bench/seed.mjs --database-url sqlite:bench/.data/waybill-1m.db --messages 1000000
//   node bench/seed.mjs --database-url postgres://postgres@127.0.0.1:5432/waybill_bench --messages 1000000
//
// The dataset is deterministic for a given --seed and --end (default: now, rounded down to the hour).
import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const here = dirname(fileURLToPath(import.meta.url));
const dist = resolve(here, '../packages/server/dist');
const { loadConfig } = await import(`${dist}/config.js`);
const { openStore } = await import(`${dist}/store/open.js`);
const { createAccount } = await import(`${dist}/operations/accounts.js`);

export const BENCH = { key: 'BENCHKEY', secret: 'BENCHSEC', pepper: 'bench-pepper-0123456789' };

const { values: opts } = parseArgs({
  options: {
    'database-url': { type: 'string' },
    messages: { type: 'string', default: '1000000' },
    contacts: { type: 'string', default: '50000' },
    'long-history': { type: 'string' }, // default: 1.2% of --messages (12,000 of 1M)
    days: { type: 'string', default: '90' },
    seed: { type: 'string', default: '42' },
    end: { type: 'string' },
    manifest: { type: 'string' },
    batch: { type: 'string', default: '1000' },
  },
  strict: true,
});
if (!opts['database-url']) {
  console.error('usage: node bench/seed.mjs --database-url <sqlite:path|postgres://…> [--messages N]');
  process.exit(2);
}
const databaseUrl = opts['database-url'];
const TOTAL = Number(opts.messages);
const CONTACTS = Number(opts.contacts);
const LONG = opts['long-history'] ? Number(opts['long-history']) : Math.round(TOTAL * 0.012);
const DAYS = Number(opts.days);
const BATCH = Number(opts.batch);
const endMs = opts.end ? new Date(opts.end).getTime() : Math.floor(Date.now() / 3_600_000) * 3_600_000;
const startMs = endMs - DAYS * 86_400_000;
const manifestPath = resolve(opts.manifest ?? defaultManifestPath(databaseUrl));

function defaultManifestPath(url) {
  if (url.startsWith('sqlite:')) return `${url.slice('sqlite:'.length)}.manifest.json`;
  const db = new URL(url).pathname.replace(/^\//, '') || 'postgres';
  return join(here, '.data', `pg-${db}.manifest.json`);
}

// ---------------------------------------------------------------------------------------------------------
// Deterministic randomness (mulberry32).
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
/** Picks from [[weight, value], …]. */
const weighted = (table) => {
  let r = rand() * table.reduce((s, [w]) => s + w, 0);
  for (const [w, v] of table) {
    r -= w;
    if (r < 0) return v;
  }
  return table[table.length - 1][1];
};
const hex = (n) => {
  let s = '';
  for (let i = 0; i < n; i++) s += '0123456789abcdef'[int(16)];
  return s;
};
const uuid = () => `${hex(8)}-${hex(4)}-4${hex(3)}-${'89ab'[int(4)]}${hex(3)}-${hex(12)}`;

// ---------------------------------------------------------------------------------------------------------
// Contacts and their identities. Phone-number channels share the number; Telegram and Apple Messages for
// Business use opaque handles. Contact 0 is the "long history" contact.
const contacts = Array.from({ length: CONTACTS }, (_, i) => ({
  id: uuid(),
  phone: `44${7_000_000_000 + i * 37}`, // 12 digits, unique
  tg: `tg${(100_000_000 + i * 7919).toString(36)}`,
  amb: `urn:mbid:${hex(24)}`,
}));
const identityOf = (contact, channel) =>
  channel === 'TELEGRAM' ? contact.tg : channel === 'APPLEMB' ? contact.amb : contact.phone;
// Skewed: a few busy contacts, a long tail of quiet ones (contact 0 is reserved for the long history).
const someContact = () => contacts[1 + Math.floor((CONTACTS - 1) * rand() ** 2)];

const CAMPAIGNS = ['spring-sale-2026', 'loyalty-q3-2026'];
const NETWORKS = ['23410', '23415', '23420', '23430', '26201', '20801', '310260'];
const TEXTS = [
  'Your verification code is {n}. It expires in 10 minutes.',
  'Your parcel {n} is out for delivery today between 10:00 and 14:00.',
  'Hi! Your appointment is confirmed for tomorrow at {h}:00. Reply STOP to opt out.',
  'Payment of EUR {p} received, thank you. Ref {n}.',
  'Thanks for your order #{n}. We will let you know when it ships.',
  'Reminder: your subscription renews on the {d}th.',
  'ok thanks',
  'Can I change the delivery address for order {n}?',
  'Where is my parcel?',
  'Great, see you then 👍',
];
const text = () =>
  pick(TEXTS)
    .replace('{n}', String(100000 + int(900000)))
    .replace('{h}', String(8 + int(10)))
    .replace('{p}', (int(20000) / 100).toFixed(2))
    .replace('{d}', String(1 + int(28)));

// ---------------------------------------------------------------------------------------------------------
// The record stream: TOTAL records in time order (as a live pipeline would ingest them), each batch followed
// by the receipts of its SMS recipients.
const step = (endMs - startMs - 60_000) / TOTAL;
let produced = 0;
let smsSeq = 0;
let chatSeq = 0;
const longHistoryShare = LONG / TOTAL;

// Reservoir samples for the manifest.
const SAMPLE = 10_000;
const sampleIds = [];
const sampleMultiIds = [];
const sampleConversations = [];
let idsSeen = 0;
let multiSeen = 0;
let convSeen = 0;
const reservoir = (list, seen, value, size = SAMPLE) => {
  if (list.length < size) list.push(value);
  else {
    const j = int(seen);
    if (j < size) list[j] = value;
  }
};

const counts = {
  sms: 0,
  smsMulti: 0,
  chatOut: 0,
  chatIn: 0,
  smsIn: 0,
  longHistory: 0,
  campaign: 0,
  receipts: 0,
};

/** Appends the records of one logical message (several for a multi-recipient SMS) to `out`. */
function nextMessage(out, receipts) {
  const createdAt = new Date(startMs + produced * step + int(Math.max(1, Math.floor(step))));
  if (rand() < longHistoryShare) {
    const c = contacts[0];
    const inbound = rand() < 0.45;
    out.push({
      id: `wa-${++chatSeq}`,
      channel: 'WHATSAPP',
      channelUserId: c.phone,
      contactId: c.id,
      direction: inbound ? 'inbound' : 'outbound',
      createdAt,
      text: text(),
      ...(inbound
        ? {}
        : {
            status: weighted([
              [70, 'read'],
              [20, 'delivered'],
              [10, 'sent'],
            ]),
          }),
    });
    counts.longHistory++;
    counts[inbound ? 'chatIn' : 'chatOut']++;
    return;
  }
  const kind = weighted([
    [60, 'sms'],
    [2, 'smsIn'],
    [22, 'WHATSAPP'],
    [6, 'VIBER'],
    [4, 'TELEGRAM'],
    [3, 'APPLEMB'],
    [3, 'RBM'],
  ]);
  if (kind === 'sms') {
    const id = `sms-${++smsSeq}-${hex(6)}`;
    const recipients = rand() < 0.08 ? 2 + int(2) : 1;
    const campaign = rand() < 0.12 ? pick(CAMPAIGNS) : undefined;
    const body = text();
    const seen = new Set();
    for (let r = 0; r < recipients; r++) {
      let c = someContact();
      while (seen.has(c)) c = someContact();
      seen.add(c);
      const status = weighted([
        [92, '0'],
        [3, '1'],
        [5, '400'],
      ]);
      const network = pick(NETWORKS);
      out.push({
        id,
        channel: 'SMS',
        channelUserId: c.phone,
        contactId: c.id,
        direction: 'outbound',
        createdAt,
        text: body,
        ...(campaign ? { campaignId: campaign } : {}),
        sms: { status, network, price: 0.035 + int(5) / 1000, counts: body.length > 60 ? 2 : 1 },
      });
      if (campaign) counts.campaign++;
      counts.sms++;
      if (recipients > 1) counts.smsMulti++;
      reservoir(sampleConversations, ++convSeen, { channel: 'SMS', channelUserId: c.phone });
      if (status === '0' && rand() < 0.95) {
        const drTime = new Date(createdAt.getTime() + 2000 + int(30_000));
        const final = weighted([
          [85, ['delivered', '0']],
          [5, ['failed', pick(['1', '2', '3', '5', '6'])]],
          [3, ['expired', '2']],
          [2, ['rejected', pick(['4', '5', '8'])]],
          [1, ['unknown', '99']],
          [4, ['accepted', '0']],
        ]);
        if (final[0] !== 'accepted' && rand() < 0.1) {
          receipts.push({ messageId: id, to: c.phone, drStatuscode: 'accepted', drErrcode: '0', drTime });
        }
        receipts.push({
          messageId: id,
          to: c.phone,
          drStatuscode: final[0],
          drErrcode: final[1],
          drTime: new Date(drTime.getTime() + 1000 + int(60_000)),
          network,
        });
      }
    }
    reservoir(sampleIds, ++idsSeen, id);
    if (recipients > 1) reservoir(sampleMultiIds, ++multiSeen, id, 1000);
    return;
  }
  const channel = kind === 'smsIn' ? 'SMS' : kind;
  const inbound = kind === 'smsIn' || rand() < 0.4;
  const c = someContact();
  const campaign = !inbound && rand() < 0.1 ? pick(CAMPAIGNS) : undefined;
  out.push({
    id: `${channel.toLowerCase().slice(0, 2)}-${++chatSeq}-${hex(6)}`,
    channel,
    channelUserId: identityOf(c, channel),
    contactId: c.id,
    direction: inbound ? 'inbound' : 'outbound',
    createdAt,
    text: text(),
    ...(channel === 'WHATSAPP' && rand() < 0.1
      ? { content: { type: 'image', mediaUrl: `https://cdn.example.com/m/${hex(16)}.jpg`, caption: null } }
      : {}),
    ...(campaign ? { campaignId: campaign } : {}),
    ...(inbound
      ? {}
      : {
          status: weighted([
            [50, 'read'],
            [30, 'delivered'],
            [15, 'sent'],
            [5, 'failed'],
          ]),
        }),
  });
  if (campaign) counts.campaign++;
  counts[kind === 'smsIn' ? 'smsIn' : inbound ? 'chatIn' : 'chatOut']++;
  reservoir(sampleConversations, ++convSeen, { channel, channelUserId: identityOf(c, channel) });
}

// ---------------------------------------------------------------------------------------------------------
const config = loadConfig({ DATABASE_URL: databaseUrl, WAYBILL_PEPPER: BENCH.pepper });
const store = openStore(config);
await store.migrate();
if (await store.getAccountByKey(BENCH.key)) {
  console.error(`${databaseUrl} already holds the bench account ${BENCH.key}: seed an empty database`);
  await store.close();
  process.exit(1);
}
const { account } = await createAccount(
  store,
  Buffer.from(BENCH.pepper, 'utf8'),
  { name: 'bench', key: BENCH.key, secret: BENCH.secret },
  new Date(startMs),
);
console.log(`seeding ${TOTAL} message records into ${databaseUrl} (account ${account.id})`);

const started = performance.now();
let msgMs = 0;
let rctMs = 0;
let batches = 0;
const now = new Date(endMs);
while (produced < TOTAL) {
  const items = [];
  const receipts = [];
  while (items.length < BATCH && produced + items.length < TOTAL) {
    const before = items.length;
    nextMessage(items, receipts);
    produced += items.length - before;
  }
  // A multi-recipient SMS may overshoot the batch or the total by a record or two: keep the batch ≤ BATCH.
  const overflow = items.splice(BATCH);
  let t = performance.now();
  for (const part of [items, overflow]) {
    if (part.length === 0) continue;
    const outcome = await store.ingestMessages(account.id, part, now);
    if (!outcome.ok) throw new Error(`message batch refused: ${JSON.stringify(outcome.errors.slice(0, 3))}`);
  }
  msgMs += performance.now() - t;
  t = performance.now();
  for (let i = 0; i < receipts.length; i += BATCH) {
    const outcome = await store.ingestReceipts(account.id, receipts.slice(i, i + BATCH), now);
    if (!outcome.ok) throw new Error(`receipt batch refused: ${JSON.stringify(outcome.errors.slice(0, 3))}`);
    if (outcome.value.unknown.length > 0)
      throw new Error(`unknown receipts: ${outcome.value.unknown.length}`);
  }
  rctMs += performance.now() - t;
  counts.receipts += receipts.length;
  if (++batches % 50 === 0 || produced >= TOTAL) {
    const s = (performance.now() - started) / 1000;
    console.log(
      `  ${produced.toLocaleString('en')} records, ${counts.receipts.toLocaleString('en')} receipts, ` +
        `${s.toFixed(0)} s, ${Math.round(produced / (msgMs / 1000))} records/s (message batches only), ` +
        `${Math.round(counts.receipts / (rctMs / 1000))} receipts/s`,
    );
  }
}
const wallS = (performance.now() - started) / 1000;
await store.close();

// ---------------------------------------------------------------------------------------------------------
// Post-seed housekeeping and size on disk.
let size = {};
if (databaseUrl.startsWith('sqlite:')) {
  const file = databaseUrl.slice('sqlite:'.length);
  const { default: Database } = await import('better-sqlite3');
  const db = new Database(file);
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  size = { sqliteFileBytes: statSync(file).size };
} else {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  // What autovacuum would do after a bulk load: fresh statistics and a visibility map.
  const t = performance.now();
  await client.query('VACUUM (ANALYZE)');
  console.log(`  VACUUM (ANALYZE) ${((performance.now() - t) / 1000).toFixed(1)} s`);
  const { rows } = await client.query(
    `SELECT sum(pg_total_relation_size(c.oid))::bigint AS bytes
     FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition`,
  );
  const parts = await client.query(
    `SELECT sum(pg_total_relation_size(c.oid))::bigint AS bytes
     FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = 'public' AND c.relkind = 'r' AND c.relispartition`,
  );
  const db = await client.query('SELECT pg_database_size(current_database())::bigint AS bytes');
  await client.end();
  size = {
    pgTotalRelationBytes: Number(rows[0].bytes) + Number(parts.rows[0].bytes),
    pgDatabaseBytes: Number(db.rows[0].bytes),
  };
}

const manifest = {
  databaseUrl,
  key: BENCH.key,
  secret: BENCH.secret,
  pepper: BENCH.pepper,
  accountId: account.id,
  records: produced,
  contacts: CONTACTS,
  from: new Date(startMs).toISOString(),
  to: new Date(endMs).toISOString(),
  counts,
  campaigns: CAMPAIGNS,
  longHistory: {
    channel: 'WHATSAPP',
    channelUserId: contacts[0].phone,
    contactId: contacts[0].id,
    messages: counts.longHistory,
  },
  sampleMessageIds: sampleIds,
  sampleMultiRecipientIds: sampleMultiIds,
  sampleConversations: dedupe(sampleConversations),
  ingest: {
    wallSeconds: Math.round(wallS * 10) / 10,
    recordsPerSecond: Math.round(produced / wallS),
    messageBatchRecordsPerSecond: Math.round(produced / (msgMs / 1000)),
    receiptsPerSecond: Math.round(counts.receipts / (rctMs / 1000)),
  },
  size,
};
mkdirSync(dirname(manifestPath), { recursive: true });
writeFileSync(manifestPath, `${JSON.stringify(manifest, null, 1)}\n`);
console.log(
  JSON.stringify(
    {
      ...manifest,
      sampleMessageIds: undefined,
      sampleMultiRecipientIds: undefined,
      sampleConversations: undefined,
    },
    null,
    2,
  ),
);
console.log(`manifest: ${manifestPath}`);

function dedupe(list) {
  const seen = new Map();
  for (const c of list) seen.set(`${c.channel}\u0000${c.channelUserId}`, c);
  return [...seen.values()];
}
