// Bulk data generator for the load benchmarks: writes a realistic, consistent Waybill dataset straight into the
// tables (no Store round trips), then reopens it with the server's own store and checks it, and writes the
// manifest the benchmark harness reads (`<file>.manifest.json`, or bench/.data/pg-<database>.manifest.json).
// Its command line is bench/datagen.mjs; `npm run bench` calls generate() when a dataset is missing.
//
// The schema and the bench account come from the server's code (openStore + migrate, createAccount); the rows
// are written as the store would write them: ingest sequence per account in ingest order, epoch-ms times, the
// SMS and receipt columns of a recipient after its last receipt, one receipt_events row per applied receipt
// whose item is the built domain's toDlrItem of the recipient after that receipt. The dataset is deterministic
// for a given --seed and --end.
//
// What is in it, for --recipients N:
//   - N outbound SMS recipient records (the /dlr rows): ~8% of message ids go to 2–3 numbers; ~90% of
//     recipients have a receipt (mostly delivered, some failed/expired/rejected/unknown), ~8% of those with an
//     `accepted` receipt before the final one (two events); the others are submitted ("0"), in progress ("1")
//     or refused ("400") with no receipt.
//   - 2% of N inbound SMS records and 10% of N WhatsApp records of contacts that also have WhatsApp.
//   - ≈ N/20 contacts, each with an SMS identity and conversation (its phone number) and 30% of them also a
//     WHATSAPP one (the same number); contacts, identities and conversations appear with their first message.
//   - one "long" contact with --long (100,000) WhatsApp messages in one conversation, spread over the period.
//   - one campaign carried by ~2% of the SMS messages (three more campaigns share another ~8%).
//
// SQLite: the store creates the file (migrations, bench account) and closes it; the load then runs on plain
// better-sqlite3 connections with journal_mode OFF, synchronous OFF and the secondary indexes of `messages`
// dropped (recreated from their sqlite_master text). The main thread writes every message record, in one
// transaction, a chunk at a time in ingest order; a helper thread runs the same generator and writes the
// receipt events, contacts, identities and conversations (with their indexes) into a side file, which is copied
// in by SQLite's transfer optimization; the events, which name their record by its ref, are joined to the records
// as they are copied. Then the account's last_message_seq / last_event_seq, the review rollup
// (migration 7's backfill), WAL mode back on,
// and the checks. PostgreSQL: see datagen-pg.mjs.
import { mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { DATASET_VERSION, manifestPathFor, serverModules } from './paths.mjs';
import { mulberry32 } from './random.mjs';

const {
  loadConfig,
  openStore,
  createAccount,
  drStatusOf,
  toDlrItem,
  storedItem,
  comparePositions,
  rollupBackfill,
} = await serverModules();

export const BENCH = { key: 'BENCHKEY', secret: 'BENCHSEC', pepper: 'bench-pepper-0123456789' };

const DAY_MS = 86_400_000;
/** CPU seconds of this thread (user and system). */
const threadCpu = () => {
  const { user, system } = process.threadCpuUsage();
  return (user + system) / 1e6;
};
/**
 * The default end of the period: fixed, so a seed always gives the same rows (but for the account's own id and
 * secrets, drawn by createAccount). Pass --end for another.
 */
export const DEFAULT_END = '2026-11-01T00:00:00.000Z';
const SAMPLE_IDS = 10_000;
const SAMPLE_MISSING = 1000;
const SAMPLE_CONVERSATIONS = 1000;

const HEX1 = '0123456789abcdef';
const HEX2 = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));
const hex8 = (u) => HEX2[u >>> 24] + HEX2[(u >>> 16) & 255] + HEX2[(u >>> 8) & 255] + HEX2[u & 255];
const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const PAD2 = Array.from({ length: 100 }, (_, i) => String(i).padStart(2, '0'));
const PAD3 = Array.from({ length: 1000 }, (_, i) => String(i).padStart(3, '0'));

/** `n` Crockford base-32 characters from the bits of `u`, lowest first. */
function base32(u, n) {
  let s = '';
  for (let k = 0; k < n * 5; k += 5) s += CROCKFORD[(u >>> k) & 31];
  return s;
}

/**
 * Random-looking ids from a 32-bit source: UUIDv4 for message ids; UUIDv7 for contacts and conversations, as
 * domain/ids.ts newId() makes them (48 bits of epoch ms first); ULIDs for event ids, as domain/events.ts
 * newEventId() makes them (10 characters of epoch ms, 16 random). `uuid4(a)` takes its first 32 bits, so the
 * caller knows how the id sorts.
 */
function idMaker(u32) {
  const uuid4 = (a) => {
    const b = u32();
    const c = u32();
    const d = u32();
    return (
      `${hex8(a)}-${HEX2[b >>> 24]}${HEX2[(b >>> 16) & 255]}-4${HEX1[(b >>> 8) & 15]}${HEX2[b & 255]}-` +
      `${'89ab'[c >>> 30]}${HEX1[(c >>> 24) & 15]}${HEX2[(c >>> 16) & 255]}-${HEX2[(c >>> 8) & 255]}${HEX2[c & 255]}${hex8(d)}`
    );
  };
  const uuid7 = (ms) => {
    const t = ms.toString(16).padStart(12, '0');
    const b = u32();
    const c = u32();
    return (
      `${t.slice(0, 8)}-${t.slice(8, 12)}-7${HEX1[(b >>> 8) & 15]}${HEX2[b & 255]}-` +
      `${'89ab'[b >>> 30]}${HEX1[(b >>> 24) & 15]}${HEX2[(b >>> 16) & 255]}-${HEX2[c >>> 24]}${HEX2[(c >>> 16) & 255]}${hex8(u32())}`
    );
  };
  let lastMs = -1;
  let lastTime = '';
  const ulid = (ms) => {
    if (ms !== lastMs) {
      lastMs = ms;
      lastTime = '';
      for (let i = 0, t = ms; i < 10; i++, t = Math.floor(t / 32)) lastTime = CROCKFORD[t % 32] + lastTime;
    }
    return lastTime + base32(u32(), 6) + base32(u32(), 6) + base32(u32(), 4);
  };
  return { uuid4, uuid7, ulid };
}

/** A uniform sample of at most `size` values from a stream, drawn with its own random source. */
function reservoir(size, u32) {
  const items = [];
  let seen = 0;
  return {
    items,
    /** The slot a new value takes, or -1 when it is not kept. */
    slot() {
      seen++;
      if (items.length < size) return items.length;
      const j = Math.floor((u32() / 4294967296) * seen);
      return j < size ? j : -1;
    },
  };
}

