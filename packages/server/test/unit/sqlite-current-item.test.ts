import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, expect, it } from 'vitest';
import { openSqliteStore } from '../../src/store/sqlite/store.js';
import { at, ingest, ingestReceipts, newAccount, receipt, sms } from '../conformance/fixtures.js';

/**
 * On SQLite an event whose item is its record's as the record stands stores none (store/sqlite/current-item.ts,
 * migration 12), and gets it back before the record changes. The conformance suite checks what every read
 * answers; this reads the table, since no read can tell a stored item from a rebuilt one.
 */

const dir = mkdtempSync(join(tmpdir(), 'wb-item-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('stores no item for an event that is its record’s current one, and the item as it stood before the record changes', async () => {
  const path = join(dir, 'items.db');
  const store = openSqliteStore({ path, cacheMb: 8 });
  const db = new Database(path, { readonly: true });
  const stored = () =>
    db.prepare<[], [number, string | null]>('SELECT seq, item FROM receipt_events ORDER BY seq').raw().all();
  try {
    const a = (await store.createAccount(newAccount())).id;
    const TO = '447700900123';
    await ingest(store, a, [sms('m-1', TO, { sms: { network: '23410', price: 0.05 } })]);
    // Two receipts in one batch: the first is not the record's item once the batch is written, the second is.
    await ingestReceipts(store, a, [receipt('m-1', 'accepted', at(1)), receipt('m-1', 'delivered', at(2))]);
    const accepted = '["0",0.05,1,"23410",0,"accepted","0","2026-11-22 10:00:01.000"]';
    const delivered = '["0",0.05,1,"23410",0,"delivered","0","2026-11-22 10:00:02.000"]';
    expect(stored()).toStrictEqual([
      [1, accepted],
      [2, null],
    ]);
    // A write that leaves the item as it is (the text) leaves the event without one.
    await ingest(store, a, [sms('m-1', TO, { text: 'edited', sms: { network: '23410', price: 0.05 } })]);
    expect(stored()[1]).toStrictEqual([2, null]);
    // A message write that changes the item gives the event the item it stood for.
    await ingest(store, a, [sms('m-1', TO, { sms: { network: '23410', price: 2 } })]);
    expect(stored()).toStrictEqual([
      [1, accepted],
      [2, delivered],
    ]);
    // So does a receipt: the new event is the record's item, the one before it keeps its own.
    await ingestReceipts(store, a, [receipt('m-1', 'failed', at(3))]);
    await ingestReceipts(store, a, [receipt('m-1', 'expired', at(4))]);
    expect(stored().slice(2)).toStrictEqual([
      [3, '["0",2,1,"23410",400,"failed","0","2026-11-22 10:00:03.000"]'],
      [4, null],
    ]);
  } finally {
    db.close();
    await store.close();
  }
});
