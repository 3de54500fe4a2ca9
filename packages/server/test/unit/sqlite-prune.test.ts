import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, expect, it } from 'vitest';
import { openSqliteStore } from '../../src/store/sqlite/store.js';
import {
  at,
  claimRequest,
  ingest,
  ingestReceipts,
  newAccount,
  receipt,
  sms,
} from '../conformance/fixtures.js';

/**
 * Retention on SQLite finds expired events through their records, and a delivery and its attempts through their
 * event (migration 11: none of them carries its record's time). The store's reads cannot see a row left behind,
 * so this reads the tables themselves.
 */

const dir = mkdtempSync(join(tmpdir(), 'wb-prune-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('removes an expired record’s events, deliveries and attempt logs, and nothing of a newer record', async () => {
  const path = join(dir, 'prune.db');
  const store = openSqliteStore({ path, cacheMb: 8 });
  try {
    const a = (await store.createAccount(newAccount({ callbackUrl: 'https://hooks.example/dlr' }))).id;
    const TO = '447700900123';
    // Two records of one conversation, on either side of the cutoff, each with two receipts.
    await ingest(store, a, [
      sms('old', TO, { createdAt: at(-86_400 * 30) }),
      sms('new', TO, { createdAt: at(0) }),
    ]);
    await ingestReceipts(store, a, [receipt('old', 'accepted', at(1)), receipt('new', 'accepted', at(1))]);
    await ingestReceipts(store, a, [receipt('old', 'delivered', at(2)), receipt('new', 'delivered', at(2))]);
    // One attempt on every delivery still pending.
    const claims = await store.claimDeliveries(claimRequest({ limit: 10, perAccount: 10 }));
    expect(claims.map((c) => (JSON.parse(c.body) as { messageid: string }).messageid).sort()).toEqual([
      'new',
      'old',
    ]);
    await store.finishAttempts(
      claims.map((claim) => ({
        claim,
        outcome: {
          attempt: { at: at(11), httpStatus: 200, error: null, durationMs: 5 },
          next: { state: 'delivered' as const, at: null },
        },
      })),
    );

    expect(await store.prune(at(-86_400))).toBe(1);

    const db = new Database(path, { readonly: true });
    try {
      const ids = (sql: string) => db.prepare(sql).pluck().all();
      expect(ids('SELECT id FROM messages')).toEqual(['new']);
      const newRef = db.prepare("SELECT ref FROM messages WHERE id = 'new'").pluck().get();
      expect(ids('SELECT DISTINCT message_ref FROM receipt_events')).toEqual([newRef]);
      expect(ids('SELECT count(*) FROM receipt_events')).toEqual([2]);
      expect(ids('SELECT DISTINCT message_ref FROM deliveries')).toEqual([newRef]);
      expect(ids('SELECT count(*) FROM deliveries')).toEqual([2]);
      // Every attempt left belongs to a delivery left, and the new record's is there.
      expect(ids('SELECT count(*) FROM delivery_attempts')).toEqual([1]);
      expect(
        ids(
          'SELECT count(*) FROM delivery_attempts t WHERE NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.account_id = t.account_id AND d.seq = t.seq)',
        ),
      ).toEqual([0]);
    } finally {
      db.close();
    }
  } finally {
    await store.close();
  }
});