/**
 * formatDrTime (domain/wire.ts) without a Date per call: `yyyy-MM-dd HH:mm:ss.SSS` UTC, the day's text cached.
 * Checked against the real one as the dataset is made.
 */
function drTimeFormatter() {
  let day = Number.NaN;
  let prefix = '';
  return (ms) => {
    const d = Math.floor(ms / DAY_MS);
    if (d !== day) {
      day = d;
      prefix = `${new Date(d * DAY_MS).toISOString().slice(0, 10)} `;
    }
    let r = ms - d * DAY_MS;
    const h = Math.floor(r / 3_600_000);
    r -= h * 3_600_000;
    const m = Math.floor(r / 60_000);
    r -= m * 60_000;
    const s = Math.floor(r / 1000);
    return `${prefix}${PAD2[h]}:${PAD2[m]}:${PAD2[s]}.${PAD3[r - s * 1000]}`;
  };
}

// ---------------------------------------------------------------------------------------------------------
// The dataset, as a stream of rows handed to a sink.

const NETWORKS = ['23410', '23415', '23420', '23430', '26201', '20801', '310260'];
const PRICES = [0.035, 0.036, 0.037, 0.038, 0.039];
const SMS_TEXTS = [
  'Your code is ',
  'Order shipped: ',
  'Parcel arrives today, ref ',
  'Booking confirmed ',
  'Paid, ref ',
];
const REPLIES = ['ok thanks', 'STOP', 'Where is my parcel?', 'yes', 'Call me please'];
const CHAT_TEXTS = ['Your order is ready: ', 'Thanks! ', 'See you, ref ', 'Where is order ', 'Ticket '];
const MAIN_CAMPAIGN = 'spring-sale-2026';
const OTHER_CAMPAIGNS = ['loyalty-q3-2026', 'welcome-series', 'reactivation-oct'];
/** Final receipts: [weight, drStatuscode, drErrcodes]. */
const FINALS = [
  [88, 'delivered', ['0']],
  [6, 'failed', ['1', '2', '3', '5', '6']],
  [4, 'expired', ['2']],
  [1, 'rejected', ['4', '5', '8']],
  [1, 'unknown', ['99']],
];
const FINAL_WEIGHT = FINALS.reduce((s, [w]) => s + w, 0);

/** A contact's phone number: 447 and nine digits, distinct per contact index (48271 is coprime with 10^9). */
const phoneNumber = (i) => `447${String((i * 48271) % 1_000_000_000).padStart(9, '0')}`;

/** The dataset's size: N SMS recipients, 2% inbound SMS, 10% WhatsApp, the long history; N/20 contacts. */
export function datasetShape({ recipients, longMessages = 100_000 }) {
  const N = Math.floor(recipients);
  if (!(N >= 1)) throw new Error('recipients must be at least 1');
  if (!(longMessages >= 1)) throw new Error('the long history needs at least 1 message');
  const inboundSms = Math.round(N * 0.02);
  const whatsapp = Math.round(N * 0.1);
  return {
    recipients: N,
    inboundSms,
    whatsapp,
    long: Math.floor(longMessages),
    contacts: Math.max(11, Math.round(N / 20)),
    records: N + inboundSms + whatsapp + Math.floor(longMessages),
  };
}

/** The period the records' createdAt spread over: `days` up to `end`. */
export function periodOf({ end = DEFAULT_END, days = 90 }) {
  const endMs = new Date(end).getTime();
  if (!Number.isFinite(endMs)) throw new Error(`bad end time ${end}`);
  if (!(days > 0)) throw new Error(`bad number of days ${days}`);
  return { startMs: endMs - days * DAY_MS, endMs };
}

/**
 * Makes the generator of one dataset. The sink receives rows synchronously, in ingest order (as the store would
 * have written them), through these methods (`event` only when `sink.events` is true):
 *
 *   contact(id) · identity(channel, channelUserId, contactId) · conversation(contactId, channel, id)
 *   sms(seq, createdAt, id, contactId, to, conversationId, campaignId, text, smsStatus, network, price,
 *       drStatuscode, drErrcode, drTime)                   an outbound SMS recipient (counts is always 1)
 *   inbound(seq, createdAt, id, contactId, from, conversationId, text)     an inbound SMS
 *   chat(seq, createdAt, id, direction, contactId, channelUserId, conversationId, text, content, status)
 *                                                          a WHATSAPP record
 *   event(seq, id, messageId, recipient, recordedAt, messageCreatedAt, item, last)  a receipt_events row
 *
 * Times are epoch ms. `run(n)` produces at least n more records (or the rest).
 */
