import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../src/store/sqlite/store.js';
import { startHarness } from '../support/http.js';

/**
 * bench/lib/lean-ingest.mjs, the ingest scenario's lean store-only reference: its figure is compared with
 * Waybill's, so it must write the rows Waybill writes for the same records, no fewer. Both take one workload
 * (ingestWorkload, one seed): Waybill through the operator API into one SQLite file, the reference in its own
 * process into another; then each table holds as many rows of the account, in the same states, with the same
 * receipt columns on its records.
 */

interface Phase {
  records: number;
  recordsPerSecond: number;
  cpuMsPer1000: number;
}
interface Workload {
  warm: { messages: unknown[][]; receipts: unknown[][] };
  measured: { messages: unknown[][]; receipts: unknown[][] };
}

// Computed specifiers: the modules are plain JavaScript outside this package, loaded as they are.
const ingestUrl = new URL('../../../../bench/lib/ingest.mjs', import.meta.url).href;
const leanScript = new URL('../../../../bench/lib/lean-ingest.mjs', import.meta.url).pathname;
const { ingestWorkload } = (await import(ingestUrl)) as {
  ingestWorkload: (seed: number, count: number) => Workload;
};

const dir = mkdtempSync(join(tmpdir(), 'waybill-lean-ingest-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const SEED = 7;
const RECORDS = 2000;

const fileEngine = (path: string) => ({
  name: 'sqlite-file',
  async open() {
    const store = openSqliteStore({ path, cacheMb: 16 });
    await store.migrate();
    return store;
  },
});

/** What an account's ingest left in the file: row counts by table and state, and its records' receipt columns. */
function footprint(path: string, accountId: string) {
  const db = new Database(path, { readonly: true });
  try {
    const ref = db.prepare('SELECT ref FROM account_refs WHERE id = ?').pluck().get(accountId);
    const one = (sql: string) => db.prepare(sql).pluck().get(ref);
    const all = (sql: string) => db.prepare(sql).raw().all(ref);
    return {
      messages: all(
        `SELECT channel, direction, count(*), count(sms_status), count(dr_statuscode) FROM messages
         WHERE account_id = ? GROUP BY channel, direction ORDER BY channel, direction`,
      ),
      receiptColumns: all(
        `SELECT network, dr_statuscode, dr_errcode, count(*) FROM messages WHERE account_id = ?
         AND dr_time IS NOT NULL GROUP BY network, dr_statuscode, dr_errcode ORDER BY 1, 2, 3`,
      ),
      contacts: one('SELECT count(*) FROM contacts WHERE account_id = ?'),
      identities: one('SELECT count(*) FROM identities WHERE account_id = ?'),
      conversations: one('SELECT count(*) FROM conversations WHERE account_id = ?'),
      events: one('SELECT count(*) FROM receipt_events WHERE account_id = ?'),
      deliveries: all(
        'SELECT state, count(*) FROM deliveries WHERE account_id = ? GROUP BY state ORDER BY state',
      ),
      rollup: all(
        `SELECT state, errcode, sum(n) FROM review_counts WHERE account_id = ? GROUP BY state, errcode
         ORDER BY state, errcode`,
      ),
      latency: one('SELECT sum(n) FROM review_latency WHERE account_id = ?'),
    };
  } finally {
    db.close();
  }
}

describe('the ingest lean store-only reference (bench/lib/lean-ingest.mjs)', () => {
  it('writes the rows Waybill writes for the same records', async () => {
    const work = ingestWorkload(SEED, RECORDS);

    const waybillFile = join(dir, 'waybill.db');
    const harness = await startHarness(fileEngine(waybillFile));
    let waybillAccount: string;
    try {
      const account = await harness.createAccount({ callbackUrl: 'https://callbacks.example.com/waybill' });
      waybillAccount = account.id;
      for (const [path, batches] of [
        ['messages', work.warm.messages],
        ['receipts', work.warm.receipts],
        ['messages', work.measured.messages],
        ['receipts', work.measured.receipts],
      ] as const) {
        for (const batch of batches) {
          const res =
            path === 'messages'
              ? await harness.ingest(account.id, batch)
              : await harness.receipts(account.id, batch);
          expect(res.statusCode, res.body).toBe(200);
        }
      }
    } finally {
      await harness.close();
    }

    // The reference copies an existing account's credentials into its own; the file needs one.
    const leanFile = join(dir, 'lean.db');
    const setup = await startHarness(fileEngine(leanFile));
    try {
      await setup.createAccount();
    } finally {
      await setup.close();
    }
    const { stdout } = await promisify(execFile)(process.execPath, [
      leanScript,
      leanFile,
      String(SEED),
      String(RECORDS),
    ]);
    const phases = JSON.parse(stdout) as { messages: Phase; receipts: Phase };
    expect(phases.messages.records).toBe(RECORDS);
    expect(phases.receipts.records).toBe(work.measured.receipts.flat().length);
    const db = new Database(leanFile, { readonly: true });
    const leanAccount = db.prepare("SELECT id FROM accounts WHERE name = 'bench-ingest-lean'").pluck().get();
    db.close();

    const waybill = footprint(waybillFile, waybillAccount);
    const lean = footprint(leanFile, String(leanAccount));
    expect(waybill.events).toBeGreaterThan(RECORDS / 2);
    expect(lean).toEqual(waybill);
  }, 60_000);
});
