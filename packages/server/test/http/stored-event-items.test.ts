import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { openPostgresStore } from '../../src/store/postgres/store.js';
import { openSqliteStore } from '../../src/store/sqlite/store.js';
import type { EngineFixture } from '../support/engines.js';
import { basic, startHarness } from '../support/http.js';

/**
 * Receipt events store their item's values only (store/event-item.ts); rows written before keep the whole item.
 * Both must read back as the same bytes: each engine here is a store whose rows the test can also rewrite.
 */
interface RawEngine extends EngineFixture {
  items(): Promise<(string | null)[]>;
  setItems(items: Map<number, string>): Promise<void>;
}

const dir = mkdtempSync(join(tmpdir(), 'wb-items-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function sqliteEngine(): RawEngine {
  const path = join(dir, `${randomBytes(4).toString('hex')}.db`);
  const raw = () => new Database(path);
  return {
    name: 'sqlite',
    async open() {
      const store = openSqliteStore({ path, cacheMb: 4 });
      await store.migrate();
      return store;
    },
    async items() {
      const db = raw();
      try {
        return db
          .prepare<[], { item: string | null }>('SELECT item FROM receipt_events ORDER BY seq')
          .all()
          .map((r) => r.item);
      } finally {
        db.close();
      }
    },
    async setItems(items) {
      const db = raw();
      try {
        const set = db.prepare('UPDATE receipt_events SET item = ? WHERE seq = ?');
        for (const [seq, item] of items) set.run(item, seq);
      } finally {
        db.close();
      }
    },
  };
}

function postgresEngine(url: string): RawEngine {
  const schema = `wb_test_${randomBytes(6).toString('hex')}`;
  const query = async <R extends pg.QueryResultRow>(text: string, values: unknown[] = []) => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(`SET search_path TO ${schema}`);
      return (await client.query<R>(text, values)).rows;
    } finally {
      await client.end();
    }
  };
  return {
    name: 'postgres',
    async open() {
      const store = openPostgresStore({ url, poolSize: 2, statementTimeoutMs: 30_000, schema });
      await store.migrate();
      return {
        ...store,
        async close() {
          await store.close();
          await query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
        },
      };
    },
    async items() {
      return (await query<{ item: string }>('SELECT item FROM receipt_events ORDER BY seq')).map(
        (r) => r.item,
      );
    },
    async setItems(items) {
      for (const [seq, item] of items) {
        await query('UPDATE receipt_events SET item = $1 WHERE seq = $2', [item, seq]);
      }
    },
  };
}

const engines: (() => RawEngine)[] = [sqliteEngine];
const postgresUrl = process.env.WAYBILL_TEST_POSTGRES_URL;
if (postgresUrl) engines.push(() => postgresEngine(postgresUrl));

describe.each(engines.map((make) => ({ name: make().name, make })))(
  '$name stored event items',
  ({ make }) => {
    it('are compact, and rows holding the whole item (written before) read back as the same bytes', async () => {
      const engine = make();
      const h = await startHarness(engine);
      try {
        const acct = await h.createAccount();
        const to = '447700900123';
        await h.ingest(acct.id, [
          { id: 'm-1', channel: 'SMS', channelUserId: to, sms: { network: '23410', price: 0.035 } },
          { id: 'm-2', channel: 'SMS', channelUserId: to },
        ]);
        const receipt = (messageId: string, drStatuscode: string) => ({
          messageId,
          drStatuscode,
          drTime: '2026-11-22T10:00:01.250Z',
        });
        await h.receipts(acct.id, [receipt('m-1', 'accepted')]);
        await h.receipts(acct.id, [receipt('m-1', 'delivered'), receipt('m-2', 'failed')]);
        const feed = () =>
          h.inject({
            method: 'GET',
            url: '/receipts',
            headers: { authorization: basic(acct.key, acct.secret) },
          });
        const before = await feed();
        expect(before.statusCode, before.body).toBe(200);
        const events = (before.json() as { receipts: { receipt: Record<string, unknown> }[] }).receipts;
        expect(events.map((e) => e.receipt.drStatuscode)).toStrictEqual(['accepted', 'delivered', 'failed']);

        const stored = await engine.items();
        expect(stored).toHaveLength(3);
        expect(stored[0]).toBe('["0",0.035,1,"23410",0,"accepted","0","2026-11-22 10:00:01.250"]');
        // SQLite stores none for an event that is its record's item as it stands (store/sqlite/current-item.ts).
        if (engine.name === 'sqlite') expect(stored.slice(1)).toStrictEqual([null, null]);
        else for (const item of stored) expect(item?.startsWith('[')).toBe(true);

        // As an older Waybill stored them: the item's whole JSON, which the feed gave back verbatim.
        await engine.setItems(new Map(events.map((e, i) => [i + 1, JSON.stringify(e.receipt)])));
        expect((await engine.items())[0]?.startsWith('{"type":"dlr","messageid":"m-1"')).toBe(true);
        const after = await feed();
        expect(after.body).toBe(before.body);
      } finally {
        await h.close();
      }
    });
  },
);