export function createDataset({ recipients, seed = 42, longMessages = 100_000, end, days = 90 }, sink) {
  const shape = datasetShape({ recipients, longMessages });
  const { startMs, endMs } = periodOf({ end, days });
  const u32 = mulberry32(seed);
  const int = (n) => Math.floor((u32() / 4294967296) * n);
  const chance = (p) => u32() < p * 4294967296;
  const { uuid4, uuid7, ulid } = idMaker(u32);
  const drTimeText = drTimeFormatter();
  // Samples draw from their own source, so what is sampled never changes the data.
  const sampling = mulberry32(seed ^ 0x5eed5eed);
  const ids = reservoir(SAMPLE_IDS, sampling);
  const conversations = reservoir(SAMPLE_CONVERSATIONS, sampling);

  const C = shape.contacts;
  const phones = new Array(C).fill(null);
  const phoneOf = (i) => {
    let phone = phones[i];
    if (phone === null) {
      phone = phoneNumber(i);
      phones[i] = phone;
    }
    return phone;
  };
  const contactIds = new Array(C).fill(null);
  const smsConversations = new Array(C).fill(null);
  const waConversations = new Array(C).fill(null);
  // Skewed: a few busy contacts, a long tail of quiet ones (contact 0 is the long history's). Three contacts in
  // ten (index 0, 1 or 2 modulo 10) also use WhatsApp.
  const someContact = () => {
    const r = u32() / 4294967296;
    return 1 + Math.floor((C - 1) * r * r);
  };
  const someWhatsAppContact = () => {
    const i = someContact();
    let w = i - (i % 10) + (i % 3);
    if (w >= C) w -= 10;
    return w <= 0 ? 1 : w;
  };
  const contactOf = (i, at) => {
    let id = contactIds[i];
    if (id === null) {
      id = uuid7(at);
      contactIds[i] = id;
      sink.contact(id);
    }
    return id;
  };
  const conversationOf = (i, channel, at) => {
    const list = channel === 'SMS' ? smsConversations : waConversations;
    let id = list[i];
    if (id === null) {
      const contactId = contactOf(i, at);
      const channelUserId = phoneOf(i);
      sink.identity(channel, channelUserId, contactId);
      id = uuid7(at);
      list[i] = id;
      sink.conversation(contactId, channel, id);
      if (i !== 0) {
        const slot = conversations.slot();
        if (slot >= 0) conversations.items[slot] = { channel, channelUserId };
      }
    }
    return id;
  };

  const remaining = {
    sms: shape.recipients,
    inbound: shape.inboundSms,
    wa: shape.whatsapp,
    long: shape.long,
  };
  const step = (endMs - startMs - 600_000) / shape.records;
  const counts = { campaign: 0, multi: 0, messageIds: 0, itemChecks: 0 };
  let produced = 0;
  let seq = 0;
  let eventSeq = 0;
  let lastRecordedAt = 0;

  /**
   * Records the receipt event of an SMS recipient `r` (its record's fields) now in this state; returns its seq.
   * The item is toDlrItem's as the store keeps it (store/event-item.ts), written out directly; the first
   * thousand and every 97th after are compared with the real one. `last`: the recipient's last receipt, whose
   * item is its record's as written (a SQLite sink then stores none: store/sqlite/current-item.ts).
   */
  const event = (r, code, errcode, drTime, last) => {
    const recordedAt = Math.max(lastRecordedAt, drTime + 200 + int(3000));
    lastRecordedAt = recordedAt;
    if (!sink.events) {
      // A sink that writes no events still draws what the event id would have, so the data stays the same.
      u32();
      u32();
      u32();
      return ++eventSeq;
    }
    const item = `["0",${r.price},1,"${r.network}",${drStatusOf(code)},"${code}","${errcode}","${drTimeText(drTime)}"]`;
    if (++eventSeq <= 1000 || eventSeq % 97 === 0) {
      const receipt = { drStatuscode: code, drErrcode: errcode, drTime: new Date(drTime) };
      const sms = { status: '0', network: r.network, price: r.price, counts: 1, receipt };
      // The record as the store holds it after this receipt.
      const record = {
        id: r.id,
        channel: 'SMS',
        direction: 'outbound',
        contactId: r.contactId,
        channelUserId: r.to,
        conversationId: r.conversationId,
        campaignId: r.campaignId,
        text: r.text,
        content: null,
        status: null,
        sms,
        createdAt: new Date(r.createdAt),
      };
      const real = storedItem(toDlrItem(record), r.id, r.to);
      if (real !== item) throw new Error(`datagen: item ${item} differs from toDlrItem's ${real}`);
      counts.itemChecks++;
    }
    sink.event(eventSeq, `evt_${ulid(recordedAt)}`, r.id, r.to, recordedAt, r.createdAt, item, last);
    return eventSeq;
  };

  const smsMessage = (at) => {
    const n = Math.min(remaining.sms, chance(0.08) ? 2 + int(2) : 1);
    remaining.sms -= n;
    const key = u32();
    const id = uuid4(key);
    counts.messageIds++;
    if (n > 1) counts.multi++;
    const c = u32() / 4294967296;
    const campaignId = c < 0.02 ? MAIN_CAMPAIGN : c < 0.1 ? OTHER_CAMPAIGNS[int(3)] : null;
    const text = SMS_TEXTS[int(SMS_TEXTS.length)] + (100000 + int(900000));
    const slot = ids.slot();
    const expected = slot >= 0 ? { id, recipients: [] } : null;
    if (expected) ids.items[slot] = expected;
    let taken0 = -1;
    let taken1 = -1;
    for (let r = 0; r < n; r++) {
      let i = someContact();
      while (i === taken0 || i === taken1) i = someContact();
      if (r === 0) taken0 = i;
      else taken1 = i;
      const conversationId = conversationOf(i, 'SMS', at);
      const contactId = contactIds[i];
      const to = phoneOf(i);
      const network = NETWORKS[int(NETWORKS.length)];
      const price = PRICES[int(PRICES.length)];
      let status = '0';
      let code = null;
      let errcode = null;
      let drTime = null;
      let lastEvent = 0;
      if (chance(0.9)) {
        let w = int(FINAL_WEIGHT);
        let k = 0;
        while (w >= FINALS[k][0]) w -= FINALS[k++][0];
        const errcodes = FINALS[k][2];
        drTime = at + 2000 + int(60_000);
        const recipient = {
          id,
          to,
          createdAt: at,
          network,
          price,
          contactId,
          conversationId,
          campaignId,
          text,
        };
        if (chance(0.08)) {
          lastEvent = event(recipient, 'accepted', '0', drTime, false);
          drTime += 5000 + int(120_000);
        }
        code = FINALS[k][1];
        errcode = errcodes[int(errcodes.length)];
        lastEvent = event(recipient, code, errcode, drTime, true);
      } else {
        const s = int(10);
        status = s < 6 ? '0' : s < 8 ? '1' : '400';
      }
      sink.sms(
        ++seq,
        at,
        id,
        contactId,
        to,
        conversationId,
        campaignId,
        text,
        status,
        network,
        price,
        code,
        errcode,
        drTime,
      );
      if (campaignId === MAIN_CAMPAIGN) counts.campaign++;
      expected?.recipients.push({
        to,
        contactId,
        status,
        network,
        price,
        counts: 1,
        receipt: code === null ? null : { drStatuscode: code, drErrcode: errcode, drTime },
        lastEvent,
      });
    }
    return n;
  };

  const inboundSms = (at) => {
    remaining.inbound--;
    const i = someContact();
    const conversationId = conversationOf(i, 'SMS', at);
    const key = u32();
    sink.inbound(
      ++seq,
      at,
      uuid4(key),
      contactIds[i],
      phoneOf(i),
      conversationId,
      REPLIES[int(REPLIES.length)],
    );
    return 1;
  };

  const chat = (i, at) => {
    const conversationId = conversationOf(i, 'WHATSAPP', at);
    const inbound = chance(i === 0 ? 0.45 : 0.4);
    const key = u32();
    const id = `wamid.${hex8(key)}${hex8(u32())}${hex8(u32())}`;
    const text = CHAT_TEXTS[int(CHAT_TEXTS.length)] + (1000 + int(9000));
    const content = chance(0.05)
      ? `{"type":"image","mediaUrl":"https://cdn.example.com/m/${hex8(u32())}.jpg","caption":null}`
      : null;
    let status = null;
    if (!inbound) {
      const s = int(20);
      status = s < 10 ? 'read' : s < 16 ? 'delivered' : s < 19 ? 'sent' : 'failed';
    }
    const direction = inbound ? 'inbound' : 'outbound';
    sink.chat(++seq, at, id, direction, contactIds[i], phoneOf(i), conversationId, text, content, status);
    return 1;
  };

  return {
    shape,
    startMs,
    endMs,
    get done() {
      return produced >= shape.records;
    },
    get produced() {
      return produced;
    },
    get events() {
      return eventSeq;
    },
    get lastSeq() {
      return seq;
    },
    run(n) {
      const before = produced;
      while (produced < shape.records && produced - before < n) {
        const at = startMs + Math.floor(produced * step) + int(Math.floor(step));
        // Each kind in proportion to what is left of it, so every count comes out exact.
        const r = int(remaining.sms + remaining.inbound + remaining.wa + remaining.long);
        if (r < remaining.sms) produced += smsMessage(at);
        else if (r < remaining.sms + remaining.inbound) produced += inboundSms(at);
        else if (r < remaining.sms + remaining.inbound + remaining.wa) {
          remaining.wa--;
          produced += chat(someWhatsAppContact(), at);
        } else {
          remaining.long--;
          produced += chat(0, at);
        }
      }
      return produced - before;
    },
    /** The samples and counts the manifest and the checks need, once done. */
    summary() {
      const missing = idMaker(mulberry32(seed ^ 0x0dd0dd));
      const missingU32 = mulberry32(seed ^ 0x1dd1dd);
      return {
        counts: { ...counts, records: produced, events: eventSeq },
        dlrSamples: ids.items,
        missingIds: Array.from({ length: SAMPLE_MISSING }, () => missing.uuid4(missingU32())),
        long: { channel: 'WHATSAPP', channelUserId: phoneNumber(0), messages: shape.long },
        campaign: { id: MAIN_CAMPAIGN, messages: counts.campaign },
        conversations: conversations.items,
        endMs,
      };
    },
  };
}

