import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { openPostgresStore } from '../../src/store/postgres/store.js';
import type { Store } from '../../src/store/store.js';
import { dropSchema, freshSchema, POSTGRES_URL, sql } from '../postgres/harness.js';
import { ADMIN_TOKEN, basic, PEPPER } from '../support/http.js';
import { TcpProxy } from './tcp-proxy.js';

/**
 * PostgreSQL behind a TCP proxy that goes away (connections refused and reset), turns into a black hole
 * (sockets stay open, nothing comes back: the statement timeout cannot help, the query never reaches the
 * server) or gets slow. Every data endpoint answers 503 `unavailable` (code 11 on /dlr) within the deadline,
 * /healthz and /metrics stay fast meanwhile, /readyz says 503, and the same app serves again once the proxy is
 * restored.
 */
describe.skipIf(!POSTGRES_URL)('PostgreSQL outage', () => {
  const TIMEOUT_MS = 1000;
  /** Event-loop and scheduling slack on a shared, busy machine. */
  const MARGIN_MS = 700;
  const TO = '447700900123';
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };

  let schema: string;
  let proxy: TcpProxy;
  let store: Store;
  let app: FastifyInstance;
  let account: { id: string; key: string; secret: string };

  beforeEach(async () => {
    schema = freshSchema();
    // Migrated through the real URL: the outage is only on the app's path to the database.
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
    const config = loadConfig({
      DATABASE_URL: viaProxy.toString(),
      WAYBILL_ADMIN_TOKEN: ADMIN_TOKEN,
      WAYBILL_LOG_LEVEL: 'silent',
      WAYBILL_DB_TIMEOUT_MS: String(TIMEOUT_MS),
      WAYBILL_RATE_PER_SECOND: '0',
    });
    app = await buildApp({ config, store, pepper: PEPPER });

    const created = await app.inject({
      method: 'POST',
      url: '/admin/v1/accounts',
      headers: admin,
      payload: { name: 'A' },
    });
    expect(created.statusCode, created.body).toBe(201);
    account = created.json();
    expect((await ingest('m-1')).statusCode).toBe(200);
    const receipt = await app.inject({
      method: 'POST',
      url: `/admin/v1/accounts/${account.id}/receipts`,
      headers: admin,
      payload: {
        receipts: [{ messageId: 'm-1', drStatuscode: 'delivered', drTime: new Date().toISOString() }],
      },
    });
    expect(receipt.statusCode, receipt.body).toBe(200);
    await expectServing();
  });

  afterEach(async () => {
    await app?.close();
    await store?.close();
    await proxy?.stop();
    if (schema) await dropSchema(schema);
  });

  const ingest = (id: string) =>
    app.inject({
      method: 'POST',
      url: `/admin/v1/accounts/${account.id}/messages`,
      headers: admin,
      payload: { messages: [{ id, channel: 'SMS', channelUserId: TO }] },
    });

  /** Every endpoint that needs the database, by name. */
  const dataRequests = (): Record<string, InjectOptions> => {
    const auth = { authorization: basic(account.key, account.secret) };
    return {
      dlr: { url: `/dlr?key=${account.key}&secret=${account.secret}&messageid=m-1` },
      messages: { url: '/messages?messageIds=m-1', headers: auth },
      contactMessages: { url: '/api/v1/contacts/messages?messageIds=m-1', headers: auth },
      receipts: { url: '/receipts', headers: auth },
      getAccount: { url: `/admin/v1/accounts/${account.id}`, headers: admin },
      postMessages: {
        method: 'POST',
        url: `/admin/v1/accounts/${account.id}/messages`,
        headers: admin,
        payload: { messages: [{ id: `during-${Date.now()}`, channel: 'SMS', channelUserId: TO }] },
      },
    };
  };

  const timed = async (options: InjectOptions | string) => {
    const started = Date.now();
    const res = await app.inject(options);
    return { res, ms: Date.now() - started };
  };

  function expectUnavailable(name: string, res: LightMyRequestResponse): void {
    if (name === 'dlr') {
      expect(res.statusCode, `${name}: ${res.body}`).toBe(500);
      expect(res.json()).toMatchObject({ code: 11 });
    } else {
      expect(res.statusCode, `${name}: ${res.body}`).toBe(503);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.headers['retry-after'], name).toBe('5');
      expect(res.json(), name).toMatchObject({ status: 503, code: 'unavailable' });
    }
    // Nothing of the failure's internals reaches the client.
    expect(res.body, name).not.toMatch(
      /ECONN|timeout|terminated|127\.0\.0\.1|postgres|pg_|wb_test|stack|at \w+ \(/i,
    );
  }

  /**
   * Fires every data request at once, and /healthz and /metrics while they wait; each data request must fail
   * within `answerMs`.
   */
  async function duringFault(answerMs: number): Promise<{ healthMaxMs: number; metricsMaxMs: number }> {
    const pending = Object.entries(dataRequests()).map(async ([name, options]) => {
      const { res, ms } = await timed(options);
      return { name, res, ms };
    });
    const ready = timed('/readyz');

    let healthMaxMs = 0;
    let metricsMaxMs = 0;
    for (let i = 0; i < 5; i++) {
      await new Promise((resolve) => setTimeout(resolve, TIMEOUT_MS / 6));
      const health = await timed('/healthz');
      expect(health.res.statusCode).toBe(200);
      healthMaxMs = Math.max(healthMaxMs, health.ms);
      const metrics = await timed({ url: '/metrics', headers: admin });
      expect(metrics.res.statusCode).toBe(200);
      expect(metrics.res.body).toContain('waybill_http_requests_total');
      metricsMaxMs = Math.max(metricsMaxMs, metrics.ms);
    }
    expect(healthMaxMs).toBeLessThan(200);
    expect(metricsMaxMs).toBeLessThan(200);

    for (const { name, res, ms } of await Promise.all(pending)) {
      expectUnavailable(name, res);
      expect(ms, name).toBeLessThan(answerMs);
    }
    const readiness = await ready;
    expect(readiness.res.statusCode).toBe(503);
    expect(readiness.res.json()).toStrictEqual({ status: 'unavailable' });
    expect(readiness.ms).toBeLessThan(Math.min(TIMEOUT_MS, 2000) + MARGIN_MS);
    return { healthMaxMs, metricsMaxMs };
  }

  /** Every data endpoint and /readyz answer normally (retrying for a few seconds after a restore). */
  async function expectServing(withinMs = 0): Promise<void> {
    const deadline = Date.now() + withinMs;
    for (;;) {
      const results = await Promise.all(
        Object.entries({ ...dataRequests(), readyz: { url: '/readyz' } }).map(async ([name, options]) => ({
          name,
          res: await app.inject(options),
        })),
      );
      const failed = results.filter(({ res }) => res.statusCode !== 200);
      if (failed.length === 0) {
        const dlr = results.find((r) => r.name === 'dlr')?.res;
        expect(dlr?.json()).toHaveLength(1);
        return;
      }
      if (Date.now() > deadline) {
        expect(
          failed.map(({ name, res }) => `${name} ${res.statusCode} ${res.body}`),
          'still failing after the restore',
        ).toStrictEqual([]);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  it('answers 503 (code 11 on /dlr) at once while the database refuses and resets connections, and recovers', async () => {
    await proxy.close();
    // Refused at once: nothing to wait for.
    const { healthMaxMs, metricsMaxMs } = await duringFault(TIMEOUT_MS / 2);
    console.info(`closed: longest /healthz ${healthMaxMs} ms, /metrics ${metricsMaxMs} ms`);
    // A second round, after the pool has seen its connections die.
    for (const [name, options] of Object.entries(dataRequests())) {
      const { res, ms } = await timed(options);
      expectUnavailable(name, res);
      expect(ms, name).toBeLessThan(TIMEOUT_MS / 2);
    }
    await proxy.restore();
    await expectServing(5000);
  });

  it('answers 503 within the deadline while the network silently drops everything, and recovers', async () => {
    proxy.blackHole();
    const { healthMaxMs, metricsMaxMs } = await duringFault(TIMEOUT_MS + MARGIN_MS);
    console.info(`black hole: longest /healthz ${healthMaxMs} ms, /metrics ${metricsMaxMs} ms`);
    // Again: the connections that timed out must not have been handed back to the pool as if usable, and new
    // ones do not get through either.
    await duringFault(TIMEOUT_MS + MARGIN_MS);
    await proxy.restore();
    await expectServing(5000);
    // The pool is whole again: as many parallel requests as it has connections, and more, all succeed.
    const burst = await Promise.all(
      Array.from({ length: 12 }, () =>
        app.inject({ url: `/admin/v1/accounts/${account.id}`, headers: admin }),
      ),
    );
    expect(burst.map((r) => r.statusCode)).toStrictEqual(Array(12).fill(200));
  });

  it('bounds a whole ingest transaction by the deadline on a slow link, and leaves nothing half-written', async () => {
    // Every round trip takes 2 × 200 ms: each statement alone is well within the deadline, but a batch's
    // transaction (BEGIN, several statements, COMMIT) is not.
    proxy.slow(200);
    const started = Date.now();
    const res = await ingest('slow-1');
    const ms = Date.now() - started;
    expectUnavailable('postMessages', res);
    // The account lookup (one round trip) and the batch's own deadline.
    expect(ms).toBeLessThan(400 + TIMEOUT_MS + MARGIN_MS);
    await proxy.restore();
    await expectServing(5000);
    // The transaction was abandoned, not committed behind the 503's back.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const rows = await sql<{ n: number }>(
      schema,
      `SELECT count(*)::int AS n FROM message_keys WHERE id = 'slow-1'`,
    );
    expect(rows[0]?.n).toBe(0);
  });

  it('answers /readyz 503 within 2 s in a black hole even with the default 5 s deadline', async () => {
    const viaProxy = new URL(POSTGRES_URL);
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String(proxy.port);
    const slowStore = openPostgresStore({
      url: viaProxy.toString(),
      poolSize: 2,
      statementTimeoutMs: 30_000,
      schema,
    });
    const config = loadConfig({ WAYBILL_ADMIN_TOKEN: ADMIN_TOKEN, WAYBILL_LOG_LEVEL: 'silent' });
    expect(config.dbTimeoutMs).toBe(5000);
    const slowApp = await buildApp({ config, store: slowStore, pepper: PEPPER });
    try {
      expect((await slowApp.inject('/readyz')).statusCode).toBe(200);
      proxy.blackHole();
      const started = Date.now();
      const res = await slowApp.inject('/readyz');
      const ms = Date.now() - started;
      expect(res.statusCode).toBe(503);
      expect(ms).toBeGreaterThanOrEqual(1900);
      expect(ms).toBeLessThan(2000 + MARGIN_MS);
      // Probes keep answering on time while earlier ones still wait on the database.
      const again = await Promise.all([slowApp.inject('/readyz'), slowApp.inject('/readyz')]);
      expect(again.map((r) => r.statusCode)).toStrictEqual([503, 503]);
      expect(Date.now() - started).toBeLessThan(4000 + 2 * MARGIN_MS);
      await proxy.restore();
    } finally {
      await slowApp.close();
      await slowStore.close();
    }
  });
});
