#!/usr/bin/env node
// The ingest scenario's lean store-only reference (issue 19): what SQLite itself costs for the rows the scenario
// writes, with nothing else done. The same records as the scenario's (ingest.mjs ingestWorkload, same seed), as
// objects (no HTTP, no JSON, no validation, no planner), written with better-sqlite3 into a fresh copy of the
// dataset in the same durable way as Waybill: WAL, `synchronous = FULL`, one IMMEDIATE transaction per batch of
// 1,000, and Waybill's own checkpointer thread (from the build).
//
// Per message: its identity read (and, for a new number, its contact, identity and conversation written), its
// conversation read, its record's key read, its row inserted; per batch the account's sequence and the
// rollup's rows. Per receipt: its record read and its SMS columns updated, its event and its delivery inserted;
// per batch the account's event positions, the recipients' older deliveries superseded and the rollup.
// test/bench/lean-ingest.test.ts holds it to the rows Waybill writes for the same records. Waybill must also
// apply precedence, look for parked receipts, keep the stored item and answer, so a goal beyond this
// reference is beyond what SQLite's writes of these rows allow on one core, whatever the service does.
//
// `npm run bench -- ingest` runs it in each round beside the builds (pinned to the server's core) and prints
// Waybill's share of it. A benchmark process only: the server never imports it.
//
//   node bench/lib/lean-ingest.mjs <sqlite file> <seed> <records>   → one JSON line: { messages, receipts }
//
// Two knobs for what-ifs (docs/benchmarks.md, "Seventeenth pass"), off in the scenario:
//   LEAN_INGEST_COMMIT=<n>      n batches in each transaction instead of one (a group commit's effect)
//   LEAN_INGEST_WITHOUT=<index> that index dropped from the copy before the run
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import { v7 } from 'uuid';
import { ingestWorkload, SETTLE_MS } from './ingest.mjs';
import { serverDist } from './paths.mjs';

const [file, seedArg, recordsArg] = process.argv.slice(2);
if (!file || !seedArg || !recordsArg) {
  console.error('usage: lean-ingest.mjs <sqlite file> <seed> <records>');
  process.exit(2);
}

// Waits as Waybill's store does for the write lock (a RESTART checkpoint holds it while it copies).
const db = new Database(file, { fileMustExist: true, timeout: 30_000 });
const BATCHES_PER_COMMIT = Number(process.env.LEAN_INGEST_COMMIT ?? 1);
const without = process.env.LEAN_INGEST_WITHOUT;
if (!Number.isInteger(BATCHES_PER_COMMIT) || BATCHES_PER_COMMIT < 1) {
  console.error('LEAN_INGEST_COMMIT is a number of batches, 1 or more');
  process.exit(2);
}
if (without !== undefined) {
  if (!/^[a-z_]+$/.test(without)) {
    console.error(`LEAN_INGEST_WITHOUT names an index, not ${without}`);
    process.exit(2);
  }
  db.exec(`DROP INDEX ${without}`);
}
db.pragma('journal_mode = WAL');
db.pragma('synchronous = FULL');
db.pragma('wal_autocheckpoint = 0');
db.pragma('foreign_keys = ON');
db.pragma(`mmap_size = ${256 * 2 ** 20}`);
db.pragma(`cache_size = ${-256 * 1024}`);

// Waybill's own checkpointer (store/sqlite/checkpointer.ts, from the build), with the server's default bound on
// the log: its thread, its policy, and the wait it asks of writes while a RESTART wants the write lock.
const { startCheckpointer } = await import(
  pathToFileURL(join(serverDist, 'store/sqlite/checkpointer.js')).href
);
const checkpointer = startCheckpointer({ path: file, walMaxMb: 512, onReport: () => {} });