// ---------------------------------------------------------------------------------------------------------
// SQLite.

const sqlitePath = (url) => resolve(url.slice('sqlite:'.length));

/** Creates the schema and the bench account with the server's own code; refuses a database that has it. */
async function prepareDatabase(databaseUrl, startMs) {
  const store = openStore(loadConfig({ DATABASE_URL: databaseUrl, WAYBILL_PEPPER: BENCH.pepper }));
  try {
    await store.migrate();
    if (await store.getAccountByKey(BENCH.key)) {
      throw new Error(`${databaseUrl} already holds the bench account ${BENCH.key} (use --force)`);
    }
    const { account } = await createAccount(
      store,
      Buffer.from(BENCH.pepper, 'utf8'),
      { name: 'bench', key: BENCH.key, secret: BENCH.secret },
      new Date(startMs),
    );
    if (!/^[0-9a-f-]{36}$/.test(account.id)) throw new Error(`unexpected account id ${account.id}`);
    return account.id;
  } finally {
    await store.close();
  }
}

/** Records per flush. */
const CHUNK = 100_000;
/** Rows per multi-row INSERT: better-sqlite3's cost per call is then paid once for many rows. */
const ROWS_PER_INSERT = 64;

const MESSAGE_COLUMNS =
  'account_id, seq, created_at, id, channel, direction, channel_user_id, conversation_ref, ' +
  'campaign_id, text, content, status, sms_status, network, price, counts, dr_statuscode, dr_errcode, dr_time';
/** Tables the helper thread fills in a side file; the main thread then copies them whole. */
const HELPER_TABLES = ['contacts', 'identities', 'conversations'];
/**
 * The helper's receipt events, by message id and number: their table names the record by its ref
 * (store/sqlite/record-refs.ts), which only the main thread's writes give, so they are joined to the records
 * when copied.
 */
const EVENT_ROWS = `CREATE TABLE event_rows (seq INTEGER PRIMARY KEY, id TEXT NOT NULL, message_id TEXT NOT NULL,
  recipient TEXT NOT NULL, recorded_at INTEGER NOT NULL, item TEXT)`;

/**
 * What a connection loading in bulk runs with: no journal, no syncs, no foreign-key checks, a big cache.
 * better-sqlite3 opens connections in SQLite's defensive mode, which ignores journal_mode = OFF (silently: the
 * pragma answers with the mode it kept, here the store's WAL, and the whole load then went through a WAL as big
 * as the file); unsafe mode lifts that for this connection, which does nothing but load.
 */
function bulkPragmas(db, cacheMb) {
  db.unsafeMode(true);
  const mode = db.pragma('journal_mode = OFF', { simple: true });
  if (mode !== 'off') throw new Error(`datagen: journal_mode stayed ${mode}`);
  db.pragma('synchronous = OFF');
  db.pragma('foreign_keys = OFF');
  db.pragma(`cache_size = ${-cacheMb * 1024}`);
}

/**
 * Inserts rows of `width` values through multi-row INSERTs of ROWS_PER_INSERT rows (the rest one by one).
 * `values` is the text of one row's VALUES tuple.
 */
function batchInsert(db, head, values, width) {
  const one = db.prepare(`${head} VALUES ${values}`);
  const many = db.prepare(`${head} VALUES ${Array(ROWS_PER_INSERT).fill(values).join(', ')}`);
  const args = new Array(width * ROWS_PER_INSERT);
  const full = args.length;
  let n = 0;
  return {
    args,
    /** Call after writing `width` values at args[at()…]. */
    at: () => n,
    added() {
      n += width;
      if (n === full) {
        many.run(args);
        n = 0;
      }
    },
    /** Inserts a row given as an array. */
    add(row) {
      for (let j = 0; j < width; j++) args[n + j] = row[j];
      this.added();
    },
    end() {
      for (let i = 0; i < n; i += width) one.run(args.slice(i, i + width));
      n = 0;
    },
  };
}

