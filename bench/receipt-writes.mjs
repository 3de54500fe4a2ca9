#!/usr/bin/env node
// What a receipt batch's event and delivery rows cost SQLite, row by row, on a copy of a generated dataset: 1,000
// receipt events, each with a pending delivery, of the dataset's latest records, in one committed transaction,
// the median of --batches batches (process CPU). Written as the store writes them (each row with its account's
// and its record's refs bound as numbers), as the store wrote them before the thirteenth pass (each ref found by
// a search of account_refs, of the records' key and of the event in the same statement), with the due index across
// accounts that the fifteenth pass dropped, and with one index of the two tables dropped at a time, or every
// delivery index, or no delivery at all: what each part costs. The log is checkpointed between batches, outside
// the measured time, as the store's checkpointer thread does. Variants closer than about 2 ms may be noise: a
// second copy of one variant once read 2.3 ms apart from the first (docs/benchmarks.md, "Fifteenth pass").
//
//   node bench/receipt-writes.mjs [--database bench/.data/bench-200000.db] [--batches 30]
//
// The default dataset is the one `npm run bench` generates at 200,000 recipients (or `node bench/datagen.mjs
// --database-url sqlite:bench/.data/bench-200000.db --recipients 200000`).
//
// The SQL here is the two tables' own, not the store's statements: it measures the engine's share, not the
// store's code. Each variant writes its own copy of the file, so the dataset is never written.
import { copyFileSync, existsSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { commandLine } from './lib/cli.mjs';
import { repoRoot } from './lib/paths.mjs';

const { values: opts } = commandLine(import.meta.url, {
  database: join(repoRoot, 'bench/.data/bench-200000.db'),
  batches: '30',
});
const BATCHES = Number(opts.batches);
if (!existsSync(opts.database)) {
  console.error(`no dataset at ${opts.database}: generate one first (node bench/receipt-writes.mjs --help)`);
  process.exit(2);
}
const Database = createRequire(join(repoRoot, 'packages/server/package.json'))('better-sqlite3');
const DELIVERY_INDEXES = ['deliveries_id', 'deliveries_account_due', 'deliveries_record', 'deliveries_state'];
const refOf = (p) => `(SELECT ref FROM account_refs WHERE id = ${p})`;

const variants = [
  { name: 'refs bound (as the store writes)' },
  { name: 'refs searched (before the thirteenth pass)', searched: true },
  {
    name: 'with deliveries_due (before the fifteenth pass)',
    create: ["CREATE INDEX deliveries_due ON deliveries (next_attempt_at, seq) WHERE state = 'pending'"],
  },
  ...DELIVERY_INDEXES.map((index) => ({ name: `without ${index}`, drop: [index] })),
  { name: 'without receipt_events_message', drop: ['receipt_events_message'] },
  { name: 'without any delivery index', drop: DELIVERY_INDEXES },
  { name: 'events only, no delivery', noDelivery: true },
];

// Every variant on its own copy, all open at once, one batch of each in turn (the order turning each round): a
// machine that gets busier over the run favours none of them.
const copies = variants.map((_, i) => join(tmpdir(), `waybill-receipt-writes-${process.pid}-${i}.db`));
console.log(
  `ms of CPU per 1,000 events (each with its delivery), median of ${BATCHES} batches, ${opts.database}`,
);
try {
  const runs = variants.map((variant, i) => {
    copyFileSync(opts.database, copies[i]);
    const db = new Database(copies[i]);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.pragma('cache_size = -262144');
    // As SQLite migration 14 left it, whichever build wrote the dataset.
    db.exec('DROP INDEX IF EXISTS deliveries_due');
    for (const index of variant.drop ?? []) db.exec(`DROP INDEX ${index}`);
    for (const statement of variant.create ?? []) db.exec(statement);
    return { variant, db, batch: writer(db, variant), times: [] };
  });
  for (let b = 0; b < BATCHES; b++) {
    for (let k = 0; k < runs.length; k++) {
      const run = runs[(b + k) % runs.length];
      run.times.push(run.batch(b));
    }
  }
  for (const run of runs) {
    run.db.close();
    console.log(`${median(run.times).toFixed(2).padStart(7)}  ${run.variant.name}`);
  }
} finally {
  for (const copy of copies)
    for (const suffix of ['', '-wal', '-shm']) rmSync(copy + suffix, { force: true });
}

/** A function that writes batch `b` of 1,000 events (with their deliveries) and returns its ms of CPU. */
function writer(db, variant) {
  const account = db.prepare('SELECT ref, id FROM account_refs ORDER BY ref LIMIT 1').get();
  // The latest records, as receipts for what was just sent find them, in random order.
  const records = db
    .prepare('SELECT ref, id, channel_user_id FROM messages WHERE account_id = ? ORDER BY ref DESC LIMIT ?')
    .all(account.ref, BATCHES * 1000)
    .sort(() => Math.random() - 0.5);
  let seq =
    db.prepare('SELECT max(seq) AS s FROM receipt_events WHERE account_id = ?').get(account.ref).s ?? 0;
  const event = variant.searched
    ? db.prepare(`INSERT INTO receipt_events (account_id, seq, id, message_ref, recorded_at, item)
        VALUES (${refOf('?')}, ?, ?,
          (SELECT ref FROM messages WHERE account_id = ${refOf('?')} AND id = ? AND channel_user_id = ?), ?, ?)`)
    : db.prepare(`INSERT INTO receipt_events (account_id, seq, id, message_ref, recorded_at, item)
        VALUES (?, ?, ?, ?, ?, ?)`);
  const delivery = variant.searched
    ? db.prepare(`INSERT INTO deliveries (account_id, seq, id, message_ref, state, created_at, next_attempt_at)
        VALUES (${refOf('?')}, ?, ?,
          (SELECT message_ref FROM receipt_events WHERE account_id = ${refOf('?')} AND seq = ?), ?, ?, ?)`)
    : db.prepare(`INSERT INTO deliveries (account_id, seq, id, message_ref, state, created_at, next_attempt_at)
        VALUES (?, ?, ?, ?, ?, ?, ?)`);
  return (b) => {
    const batch = records.slice(b * 1000, b * 1000 + 1000);
    const now = Date.now();
    const started = process.cpuUsage();
    db.exec('BEGIN IMMEDIATE');
    for (const r of batch) {
      seq++;
      const id = `evt_${now.toString(36)}${seq.toString(36).padStart(17, '0')}`;
      if (variant.searched) {
        event.run(account.id, seq, id, account.id, r.id, r.channel_user_id, now, null);
        delivery.run(account.id, seq, id, account.id, seq, 'pending', now, now);
      } else {
        event.run(account.ref, seq, id, r.ref, now, null);
        if (!variant.noDelivery) delivery.run(account.ref, seq, id, r.ref, 'pending', now, now);
      }
    }
    db.exec('COMMIT');
    const used = process.cpuUsage(started);
    // The store's checkpointer does this on its own thread: a log that only grows makes every read of a page
    // search a longer log index, and later batches cost more.
    db.pragma('wal_checkpoint(TRUNCATE)');
    return (used.user + used.system) / 1000;
  };
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[sorted.length >> 1];
}