const sql = {
  takeMessageSeqs: db
    .prepare(
      'UPDATE accounts SET last_message_seq = last_message_seq + ? WHERE id = ? RETURNING last_message_seq',
    )
    .pluck(),
  takeEventSeqs: db
    .prepare('UPDATE accounts SET last_event_seq = last_event_seq + ? WHERE id = ? RETURNING last_event_seq')
    .pluck(),
  identity: db
    .prepare('SELECT contact_id FROM identities WHERE account_id = ? AND channel = ? AND channel_user_id = ?')
    .pluck(),
  conversation: db
    .prepare('SELECT ref FROM conversations WHERE account_id = ? AND contact_id = ? AND channel = ?')
    .pluck(),
  insertContact: db.prepare('INSERT INTO contacts (account_id, id) VALUES (?, ?)'),
  insertIdentity: db.prepare(
    'INSERT INTO identities (account_id, channel, channel_user_id, contact_id) VALUES (?, ?, ?, ?)',
  ),
  insertConversation: db.prepare(
    'INSERT INTO conversations (account_id, contact_id, channel, id) VALUES (?, ?, ?, ?)',
  ),
  record: db.prepare(
    `SELECT ref, sms_status, network, dr_statuscode, dr_errcode, created_at FROM messages
     WHERE account_id = ? AND id = ? AND channel_user_id = ?`,
  ),
  insertMessage: db.prepare(
    `INSERT INTO messages (account_id, id, channel_user_id, seq, channel, direction, conversation_ref,
       campaign_id, text, content, status, sms_status, network, price, counts, dr_statuscode, dr_errcode, dr_time,
       created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?, NULL, ?, ?, ?, ?, ?, NULL, NULL, NULL, ?)`,
  ),
  updateSms: db.prepare(
    'UPDATE messages SET network = ?, dr_statuscode = ?, dr_errcode = ?, dr_time = ? WHERE ref = ?',
  ),
  insertEvent: db.prepare(
    `INSERT INTO receipt_events (account_id, seq, id, message_ref, recorded_at, item)
     VALUES (?, ?, ?, ?, ?, NULL)`,
  ),
  insertDelivery: db.prepare(
    `INSERT INTO deliveries (account_id, seq, id, message_ref, state, created_at, next_attempt_at)
     VALUES (?, ?, ?, ?, 'pending', ?, ?)`,
  ),
  supersede: db.prepare(
    `UPDATE deliveries INDEXED BY deliveries_record SET state = 'superseded', next_attempt_at = NULL
     WHERE account_id = ? AND message_ref IN (SELECT value FROM json_each(?)) AND state = 'pending'`,
  ),
  count: db.prepare(
    `INSERT INTO review_counts (account_id, day, campaign_id, network, state, errcode, n)
     VALUES (?, ?, '', ?, ?, ?, ?) ON CONFLICT DO UPDATE SET n = n + excluded.n`,
  ),
  latency: db.prepare(
    `INSERT INTO review_latency (account_id, day, campaign_id, bucket, n)
     VALUES (?, ?, '', ?, ?) ON CONFLICT DO UPDATE SET n = n + excluded.n`,
  ),
};

const DAY_MS = 86_400_000;
const bump = (map, key, by = 1) => map.set(key, (map.get(key) ?? 0) + by);

// A fresh account, as the scenario makes one through the admin API: every number is new to it at first.
const accountId = randomUUID();
db.prepare(
  `INSERT INTO accounts (id, name, key, secret_hash, callback_secret, ip_whitelist, dlr_query_enabled, balance,
     credit_limit, callback_url, created_at)
   SELECT ?, 'bench-ingest-lean', ?, secret_hash, callback_secret, '[]', 1, 0, 0,
     'https://callbacks.example.com/waybill', ? FROM accounts LIMIT 1`,
).run(accountId, `lean-${accountId}`, Date.now());
const account = db.prepare('SELECT ref FROM account_refs WHERE id = ?').pluck().get(accountId);

// Contacts, conversations and events get ids as Waybill mints them, in creation order (domain/ids.ts; an
// event's is evt_ and a ULID), so that their index entries append as Waybill's do.
function writeMessages(items) {
  let seq = sql.takeMessageSeqs.get(items.length, accountId) - items.length;
  const counts = new Map();
  for (const item of items) {
    const channel = item.channel;
    const to = item.channelUserId;
    let contact = sql.identity.get(account, channel, to);
    let conversation;
    if (contact === undefined) {
      contact = v7();
      sql.insertContact.run(account, contact);
      sql.insertIdentity.run(account, channel, to, contact);
    } else {
      conversation = sql.conversation.get(account, contact, channel);
    }
    conversation ??= Number(sql.insertConversation.run(account, contact, channel, v7()).lastInsertRowid);
    sql.record.get(account, item.id, to);
    const outboundSms = channel === 'SMS' && item.direction !== 'inbound';
    const createdAt = Date.parse(item.createdAt);
    sql.insertMessage.run(
      account,
      item.id,
      to,
      ++seq,
      channel,
      item.direction ?? 'outbound',
      conversation,
      item.text ?? null,
      item.status ?? null,
      outboundSms ? '0' : null,
      item.sms?.network ?? null,
      item.sms?.price ?? null,
      item.sms?.counts ?? null,
      createdAt,
    );
    // The rollup counts each record in its receipt's state, '' while it has none (domain/rollup.ts).
    if (outboundSms) bump(counts, `${Math.floor(createdAt / DAY_MS)}\t${item.sms.network}\t\t`);
  }
  writeCounts(counts);
}