/**
 * A sink writing into SQLite: `messages` takes the message records, `others` the receipt events, contacts,
 * identities and conversations. Records are buffered and inserted a chunk at a time, each kind in the order
 * the service would have written them (their `seq`), so their refs (rowids) follow ingest order as the
 * service's do: a receipt event then finds its record near its neighbours' (the feed's join, record-refs.ts).
 * Written in id order instead (as before layout 4, to keep the unique key's inserts in order), the records of one
 * page of the feed lay on as many random pages, and the join cost a quarter more than it does on a file the
 * service wrote. The unique key (account, id, channel_user_id) is rebuilt after the load (loadSqlite), as
 * compact as VACUUM leaves it. Constants are SQL literals: on this path a bound string costs more than SQLite's
 * own work for it.
 */
function sqliteSink(db, accountRef, { messages, others }) {
  // The account's integer ref (store/sqlite/account-ref.ts), which every table of its data keys it by.
  const account = String(accountRef);
  const noop = () => {};
  const sink = { events: others, written: 0 };
  // Each conversation's ref (store/sqlite/record-refs.ts), given in the order the generator creates them:
  // both threads run the same generator, so the records the main thread writes name the refs of the
  // conversations the helper thread writes.
  const conversationRefs = new Map();
  const refOfConversation = (id) => conversationRefs.get(id);
  sink.conversation = (_contactId, _channel, id) => conversationRefs.set(id, conversationRefs.size + 1);
  if (others) {
    const contact = db.prepare(`INSERT INTO contacts (account_id, id) VALUES (${account}, ?)`);
    const identity = db.prepare(
      `INSERT INTO identities (account_id, channel, channel_user_id, contact_id) VALUES (${account}, ?, ?, ?)`,
    );
    const conversation = db.prepare(
      `INSERT INTO conversations (ref, account_id, contact_id, channel, id) VALUES (?, ${account}, ?, ?, ?)`,
    );
    const events = batchInsert(
      db,
      'INSERT INTO event_rows (seq, id, message_id, recipient, recorded_at, item)',
      '(?, ?, ?, ?, ?, ?)',
      6,
    );
    const a = events.args;
    sink.contact = (id) => contact.run(id);
    sink.identity = (channel, user, contactId) => identity.run(channel, user, contactId);
    sink.conversation = (contactId, channel, id) => {
      conversationRefs.set(id, conversationRefs.size + 1);
      conversation.run(conversationRefs.size, contactId, channel, id);
    };
    // The record's time is the PostgreSQL generator's (its events keep it); SQLite's events do not, nor the
    // item of a recipient's last event, which its record holds.
    sink.event = (seq, id, messageId, recipient, recordedAt, _messageCreatedAt, item, last) => {
      const i = events.at();
      a[i] = seq;
      a[i + 1] = id;
      a[i + 2] = messageId;
      a[i + 3] = recipient;
      a[i + 4] = recordedAt;
      a[i + 5] = last ? null : item;
      events.added();
    };
    sink.flushOthers = () => events.end();
  } else {
    sink.contact = sink.identity = sink.event = noop;
    sink.flushOthers = noop;
  }
  // One buffer per kind of record (outbound SMS, inbound SMS, WhatsApp), each with its own INSERT.
  const head = `INSERT INTO messages (${MESSAGE_COLUMNS})`;
  const kinds = [
    [`(${account}, ?, ?, ?, 'SMS', 'outbound', ?, ?, ?, ?, NULL, NULL, ?, ?, ?, 1, ?, ?, ?)`, 13],
    [
      `(${account}, ?, ?, ?, 'SMS', 'inbound', ?, ?, NULL, ?, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`,
      6,
    ],
    [
      `(${account}, ?, ?, ?, 'WHATSAPP', ?, ?, ?, NULL, ?, ?, ?, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`,
      9,
    ],
  ].map(([values, width]) => ({
    insert: messages ? batchInsert(db, head, values, width) : null,
    rows: new Array(CHUNK + 16),
    n: 0,
  }));
  const [sms, inbound, chat] = kinds;
  const add = (kind, row) => {
    if (kind.n >= kind.rows.length) throw new Error('datagen: chunk overflow');
    kind.rows[kind.n++] = row;
  };
  if (messages) {
    // A row is what the sink receives but the contact, with the conversation's ref in place of its id, in the
    // order of the kind's INSERT.
    sink.sms = (seq, at, id, _contactId, to, conversationId, ...rest) =>
      add(sms, [seq, at, id, to, refOfConversation(conversationId), ...rest]);
    sink.inbound = (seq, at, id, _contactId, from, conversationId, text) =>
      add(inbound, [seq, at, id, from, refOfConversation(conversationId), text]);
    sink.chat = (seq, at, id, direction, _contactId, channelUserId, conversationId, ...rest) =>
      add(chat, [seq, at, id, direction, channelUserId, refOfConversation(conversationId), ...rest]);
  } else {
    sink.sms = sink.inbound = sink.chat = noop;
  }
  /** Inserts the buffered records, each kind in ingest order, and the pending events. */
  sink.flush = () => {
    for (const kind of kinds) {
      if (kind.n === 0) continue;
      for (let i = 0; i < kind.n; i++) {
        kind.insert.add(kind.rows[i]);
        kind.rows[i] = undefined;
      }
      kind.insert.end();
      sink.written += kind.n;
      kind.n = 0;
    }
    sink.flushOthers();
  };
  return sink;
}

/**
 * Runs the generator into a sink inside one transaction. One, because a commit writes every page the
 * transaction dirtied, and a chunk of random ids dirties most pages of the primary key: committing per chunk
 * rewrote that index again and again (measured while the journal was still, unknowingly, the WAL: 1M
 * recipients in 68 s instead of 47). With journal_mode OFF the cache spills to the file as it fills. Returns
 * the generator, with the CPU seconds of each step in `cpu`.
 */
function fill(db, options, sink, progress = () => {}) {
  const gen = createDataset(options, sink);
  const cpu = { generate: 0, insert: 0, commit: 0 };
  let t = threadCpu();
  const account = (step) => {
    const now = threadCpu();
    cpu[step] += now - t;
    t = now;
  };
  db.exec('BEGIN');
  while (!gen.done) {
    gen.run(CHUNK);
    account('generate');
    sink.flush();
    account('insert');
    progress(gen);
  }
  db.exec('COMMIT');
  account('commit');
  gen.cpu = cpu;
  return gen;
}

