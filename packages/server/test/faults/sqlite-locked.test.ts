import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { openSqliteStore } from '../../src/store/sqlite/store.js';
import type { Store } from '../../src/store/store.js';
import { ADMIN_TOKEN, PEPPER } from '../support/http.js';

/**
 * Another process holds SQLite's write lock (`BEGIN EXCLUSIVE`, as a second worker, `waybill prune` or a
 * backup might): writes wait for it without blocking the event loop, give up with 503 at the deadline, and
 * succeed again once the lock is gone.
 */
describe('SQLite locked by another connection', () => {
  const TIMEOUT_MS = 800;
  let dir: string;
  let store: Store;
  let app: FastifyInstance;
  let other: Database.Database;
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'waybill-locked-'));
    const path = join(dir, 'waybill.db');
    store = openSqliteStore({ path, cacheMb: 8, timeoutMs: TIMEOUT_MS });
    const config = loadConfig({
      WAYBILL_ADMIN_TOKEN: ADMIN_TOKEN,
      WAYBILL_LOG_LEVEL: 'silent',
      WAYBILL_DB_TIMEOUT_MS: String(TIMEOUT_MS),
    });
    app = await buildApp({ config, store, pepper: PEPPER });
    other = new Database(path);
  });
  afterEach(async () => {
    if (other.inTransaction) other.exec('ROLLBACK');
    other.close();
    await app.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const createAccount = async () => {
    const created = await app.inject({
      method: 'POST',
      url: '/admin/v1/accounts',
      headers: admin,
      payload: { name: 'A' },
    });
    return created.json() as { id: string; key: string; secret: string };
  };

  const ingest = (accountId: string, id: string) =>
    app.inject({
      method: 'POST',
      url: `/admin/v1/accounts/${accountId}/messages`,
      headers: admin,
      payload: { messages: [{ id, channel: 'SMS', channelUserId: '447700900123' }] },
    });

  it('answers writes 503 at the deadline, keeps /healthz and reads fast meanwhile, and recovers', async () => {
    const account = await createAccount();
    expect((await ingest(account.id, 'before')).statusCode).toBe(200);

    other.exec('BEGIN EXCLUSIVE');
    const started = Date.now();
    const blocked = ingest(account.id, 'during');
    // While the write waits, the event loop serves other requests at once.
    const health = Date.now();
    const healthz = await app.inject('/healthz');
    const healthMs = Date.now() - health;
    expect(healthz.statusCode).toBe(200);
    expect(healthMs).toBeLessThan(TIMEOUT_MS / 2);
    console.log(`/healthz while SQLite was locked: ${healthMs} ms`);
    const read = await app.inject(`/dlr?key=${account.key}&secret=${account.secret}&messageid=before`);
    expect(read.statusCode).toBe(200);
    expect((read.json() as unknown[]).length).toBe(1);

    const res = await blocked;
    const waited = Date.now() - started;
    expect(res.statusCode).toBe(503);
    expect(res.headers['retry-after']).toBe('5');
    expect(res.json()).toMatchObject({ code: 'unavailable', status: 503 });
    expect(res.body).not.toMatch(/SQLITE|sqlite|\.db/);
    expect(waited).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    expect(waited).toBeLessThan(TIMEOUT_MS + 1500);

    other.exec('ROLLBACK');
    expect((await ingest(account.id, 'after')).statusCode).toBe(200);
    const after = await app.inject(`/dlr?key=${account.key}&secret=${account.secret}&messageid=after`);
    expect((after.json() as unknown[]).length).toBe(1);
  });

  it('lets a write through as soon as the lock goes, within the deadline', async () => {
    const { id } = await createAccount();
    other.exec('BEGIN EXCLUSIVE');
    const pending = ingest(id, 'queued');
    setTimeout(() => other.exec('ROLLBACK'), TIMEOUT_MS / 3);
    expect((await pending).statusCode).toBe(200);
  });

  it('answers /dlr through findDlr, waiting, when the store cannot read at once', async () => {
    // findDlrNow answers undefined when a lock another connection holds stops the read (SQLITE_BUSY); then
    // queryDlr asks findDlr, which waits for the lock asynchronously (busy.ts). In WAL mode a read is almost
    // never stopped, so the store here answers undefined every time, and counts the waiting reads.
    let waited = 0;
    const config = loadConfig({ WAYBILL_ADMIN_TOKEN: ADMIN_TOKEN, WAYBILL_LOG_LEVEL: 'silent' });
    const locked = await buildApp({
      config,
      pepper: PEPPER,
      store: {
        ...store,
        findDlrNow: () => undefined,
        findDlr: (accountId, messageId) => {
          waited++;
          return store.findDlr(accountId, messageId);
        },
      },
    });
    try {
      // Written through the app that reads at once; both apps share the store.
      const account = await createAccount();
      expect((await ingest(account.id, 'm-1')).statusCode).toBe(200);
      // Twice: the second finds the account cached with its verified secret, the path that reads at once.
      for (let i = 0; i < 2; i++) {
        const read = await locked.inject(`/dlr?key=${account.key}&secret=${account.secret}&messageid=m-1`);
        expect(read.statusCode).toBe(200);
        expect(read.json()).toMatchObject([{ messageid: 'm-1', to: '447700900123', status: '1' }]);
      }
      expect(waited).toBe(2);
      // The real store reads at once while nothing holds a lock.
      expect(store.findDlrNow?.(account.id, 'm-1')).toMatchObject([{ id: 'm-1' }]);
    } finally {
      await locked.close();
    }
  });
});