function writeReceipts(receipts, now) {
  let seq = sql.takeEventSeqs.get(receipts.length, accountId) - receipts.length;
  const records = receipts.map((r) => sql.record.get(account, r.messageId, r.to));
  sql.supersede.run(account, JSON.stringify(records.map((r) => r.ref)));
  const counts = new Map();
  const latency = new Map();
  for (const [i, receipt] of receipts.entries()) {
    const record = records[i];
    const drTime = Date.parse(receipt.drTime);
    sql.updateSms.run(receipt.network, receipt.drStatuscode, receipt.drErrcode, drTime, record.ref);
    const id = `evt_${v7().replaceAll('-', '')}`;
    sql.insertEvent.run(account, ++seq, id, record.ref, now);
    sql.insertDelivery.run(account, seq, id, record.ref, now, now);
    const day = Math.floor(record.created_at / DAY_MS);
    // Out of the record's state before (its network then), into the receipt's.
    bump(counts, `${day}\t${record.network}\t${record.dr_statuscode ?? ''}\t${record.dr_errcode ?? ''}`, -1);
    bump(counts, `${day}\t${receipt.network}\t${receipt.drStatuscode}\t${receipt.drErrcode}`);
    // Only a final receipt counts in the latency histogram; the workload's one other code is 'accepted'. The
    // buckets are not Waybill's (domain/rollup.ts), but as few: a batch upserts about as many rows.
    if (receipt.drStatuscode !== 'accepted')
      bump(
        latency,
        `${day}\t${Math.min(20, Math.floor(Math.log2(1 + (drTime - record.created_at) / 1000)))}`,
      );
  }
  writeCounts(counts);
  for (const [key, n] of latency) {
    const [day, bucket] = key.split('\t');
    sql.latency.run(account, Number(day), Number(bucket), n);
  }
}

function writeCounts(counts) {
  for (const [key, n] of counts) {
    const [day, network, state, errcode] = key.split('\t');
    sql.count.run(account, Number(day), network, state, errcode, n);
  }
}

const cpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

/**
 * Each batch in its own IMMEDIATE transaction, as Waybill commits a batch (or LEAN_INGEST_COMMIT of them in
 * one); CPU counted as ingest.mjs counts it.
 */
async function phase(batches, write) {
  const transaction = db.transaction((group, now) => {
    for (const batch of group) write(batch, now);
  }).immediate;
  const records = batches.reduce((n, b) => n + b.length, 0);
  const cpu0 = cpuMs();
  const started = performance.now();
  for (let i = 0; i < batches.length; i += BATCHES_PER_COMMIT) {
    await checkpointer.writable(30_000);
    transaction(batches.slice(i, i + BATCHES_PER_COMMIT), Date.now());
  }
  const seconds = (performance.now() - started) / 1000;
  const answered = cpuMs();
  await sleep(SETTLE_MS);
  return {
    records,
    seconds,
    recordsPerSecond: records / seconds,
    cpuMsPer1000: ((cpuMs() - cpu0) / records) * 1000,
    answeredCpuMsPer1000: ((answered - cpu0) / records) * 1000,
  };
}

const work = ingestWorkload(Number(seedArg), Number(recordsArg));
await phase(work.warm.messages, writeMessages);
await phase(work.warm.receipts, writeReceipts);
const messages = await phase(work.measured.messages, writeMessages);
const receipts = await phase(work.measured.receipts, writeReceipts);
await checkpointer.stop();
db.close();
process.stdout.write(`${JSON.stringify({ messages, receipts })}\n`);