/**
 * The helper thread's part, in a side file with the main file's own definitions of HELPER_TABLES: the contacts,
 * identities and conversations, with their indexes, and the receipt events in EVENT_ROWS. It runs the same
 * generator (so the same data) and skips the message records, which the main thread writes meanwhile.
 */
function writePart({ file, accountRef, options, tables, indexes }) {
  const started = performance.now();
  rmSync(file, { force: true });
  const db = new Database(file);
  try {
    bulkPragmas(db, 1000);
    for (const sql of [...tables, EVENT_ROWS]) db.exec(sql);
    const sink = sqliteSink(db, accountRef, { messages: false, others: true });
    const gen = fill(db, options, sink);
    const rowsSeconds = (performance.now() - started) / 1000;
    for (const sql of indexes) db.exec(sql);
    return {
      events: gen.events,
      rowsSeconds,
      seconds: (performance.now() - started) / 1000,
      cpu: { ...gen.cpu, total: threadCpu() },
    };
  } finally {
    db.close();
  }
}

function startPart(data) {
  const worker = new Worker(new URL(import.meta.url), { workerData: { datagenPart: data } });
  return new Promise((resolvePart, reject) => {
    worker.once('message', (m) => (m.ok ? resolvePart(m.value) : reject(new Error(m.error))));
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`datagen helper thread exited with code ${code}`)));
  });
}

const quoteName = (name) => `"${name.replaceAll('"', '""')}"`;

async function loadSqlite(options, databaseUrl, log) {
  const file = sqlitePath(databaseUrl);
  mkdirSync(dirname(file), { recursive: true });
  const accountId = await prepareDatabase(`sqlite:${file}`, periodOf(options).startMs);
  const partFile = `${file}.part`;

  const db = new Database(file);
  let phase = performance.now();
  let phaseCpu = threadCpu();
  const lap = () => {
    const now = performance.now();
    const cpu = threadCpu();
    const text = `${((now - phase) / 1000).toFixed(1)} s (CPU ${(cpu - phaseCpu).toFixed(1)} s)`;
    phase = now;
    phaseCpu = cpu;
    return text;
  };
  try {
    bulkPragmas(db, 2000);
    // The migrations' own definitions: the helper's tables for its side file, the indexes to drop now and to
    // recreate after the load.
    const list = (table, type) =>
      db
        .prepare(
          `SELECT name, sql FROM sqlite_master WHERE type = ? AND tbl_name = ? AND sql IS NOT NULL ORDER BY rowid`,
        )
        .all(type, table);
    const tables = HELPER_TABLES.map((t) => list(t, 'table')[0].sql);
    const helperIndexes = HELPER_TABLES.flatMap((t) => list(t, 'index').map((i) => i.sql));
    const messageIndexes = list('messages', 'index');
    for (const { name } of messageIndexes) db.exec(`DROP INDEX ${quoteName(name)}`);
    log(`  dropped ${messageIndexes.map((i) => i.name).join(', ')} (recreated after the load)`);

    const accountRef = db.prepare('SELECT ref FROM account_refs WHERE id = ?').get(accountId).ref;
    const part = startPart({ file: partFile, accountRef, options, tables, indexes: helperIndexes });
    part.catch(() => {}); // awaited below; a failure there must not go unhandled meanwhile
    const sink = sqliteSink(db, accountRef, { messages: true, others: false });
    let nextLog = performance.now() + 5000;
    const gen = fill(db, options, sink, (g) => {
      if (performance.now() < nextLog) return;
      nextLog = performance.now() + 5000;
      log(`  ${g.produced.toLocaleString('en')} / ${g.shape.records.toLocaleString('en')} records`);
    });
    const cpuText = ({ generate, insert, commit }) =>
      `generating ${generate.toFixed(1)} s, inserting ${insert.toFixed(1)} s, commit ${commit.toFixed(1)} s`;
    log(
      `  main thread: ${sink.written.toLocaleString('en')} message records in ${lap()}: ${cpuText(gen.cpu)}`,
    );
    // The unique key took the records' random ids in ingest order, as the service's does; rebuilt, it is as
    // compact as VACUUM leaves it, as the generator's sorted load left it before.
    db.exec('REINDEX messages');
    log(`  unique key of messages rebuilt ${lap()}`);
    for (const { name, sql } of messageIndexes) {
      db.exec(sql);
      log(`  index ${name} ${lap()}`);
    }
    const helper = await part;
    log(
      `  helper thread: ${helper.events.toLocaleString('en')} events, contacts, identities and conversations in ` +
        `${helper.rowsSeconds.toFixed(1)} s, their indexes by ${helper.seconds.toFixed(1)} s (CPU ` +
        `${helper.cpu.total.toFixed(1)} s: ${cpuText(helper.cpu)}); waited ${lap()}`,
    );
    // Each table is empty here and has the same indexes as its copy: SQLite's transfer optimization copies
    // the b-tree cells as they are, indexes included.
    db.prepare('ATTACH DATABASE ? AS part').run(partFile);
    db.exec('BEGIN');
    for (const table of HELPER_TABLES) db.exec(`INSERT INTO ${table} SELECT * FROM part.${table}`);
    // The events in seq order, each with its record's ref: the primary key in order, the other indexes built
    // after.
    const eventIndexes = list('receipt_events', 'index');
    for (const { name } of eventIndexes) db.exec(`DROP INDEX ${quoteName(name)}`);
    db.exec(
      `INSERT INTO receipt_events (account_id, seq, id, message_ref, recorded_at, item)
       SELECT ${accountRef}, e.seq, e.id, m.ref, e.recorded_at, e.item
       FROM part.event_rows e
         JOIN messages m ON m.account_id = ${accountRef} AND m.id = e.message_id AND m.channel_user_id = e.recipient
       ORDER BY e.seq`,
    );
    for (const { sql } of eventIndexes) db.exec(sql);
    db.prepare('UPDATE accounts SET last_message_seq = ?, last_event_seq = ? WHERE id = ?').run(
      gen.lastSeq,
      gen.events,
      accountId,
    );
    db.exec('COMMIT');
    db.exec('DETACH DATABASE part');
    log(`  copied ${HELPER_TABLES.join(', ')} and receipt_events in ${lap()}`);
    // The review rollup, as migration 7 counts the records already there (the store keeps it on every write).
    db.exec(`BEGIN; ${rollupBackfill.sqlite}; COMMIT`);
    log(`  review rollup counted in ${lap()}`);
    const count = (table) =>
      db.prepare(`SELECT count(*) AS n FROM ${table} WHERE account_id = ?`).get(accountRef).n;
    if (count('messages') !== gen.produced || count('receipt_events') !== gen.events)
      throw new Error(`datagen: row counts differ from what was generated`);
    return { accountId, summary: gen.summary() };
  } finally {
    if (db.open) db.close();
    rmSync(partFile, { force: true });
  }
}

