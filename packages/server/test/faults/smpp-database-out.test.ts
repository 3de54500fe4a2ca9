import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import type { BindTimings } from '../../src/intake/smpp-bind.js';
import { composeService, type Service } from '../../src/service.js';
import { openPostgresStore } from '../../src/store/postgres/store.js';
import { openSqliteStore } from '../../src/store/sqlite/store.js';
import type { Store } from '../../src/store/store.js';
import { type OwedReceipt, ReceiptStream } from '../intake/receipt-stream.js';
import { receiptText, Smsc } from '../intake/smsc.js';
import { dropSchema, freshSchema, POSTGRES_URL, sql } from '../postgres/harness.js';
import { ADMIN_TOKEN, PEPPER } from '../support/http.js';
import { TcpProxy } from './tcp-proxy.js';

/**
 * Receipts arriving over an SMPP bind while the database is out (CONTRACT §12 "SMPP binds"): each is answered
 * ESME_RX_T_APPNACK within the database deadline, none is answered ESME_ROK without being stored, and what the
 * SMSC delivers again once the database is back is applied, once. SQLite is out when another connection holds
 * its write lock; PostgreSQL when the network to it turns into a black hole or cuts every connection.
 */

const TIMEOUT_MS = 800;
const APPNACK = 0x64;
/** Receipts sent during each outage. */
const COUNT = 40;
/** A lease that outlives the outages: the bind is held, and redelivered receipts arrive on the same link. */
const TIMINGS: Partial<BindTimings> = {
  leaseTtlMs: 10_000,
  leaseRenewMs: 500,
  minBackoffMs: 50,
  maxBackoffMs: 400,
  responseTimeoutMs: 2000,
};

async function until(
  what: string,
  probe: () => boolean | Promise<boolean>,
  timeoutMs = 15_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** A service with its binds on `store`, an SMSC simulator bound to it, and an account with COUNT recipients. */
async function bound(store: Store, databaseUrl: string) {
  const smsc = new Smsc();
  const port = await smsc.listen();
  const service: Service = await composeService({
    config: loadConfig({
      DATABASE_URL: databaseUrl,
      WAYBILL_ADMIN_TOKEN: ADMIN_TOKEN,
      WAYBILL_LOG_LEVEL: 'silent',
      WAYBILL_DB_TIMEOUT_MS: String(TIMEOUT_MS),
    }),
    store,
    pepper: PEPPER,
    binds: true,
    bindTimings: TIMINGS,
    bindHolder: 'test-a',
  });
  service.start();
  const admin = async (url: string, payload: object) => {
    const res = await service.app.inject({
      method: 'POST',
      url,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      payload,
    });
    expect(res.statusCode, res.body).toBeLessThan(300);
    return res.json() as Record<string, unknown>;
  };
  await admin('/admin/v1/routes', {
    name: 'smsc',
    kind: 'smpp',
    smpp: { host: '127.0.0.1', port, systemId: 'waybill', password: 'pw' },
  });
  await service.binds?.refresh();
  await until('the bind', () => smsc.bound.size === 1);
  const accountId = (await admin('/admin/v1/accounts', { name: 'Acme' })).id as string;
  const messages = Array.from({ length: COUNT }, (_, i) => ({
    id: `m-${i}`,
    channel: 'SMS',
    channelUserId: '447700900001',
    sms: { carrier: { route: 'smsc', messageId: `c-${i}` } },
  }));
  await admin(`/admin/v1/accounts/${accountId}/messages`, { messages });
  return { smsc, service, accountId };
}

/**
 * Takes the database out, owes COUNT receipts, and waits until each has been answered twice (a first delivery
 * and a redelivery) while it is still out: answers do not wait for the database to come back. Then brings it
 * back and waits until all are acknowledged. Checks that every answer during the outage was
 * ESME_RX_T_APPNACK, that nothing was stored meanwhile, and that each receipt is stored once afterwards. How
 * long the answers took is printed, not asserted (no timing asserts on a shared machine).
 */
async function throughOutage(
  setting: Awaited<ReturnType<typeof bound>>,
  store: Store,
  fault: {
    name: string;
    start: () => void | Promise<void>;
    /** Receipt events in the database, read past the fault. */
    storedEvents: () => Promise<number>;
    end: () => void | Promise<void>;
  },
): Promise<void> {
  const { smsc, accountId } = setting;
  let out = false;
  const duringOutage: number[] = [];
  const latencies: number[] = [];
  const stream = new ReceiptStream(smsc, {
    window: COUNT,
    retryMs: 100,
    onAnswer: (receipt: OwedReceipt, status: number) => {
      if (!out) return;
      duringOutage.push(status);
      latencies.push(Date.now() - (receipt.sentAt ?? 0));
    },
  });
  try {
    await fault.start();
    out = true;
    const owed = stream.owe(
      Array.from({ length: COUNT }, (_, i) => ({
        esm_class: 0x04,
        short_message: receiptText(`c-${i}`, 'DELIVRD'),
      })),
    );
    stream.start();
    await until('two answers to every receipt during the outage', () =>
      owed.every((r) => r.answers.length >= 2),
    );
    // No receipt was stored meanwhile, so none may have been acknowledged.
    expect(await fault.storedEvents()).toBe(0);
    out = false;
    await fault.end();
    await until('every receipt acknowledged after the outage', () => stream.outstanding === 0);

    expect(duringOutage.length).toBeGreaterThanOrEqual(2 * COUNT);
    expect(duringOutage.filter((status) => status !== APPNACK)).toEqual([]);
    const slowest = Math.max(...latencies);
    console.log(
      `${fault.name}: ${duringOutage.length} answers during the outage, all ESME_RX_T_APPNACK, ` +
        `slowest ${slowest} ms (deadline ${TIMEOUT_MS} ms)`,
    );
    for (const receipt of owed) expect(receipt.answers.at(-1)).toBe(0);

    // Each receipt applied exactly once: one event per recipient, every one delivered.
    const events = await store.listReceiptEvents(accountId, 0, 1000);
    expect(events.map((e) => e.item.messageid).sort()).toEqual(
      Array.from({ length: COUNT }, (_, i) => `m-${i}`).sort(),
    );
    expect(events.every((e) => e.item.drStatuscode === 'delivered')).toBe(true);
    // The link held through the outage: the SMSC saw one bind.
    expect(smsc.events.binds).toBe(1);
  } finally {
    stream.stop();
  }
}

describe('SMPP receipts while SQLite is locked by another connection', () => {
  let dir: string;
  let store: Store;
  let other: Database.Database;
  let setting: Awaited<ReturnType<typeof bound>>;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'waybill-smpp-locked-'));
    const path = join(dir, 'waybill.db');
    store = openSqliteStore({ path, cacheMb: 8, timeoutMs: TIMEOUT_MS });
    await store.migrate();
    other = new Database(path);
    setting = await bound(store, `sqlite:${path}`);
  });
  afterEach(async () => {
    if (other.inTransaction) other.exec('ROLLBACK');
    other.close();
    await setting?.service.close(3000);
    await setting?.smsc.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers ESME_RX_T_APPNACK while the lock is held, ESME_ROK to nothing unstored, and applies the redeliveries', {
    timeout: 40_000,
  }, async () => {
    await throughOutage(setting, store, {
      name: 'sqlite locked',
      start: () => {
        other.exec('BEGIN EXCLUSIVE');
      },
      // The lock's holder reads what is committed.
      storedEvents: async () =>
        (other.prepare('SELECT count(*) AS n FROM receipt_events').get() as { n: number }).n,
      end: () => {
        other.exec('ROLLBACK');
      },
    });
  });
});

