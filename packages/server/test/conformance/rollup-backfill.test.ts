import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../src/store/sqlite/store.js';
import type { Store } from '../../src/store/store.js';
import { dropSchema, freshSchema, openStore, POSTGRES_URL, sql } from '../postgres/harness.js';
import { at, NOW, newAccount, receipt, sms } from './fixtures.js';

/**
 * Migration 7 counts the records already there: a store's rollup, dropped and made again by the migration from
 * its records alone, is what ingest had kept it at (recipients moved by receipts, final and not, parked receipts
 * applied on arrival, several days, campaigns and networks).
 */

const EVERY_DAY = { from: new Date(0), to: at(30 * 86_400) };

async function fill(store: Store): Promise<string> {
  const { id } = await store.createAccount(newAccount());
  await store.ingestReceipts(id, [receipt('early', 'delivered', at(90))], NOW);
  await store.ingestMessages(
    id,
    [
      sms('a', '447700900001', { campaignId: 'spring', sms: { status: '0', network: '23415' } }),
      sms('a', '447700900002', { campaignId: 'spring', sms: { status: '0', network: '310260' } }),
      sms('b', '447700900001', { createdAt: at(-86_400), sms: { status: '0' } }),
      sms('c', '447700900003', { createdAt: at(-2 * 86_400), sms: { status: '400', network: '23415' } }),
      sms('early', '447700900001', { campaignId: 'autumn', sms: { status: '0', network: '23415' } }),
    ],
    NOW,
  );
  await store.ingestReceipts(
    id,
    [
      receipt('a', 'accepted', at(5), { to: '447700900001' }),
      receipt('a', 'delivered', at(40), { to: '447700900001' }),
      receipt('a', 'failed', at(4_000), { to: '447700900002', drErrcode: '3' }),
      receipt('b', 'accepted', at(-80_000)),
    ],
    NOW,
  );
  return id;
}

async function summaries(store: Store, id: string) {
  return {
    all: await store.reviewSummary(id, EVERY_DAY),
    spring: await store.reviewSummary(id, { ...EVERY_DAY, campaignId: 'spring' }),
  };
}

describe('review rollup backfill (sqlite)', () => {
  it('counts the records already there as ingest had counted them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'waybill-rollup-'));
    const path = join(dir, 'db.sqlite');
    try {
      let store = openSqliteStore({ path, cacheMb: 16 });
      await store.migrate();
      const id = await fill(store);
      const kept = await summaries(store, id);
      // a and early to 447700900001 share a key (same day, network, state and errcode).
      expect(kept.all.counts.length).toBe(4);
      await store.close();
      const db = new Database(path);
      db.exec(
        'DROP TABLE review_counts; DROP TABLE review_latency; DELETE FROM schema_migrations WHERE version = 7',
      );
      db.close();
      store = openSqliteStore({ path, cacheMb: 16 });
      expect(await store.migrate()).toEqual([{ version: 7, name: 'review rollup' }]);
      expect(await summaries(store, id)).toStrictEqual(kept);
      await store.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe.skipIf(!POSTGRES_URL)('review rollup backfill (postgres)', () => {
  it('counts the records already there as ingest had counted them', async () => {
    const schema = freshSchema();
    let store = openStore(schema);
    try {
      await store.migrate();
      const id = await fill(store);
      const kept = await summaries(store, id);
      // a and early to 447700900001 share a key (same day, network, state and errcode).
      expect(kept.all.counts.length).toBe(4);
      await sql(schema, 'DROP TABLE review_counts');
      await sql(schema, 'DROP TABLE review_latency');
      await sql(schema, 'DELETE FROM schema_migrations WHERE version = 7');
      await store.close();
      store = openStore(schema);
      expect(await store.migrate()).toEqual([{ version: 7, name: 'review rollup' }]);
      const again = await summaries(store, id);
      const byKey = <T>(rows: T[]) =>
        [...rows].sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1));
      expect(byKey(again.all.counts)).toStrictEqual(byKey(kept.all.counts));
      expect(byKey(again.all.latency)).toStrictEqual(byKey(kept.all.latency));
      expect(byKey(again.spring.counts)).toStrictEqual(byKey(kept.spring.counts));
    } finally {
      await store.close();
      await dropSchema(schema);
    }
  });
});