/** Back to what the store runs with: WAL, and nothing left in the log. Returns the file's size. */
function finishSqlite(databaseUrl) {
  const file = sqlitePath(databaseUrl);
  const db = new Database(file);
  try {
    const mode = db.pragma('journal_mode = WAL', { simple: true });
    if (mode !== 'wal') throw new Error(`datagen: journal_mode is ${mode}, not wal`);
  } finally {
    db.close();
  }
  return statSync(file).size;
}

// ---------------------------------------------------------------------------------------------------------
// Consistency checks through the server's own store (either engine).

/**
 * Reopens the database with openStore and checks, against what was written: /dlr recipients and their state for
 * `sample` message ids (and that missing ids are missing), that the event recorded last for each of them is
 * its current /dlr item, the receipt feed's order and ends, a full walk of the long history in pages of 100,
 * a campaign page and a few conversation pages. Throws on the first mismatch.
 */
export async function verify(databaseUrl, accountId, summary, { sample = 500, log = console.error } = {}) {
  const store = openStore(loadConfig({ DATABASE_URL: databaseUrl, WAYBILL_PEPPER: BENCH.pepper }));
  const fail = (what) => {
    throw new Error(`datagen check failed: ${what}`);
  };
  try {
    const account = await store.getAccountByKey(BENCH.key);
    if (account?.id !== accountId) fail(`bench account ${BENCH.key} is not ${accountId}`);

    const picks = summary.dlrSamples;
    const every = Math.max(1, Math.floor(picks.length / sample));
    let checked = 0;
    for (let k = 0; k < picks.length; k += every) {
      const expected = picks[k];
      const found = await store.findDlr(accountId, expected.id);
      const label = `findDlr(${expected.id})`;
      if (found.length !== expected.recipients.length)
        fail(`${label}: ${found.length} recipients, expected ${expected.recipients.length}`);
      for (let r = 0; r < found.length; r++) {
        const got = found[r];
        const want = expected.recipients[r];
        const sms = got.sms;
        if (got.channelUserId !== want.to)
          fail(`${label}[${r}]: to ${got.channelUserId}, expected ${want.to}`);
        if (!sms) fail(`${label}[${r}]: no SMS state`);
        if (sms.status !== want.status || sms.network !== want.network || sms.price !== want.price)
          fail(`${label}[${r}]: ${JSON.stringify(sms)} vs ${JSON.stringify(want)}`);
        if (sms.counts !== want.counts) fail(`${label}[${r}]: counts ${sms.counts}`);
        const receipt = sms.receipt;
        if ((receipt === null) !== (want.receipt === null))
          fail(`${label}[${r}]: receipt ${JSON.stringify(receipt)}`);
        if (receipt) {
          if (
            receipt.drStatuscode !== want.receipt.drStatuscode ||
            receipt.drErrcode !== want.receipt.drErrcode ||
            receipt.drTime.getTime() !== want.receipt.drTime
          )
            fail(`${label}[${r}]: receipt ${JSON.stringify(receipt)} vs ${JSON.stringify(want.receipt)}`);
          const [event] = await store.listReceiptEvents(accountId, want.lastEvent - 1, 1);
          if (event?.seq !== want.lastEvent) fail(`event ${want.lastEvent} missing`);
          const item = JSON.stringify(toDlrItem(got));
          if (JSON.stringify(event.item) !== item)
            fail(`event ${event.seq} item ${JSON.stringify(event.item)} is not the /dlr item ${item}`);
        }
      }
      checked++;
    }
    for (const id of summary.missingIds) {
      if ((await store.findDlr(accountId, id)).length > 0) fail(`missing id ${id} exists`);
    }
    log(
      `  /dlr: ${checked} sampled message ids match, the ${summary.missingIds.length} missing ids are missing`,
    );

    // The feed: 1, 2, 3… with no gap, from the start, the middle and the end.
    const events = summary.counts.events;
    for (const after of [0, Math.floor(events / 2), Math.max(0, events - 500)]) {
      const page = await store.listReceiptEvents(accountId, after, 1000);
      const want = Math.min(1000, events - after);
      if (page.length !== want)
        fail(`listReceiptEvents(after ${after}): ${page.length} events, expected ${want}`);
      page.forEach((e, i) => {
        if (e.seq !== after + 1 + i) fail(`listReceiptEvents(after ${after}): seq ${e.seq} at ${i}`);
        if (i > 0 && e.recordedAt < page[i - 1].recordedAt)
          fail(`event ${e.seq} recorded before ${e.seq - 1}`);
      });
    }
    if ((await store.listReceiptEvents(accountId, events, 10)).length !== 0) fail(`events after ${events}`);
    log(`  /receipts: ${events.toLocaleString('en')} events in seq order with no gap`);

    // The long history, every page of 100, newest first.
    const { channel, channelUserId, messages } = summary.long;
    const contactId = await store.resolveContact(accountId, channel, channelUserId);
    if (!contactId) fail(`no contact for the long history ${channel} ${channelUserId}`);
    let before;
    let pages = 0;
    let seen = 0;
    let last;
    for (;;) {
      const page = await store.listHistory(accountId, {
        contactId,
        channel,
        limit: 100,
        ...(before ? { before } : {}),
      });
      if (page.length === 0) break;
      pages++;
      for (const m of page) {
        if (m.contactId !== contactId || m.channel !== channel || m.channelUserId !== channelUserId)
          fail(`long history page ${pages}: record ${m.id} of another conversation`);
        if (last && comparePositions(m, last) >= 0)
          fail(`long history page ${pages}: out of order at ${m.id}`);
        last = m;
      }
      seen += page.length;
      before = last;
      if (page.length < 100) break;
    }
    if (seen !== messages) fail(`long history holds ${seen} records, expected ${messages}`);
    if (pages < Math.floor(messages / 100)) fail(`long history: only ${pages} pages of 100`);
    log(`  long history: ${pages} pages of ≤100, ${seen.toLocaleString('en')} records, newest first`);

    const campaign = await store.listHistory(accountId, { campaignId: summary.campaign.id, limit: 100 });
    if (
      campaign.length !== Math.min(100, summary.campaign.messages) ||
      campaign.some((m) => m.campaignId !== summary.campaign.id)
    )
      fail(`campaign page: ${campaign.length} records`);
    for (const c of summary.conversations.slice(0, 50)) {
      const owner = await store.resolveContact(accountId, c.channel, c.channelUserId);
      if (!owner) fail(`no contact for ${c.channel} ${c.channelUserId}`);
      const page = await store.listHistory(accountId, { contactId: owner, channel: c.channel, limit: 20 });
      if (page.length === 0 || page.some((m) => m.contactId !== owner || m.channel !== c.channel))
        fail(`history of ${c.channel} ${c.channelUserId}: ${page.length} records`);
    }
    log('  campaign page and 50 sampled conversation pages: ok');

    // The store's own planner agrees with the links written: re-sending sampled recipients (dry run) with
    // their contact id passes, and so does a receipt for each.
    const resend = [];
    const receipts = [];
    for (const expected of picks.slice(0, 50)) {
      for (const r of expected.recipients) {
        resend.push({ id: expected.id, channel: 'SMS', channelUserId: r.to, contactId: r.contactId });
        receipts.push({
          messageId: expected.id,
          to: r.to,
          drStatuscode: 'delivered',
          drErrcode: '0',
          drTime: new Date(summary.endMs),
        });
      }
    }
    const now = new Date(summary.endMs);
    const m = await store.ingestMessages(accountId, resend, now, { dryRun: true });
    if (!m.ok) fail(`dry-run re-send refused: ${JSON.stringify(m.errors.slice(0, 3))}`);
    const r = await store.ingestReceipts(accountId, receipts, now, { dryRun: true });
    if (!r.ok || r.value.unknown.length > 0) fail(`dry-run receipts: ${JSON.stringify(r)}`);
    // …and is not blind: the same recipient named with another recipient's contact is refused.
    const other = resend.find((item) => item.contactId !== resend[0].contactId);
    if (other) {
      const wrong = await store.ingestMessages(
        accountId,
        [{ ...resend[0], contactId: other.contactId }],
        now,
        {
          dryRun: true,
        },
      );
      if (wrong.ok) fail('a re-send naming another contact was accepted');
    }
    log(`  dry-run ingest of ${resend.length} sampled recipients and their receipts: accepted`);
  } finally {
    await store.close();
  }
}

