#!/usr/bin/env node
// The disk a callback account's recipients take on SQLite, deliveries included: the generated datasets' account
// has no callback URL, so their figure holds no deliveries. Writes --recipients SMS recipients (each to its own
// number) and one final receipt each through a build's own store, in batches of 1,000, on an account with a
// callback URL and the relay not running: every event queues a delivery, still pending. Prints the bytes per
// recipient of each table and index from `dbstat`, and of the whole file.
//
//   node bench/delivery-bytes.mjs [--recipients 100000] [--server-dist packages/server/dist] [--keep]
//
// Two builds side by side: run it once with each --server-dist.
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { commandLine } from './lib/cli.mjs';
import { repoRoot, serverDist } from './lib/paths.mjs';

const { values: opts } = commandLine(import.meta.url, {
  recipients: '100000',
  'server-dist': serverDist,
  keep: false,
});
const recipients = Number(opts.recipients);
const { openSqliteStore } = await import(
  pathToFileURL(join(opts['server-dist'], 'store/sqlite/store.js')).href
);
const Database = createRequire(join(repoRoot, 'packages/server/package.json'))('better-sqlite3');

const dir = mkdtempSync(join(tmpdir(), 'wb-delivery-bytes-'));
const path = join(dir, 'deliveries.db');
const store = openSqliteStore({ path, cacheMb: 256 });
const now = new Date();
const account = await store.createAccount({
  id: randomUUID(),
  name: 'delivery-bytes',
  key: 'DELIVBYT',
  ipWhitelist: [],
  dlrQueryEnabled: true,
  balance: 0,
  creditLimit: 0,
  callbackUrl: 'https://hooks.example/dlr',
  callbackEnabled: true,
  createdAt: now,
  secretHash: randomBytes(32),
  callbackSecret: `whsec_${randomBytes(32).toString('base64')}`,
});
let written = 0;
while (written < recipients) {
  const items = [];
  for (let i = 0; i < 1000 && written < recipients; i++, written++) {
    items.push({
      id: randomUUID(),
      channel: 'SMS',
      channelUserId: String(447_000_000_000 + written),
      createdAt: now,
      sms: { status: '0', network: '23410', price: 0.035 },
    });
  }
  const receipts = items.map((m) => ({
    messageId: m.id,
    to: m.channelUserId,
    drStatuscode: 'delivered',
    drErrcode: '0',
    drTime: now,
  }));
  for (const result of [
    await store.ingestMessages(account.id, items, now),
    await store.ingestReceipts(account.id, receipts, now),
  ]) {
    if (!result.ok) throw new Error(`a batch was refused: ${JSON.stringify(result.errors)}`);
  }
}
await store.close();

const db = new Database(path, { readonly: true });
const rows = db
  .prepare(
    'SELECT name, sum(pgsize) AS bytes FROM dbstat GROUP BY name HAVING bytes > 4096 ORDER BY bytes DESC',
  )
  .all();
const deliveries = db.prepare('SELECT count(*) FROM deliveries').pluck().get();
db.close();
const perRecipient = (bytes) => (bytes / recipients).toFixed(1).padStart(7);
console.log(
  `${recipients.toLocaleString('en')} recipients, ${deliveries.toLocaleString('en')} deliveries pending`,
);
for (const { name, bytes } of rows) console.log(`${perRecipient(bytes)} B  ${name}`);
const deliveryBytes = rows.filter((r) => r.name.startsWith('deliver')).reduce((sum, r) => sum + r.bytes, 0);
console.log(`${perRecipient(deliveryBytes)} B  the deliveries and their indexes`);
console.log(
  `${perRecipient(statSync(path).size)} B  the whole file (${statSync(path).size.toLocaleString('en')} bytes)`,
);
if (opts.keep) console.log(`kept ${path}`);
else rmSync(dir, { recursive: true, force: true });