describe.skipIf(!POSTGRES_URL)('SMPP receipts while PostgreSQL is out', () => {
  let schema: string;
  let proxy: TcpProxy;
  let store: Store;
  let setting: Awaited<ReturnType<typeof bound>>;

  beforeEach(async () => {
    schema = freshSchema();
    // Migrated through the real URL: the outage is only on the service's path to the database.
    const direct = openPostgresStore({ url: POSTGRES_URL, poolSize: 1, statementTimeoutMs: 30_000, schema });
    await direct.migrate();
    await direct.close();
    const target = new URL(POSTGRES_URL);
    proxy = await TcpProxy.start({ host: target.hostname, port: Number(target.port || 5432) });
    const viaProxy = new URL(POSTGRES_URL);
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String(proxy.port);
    store = openPostgresStore({
      url: viaProxy.toString(),
      poolSize: 4,
      statementTimeoutMs: 30_000,
      schema,
      timeoutMs: TIMEOUT_MS,
    });
    setting = await bound(store, viaProxy.toString());
  });
  afterEach(async () => {
    await setting?.service.close(3000);
    await setting?.smsc.close();
    await proxy?.stop();
    if (schema) await dropSchema(schema);
  });

  const storedEvents = async () =>
    (await sql<{ n: number }>(schema, 'SELECT count(*)::int AS n FROM receipt_events'))[0]?.n ?? -1;

  it('black hole: ESME_RX_T_APPNACK within the deadline, ESME_ROK to nothing unstored, redeliveries applied', {
    timeout: 40_000,
  }, async () => {
    await throughOutage(setting, store, {
      name: 'postgres black hole',
      start: () => proxy.blackHole(),
      storedEvents,
      end: () => proxy.restore(),
    });
  });

  it('cut: ESME_RX_T_APPNACK at once, ESME_ROK to nothing unstored, redeliveries applied', {
    timeout: 40_000,
  }, async () => {
    await throughOutage(setting, store, {
      name: 'postgres cut',
      start: () => proxy.close(),
      storedEvents,
      end: () => proxy.restore(),
    });
  });
});