// ---------------------------------------------------------------------------------------------------------

/**
 * Generates the dataset into `databaseUrl` (sqlite:<path> or postgres://…), checks it and writes the manifest.
 * Returns the manifest.
 */
export async function generate({
  databaseUrl,
  recipients,
  seed = 42,
  log = console.error,
  force = false,
  longMessages = 100_000,
  end,
  days = 90,
  verifySample = 500,
}) {
  if (!databaseUrl) throw new Error('databaseUrl is required');
  if (!Number.isSafeInteger(seed)) throw new Error(`seed must be an integer, not ${seed}`);
  const isSqlite = databaseUrl.startsWith('sqlite:');
  const url = isSqlite ? `sqlite:${sqlitePath(databaseUrl)}` : databaseUrl;
  if (isSqlite && force) {
    const file = sqlitePath(databaseUrl);
    for (const f of [file, `${file}-wal`, `${file}-shm`, `${file}.manifest.json`]) rmSync(f, { force: true });
  }
  const options = { recipients, seed, longMessages, end: end ?? DEFAULT_END, days };
  const shape = datasetShape(options);
  log(
    `datagen: ${shape.records.toLocaleString('en')} records (${shape.recipients.toLocaleString('en')} SMS ` +
      `recipients, ${shape.long.toLocaleString('en')} in the long history) into ${url}, seed ${seed}`,
  );
  const started = performance.now();
  const cpu = process.cpuUsage();
  let loaded;
  if (isSqlite) {
    loaded = await loadSqlite(options, url, log);
    loaded.bytes = finishSqlite(url);
  } else {
    const { loadPostgres } = await import('./datagen-pg.mjs');
    loaded = await loadPostgres(options, url, {
      log,
      force,
      prepareDatabase,
      createDataset,
      periodOf,
      rollupBackfill: rollupBackfill.postgres,
    });
  }
  const seconds = (performance.now() - started) / 1000;
  const cpuSeconds = (({ user, system }) => (user + system) / 1e6)(process.cpuUsage(cpu));
  const { summary } = loaded;
  const { counts } = summary;
  log(
    `  loaded ${counts.records.toLocaleString('en')} records and ${counts.events.toLocaleString('en')} events in ` +
      `${seconds.toFixed(1)} s: ${Math.round(counts.records / seconds).toLocaleString('en')} records/s, ` +
      `${(loaded.bytes / 1e6).toFixed(0)} MB (process CPU ${cpuSeconds.toFixed(1)} s, both threads)`,
  );
  const checkStarted = performance.now();
  await verify(url, loaded.accountId, summary, { sample: verifySample, log });
  log(`  checks passed in ${((performance.now() - checkStarted) / 1000).toFixed(1)} s`);

  const manifest = {
    version: DATASET_VERSION,
    databaseUrl: url,
    pepper: BENCH.pepper,
    key: BENCH.key,
    secret: BENCH.secret,
    recipients: shape.recipients,
    // The end of the generated period: the review scenario reads the 30 days before it.
    end: options.end,
    records: counts.records,
    events: counts.events,
    dlrIds: summary.dlrSamples.map((s) => s.id),
    missingIds: summary.missingIds,
    long: summary.long,
    campaign: summary.campaign,
    conversations: summary.conversations,
    generation: {
      seconds: Math.round(seconds * 1000) / 1000,
      recordsPerSecond: Math.round(counts.records / seconds),
      bytes: loaded.bytes,
    },
  };
  const manifestPath = manifestPathFor(url);
  mkdirSync(dirname(manifestPath), { recursive: true });
  writeFileSync(manifestPath, `${JSON.stringify(manifest)}\n`);
  log(`  manifest: ${manifestPath}`);
  return manifest;
}

if (!isMainThread && workerData?.datagenPart) {
  // The helper thread of loadSqlite.
  try {
    parentPort.postMessage({ ok: true, value: writePart(workerData.datagenPart) });
  } catch (error) {
    parentPort.postMessage({ ok: false, error: String(error?.stack ?? error) });
  }
}
