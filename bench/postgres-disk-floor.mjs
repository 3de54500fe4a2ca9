#!/usr/bin/env node
// What a SQLite dataset's rows take on PostgreSQL in the leanest layout that still serves the contract's reads
// (issue 19, the disk goal of ≤ 400 bytes per recipient, event included): the floor a PostgreSQL layout of
// Waybill's own could reach, against what its layout takes today (`node bench/datagen.mjs --database-url
// postgres://…` prints that).
//
//   node bench/postgres-disk-floor.mjs --sqlite bench/.data/bench-200000.db \
//     --database-url postgres://postgres@127.0.0.1:5432/waybill_floor
//
// The layout: every key a number where Waybill's SQLite layout has one (account, record, conversation refs),
// fixed-width columns first (no alignment padding), text in the "C" collation, no fillfactor, each table loaded
// in one go and its indexes built after it (leaf pages 90% full, as CREATE INDEX leaves them; indexes that
// ingest writes at random places over time end emptier). Only the indexes the reads need:
// - a record by its key (/dlr, mode 1, ingest's merge): UNIQUE (account, id, channel_user_id);
// - a contact's history by conversation and time: (account, conversation, created_at);
// - a campaign's records (partial, on the ~2% that have one): (account, campaign_id, created_at);
// - the feed by position: the events' primary key (account, seq);
// - a record's timeline and its events at prune: (account, message, seq);
// - identities by number and by contact, conversations by contact, as the ingest planner reads them.
// Deliveries are left out (the dataset has none; the disk goal counts a recipient and its event), and so is
// every index the relay, prune or the console need beyond these: the floor is lower than any full layout.
//
// The database named by --database-url is dropped and made again. Prints bytes per recipient by relation.
import { readFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import pg from 'pg';
import { commandLine } from './lib/cli.mjs';

const { values: opts } = commandLine(
  import.meta.url,
  { sqlite: null, 'database-url': null, chunk: '20000' },
  { required: ['sqlite', 'database-url'] },
);
const CHUNK = Number(opts.chunk);
const target = new URL(opts['database-url']);
const name = target.pathname.slice(1);
if (!/^[a-z_][a-z0-9_]*$/.test(name))
  throw new Error(`--database-url must name a plain database, not ${name}`);

const sqlite = new Database(opts.sqlite, { readonly: true, fileMustExist: true });
const manifest = JSON.parse(readFileSync(`${opts.sqlite}.manifest.json`, 'utf8'));
const recipients = Number(manifest.recipients);

const admin = new URL(target);
admin.pathname = '/postgres';
const server = new pg.Client({ connectionString: admin.toString() });
await server.connect();
await server.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
await server.query(`CREATE DATABASE ${name}`);
await server.end();
const db = new pg.Client({ connectionString: target.toString() });
await db.connect();
const sizeOf = async () =>
  Number((await db.query('SELECT pg_database_size(current_database())::bigint AS b')).rows[0].b);
const empty = await sizeOf();

await db.query(`
  CREATE TABLE contacts (account integer NOT NULL, id uuid NOT NULL, PRIMARY KEY (account, id));
  CREATE TABLE identities (
    account integer NOT NULL, contact uuid NOT NULL, channel text COLLATE "C" NOT NULL,
    channel_user_id text COLLATE "C" NOT NULL);
  CREATE TABLE conversations (
    ref bigint NOT NULL PRIMARY KEY, account integer NOT NULL, contact uuid NOT NULL, id uuid NOT NULL,
    channel text COLLATE "C" NOT NULL);
  CREATE TABLE messages (
    ref bigint NOT NULL, seq bigint NOT NULL, created_at timestamptz NOT NULL, conversation bigint NOT NULL,
    dr_time timestamptz, account integer NOT NULL, counts integer, price real,
    id text COLLATE "C" NOT NULL, channel_user_id text COLLATE "C" NOT NULL, channel text COLLATE "C" NOT NULL,
    direction text COLLATE "C" NOT NULL, campaign_id text COLLATE "C", text text, content text, status text,
    sms_status text, network text, dr_statuscode text, dr_errcode text);
  CREATE TABLE receipt_events (
    seq bigint NOT NULL, message bigint NOT NULL, recorded_at timestamptz NOT NULL, account integer NOT NULL,
    id text COLLATE "C" NOT NULL, item text);
`);

/** Copies the rows of `select` in chunks, through one INSERT … SELECT FROM unnest(…) per chunk. */
async function copy(select, insert, columns) {
  let batch = columns.map(() => []);
  let rows = 0;
  const flush = async () => {
    if (batch[0].length === 0) return;
    await db.query(insert, batch);
    batch = columns.map(() => []);
  };
  for (const row of sqlite.prepare(select).raw().iterate()) {
    for (const [i, convert] of columns.entries()) batch[i].push(convert(row[i]));
    rows++;
    if (batch[0].length >= CHUNK) await flush();
  }
  await flush();
  return rows;
}
const same = (v) => v;
const time = (ms) => (ms === null ? null : new Date(ms).toISOString());
const text = (v) => (v === null ? null : String(v));

const started = performance.now();
await db.query('BEGIN');
await copy(
  'SELECT account_id, id FROM contacts',
  'INSERT INTO contacts SELECT * FROM unnest($1::integer[], $2::uuid[])',
  [same, same],
);
await copy(
  'SELECT account_id, contact_id, channel, channel_user_id FROM identities',
  'INSERT INTO identities SELECT * FROM unnest($1::integer[], $2::uuid[], $3::text[], $4::text[])',
  [same, same, same, same],
);
await copy(
  'SELECT ref, account_id, contact_id, id, channel FROM conversations',
  'INSERT INTO conversations SELECT * FROM unnest($1::bigint[], $2::integer[], $3::uuid[], $4::uuid[], $5::text[])',
  [same, same, same, same, same],
);
const records = await copy(
  `SELECT ref, seq, created_at, conversation_ref, dr_time, account_id, counts, price, id, channel_user_id, channel,
     direction, campaign_id, text, content, status, sms_status, network, dr_statuscode, dr_errcode
   FROM messages`,
  `INSERT INTO messages SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::timestamptz[], $4::bigint[],
     $5::timestamptz[], $6::integer[], $7::integer[], $8::real[], $9::text[], $10::text[], $11::text[], $12::text[],
     $13::text[], $14::text[], $15::text[], $16::text[], $17::text[], $18::text[], $19::text[], $20::text[])`,
  [
    same,
    same,
    time,
    same,
    time,
    same,
    same,
    same,
    same,
    same,
    same,
    same,
    same,
    same,
    same,
    same,
    text,
    same,
    same,
    same,
  ],
);
const events = await copy(
  'SELECT seq, message_ref, recorded_at, account_id, id, item FROM receipt_events',
  `INSERT INTO receipt_events SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::timestamptz[], $4::integer[],
     $5::text[], $6::text[])`,
  [same, same, time, same, same, same],
);
await db.query('COMMIT');
await db.query(`
  ALTER TABLE identities ADD PRIMARY KEY (account, channel, channel_user_id);
  CREATE UNIQUE INDEX identities_contact ON identities (account, contact, channel);
  CREATE UNIQUE INDEX conversations_contact ON conversations (account, contact, channel);
  CREATE UNIQUE INDEX messages_key ON messages (account, id, channel_user_id);
  CREATE INDEX messages_history ON messages (account, conversation, created_at);
  CREATE INDEX messages_campaign ON messages (account, campaign_id, created_at) WHERE campaign_id IS NOT NULL;
  ALTER TABLE receipt_events ADD PRIMARY KEY (account, seq);
  CREATE INDEX receipt_events_message ON receipt_events (account, message, seq);
`);
await db.query('VACUUM (ANALYZE)');

const { rows } = await db.query(
  `SELECT c.relname AS relation, c.relkind AS kind, pg_relation_size(c.oid)::bigint AS bytes
   FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
   WHERE n.nspname = 'public' AND c.relkind IN ('r', 'i', 't')
   ORDER BY pg_relation_size(c.oid) DESC`,
);
const toast = await db.query(
  `SELECT coalesce(sum(pg_relation_size(c.reltoastrelid)), 0)::bigint AS bytes FROM pg_class c
   JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.reltoastrelid <> 0`,
);
const fsm = await db.query(
  `SELECT coalesce(sum(pg_table_size(c.oid) - pg_relation_size(c.oid)), 0)::bigint AS bytes FROM pg_class c
   JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind = 'r'`,
);
const database = await sizeOf();
await db.end();

const per = (bytes) => Number(bytes) / recipients;
const total = rows.reduce((s, r) => s + Number(r.bytes), 0) + Number(fsm.rows[0].bytes);
console.log(
  `# ${opts.sqlite}: ${recipients.toLocaleString('en')} recipients, ${records.toLocaleString('en')} records, ` +
    `${events.toLocaleString('en')} events, loaded in ${((performance.now() - started) / 1000).toFixed(0)} s`,
);
console.log('| relation | MB | bytes per recipient |');
console.log('|---|---:|---:|');
for (const r of rows)
  console.log(
    `| \`${r.relation}\`${r.kind === 'i' ? ' (index)' : ''} | ${(Number(r.bytes) / 2 ** 20).toFixed(1)} | ${per(r.bytes).toFixed(0)} |`,
  );
console.log(
  `| free-space and visibility maps, TOAST (${Number(toast.rows[0].bytes)} bytes) | ${(Number(fsm.rows[0].bytes) / 2 ** 20).toFixed(1)} | ${per(fsm.rows[0].bytes).toFixed(0)} |`,
);
console.log(
  `| **the layout's floor, in all** | ${(total / 2 ** 20).toFixed(1)} | **${per(total).toFixed(0)}** |`,
);
console.log(
  `\npg_database_size: ${per(database).toFixed(0)} bytes per recipient; less the empty database's ` +
    `${(empty / 2 ** 20).toFixed(1)} MB: ${per(database - empty).toFixed(0)}`,
);
