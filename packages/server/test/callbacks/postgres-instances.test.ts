import { afterAll, describe, expect, it } from 'vitest';
import { POSTGRES_URL, scratchDatabase } from '../postgres/harness.js';
import { killAll, type Served, serve } from '../support/processes.js';
import { type Receiver, startReceiver, waitFor } from './receiver.js';

/**
 * Two `waybill serve` processes on one PostgreSQL database share the callback queue (CONTRACT §9): every
 * delivery is made, and no delivery is ever attempted by both at once.
 */

const ADMIN = 'callback-instances-admin-token';
const database = scratchDatabase('wb_relay');
const N = 2000;

describe.skipIf(!POSTGRES_URL)('two relays on one PostgreSQL database', () => {
  let servers: Served[] = [];
  let receiver: Receiver | undefined;

  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop().catch(() => {})));
    killAll();
    await receiver?.close();
    if (POSTGRES_URL) await database.drop();
  });

  it('delivers every receipt once in flight at a time, whichever instance takes it', async () => {
    await database.create();
    const env = {
      DATABASE_URL: database.url,
      WAYBILL_PEPPER: 'callback-instances-pepper-0123',
      WAYBILL_ADMIN_TOKEN: ADMIN,
      WAYBILL_ACCESS_LOG: 'off',
      // Debug: a line per attempt, so the test can tell that both instances sent.
      WAYBILL_LOG_LEVEL: 'debug',
      WAYBILL_RATE_PER_SECOND: '0',
      WAYBILL_CALLBACK_ALLOW_PRIVATE: 'true',
      WAYBILL_CALLBACK_TIMEOUT_MS: '2000',
      WAYBILL_CALLBACK_RETRY_SCHEDULE: '0.1,0.1,0.1,0.1,0.1,0.1',
    };
    // A receiver slow enough for the two relays' attempts to overlap, failing now and then so retries mix in.
    receiver = await startReceiver((_r, i) => ({ status: i % 17 === 5 ? 503 : 200, delayMs: 3 }));
    servers = await Promise.all([serve(['--no-demo'], env), serve(['--no-demo'], env)]);
    const [a, b] = servers as [Served, Served];
    const admin = async (server: Served, path: string, body: unknown) => {
      const res = await fetch(`${server.url}/admin/v1${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };

    // Two accounts, so each relay's per-account limit does not cap the whole run.
    const ids: string[] = [];
    for (const name of ['One', 'Two']) {
      const created = await admin(a, '/accounts', { name, callbackUrl: receiver.url });
      expect(created.status).toBe(201);
      ids.push(created.body.id as string);
    }
    const half = N / 2;
    for (const [n, id] of ids.entries()) {
      const numbers = Array.from({ length: half }, (_, i) => `4477${n}0${String(i).padStart(6, '0')}`);
      const messages = numbers.map((to, i) => ({ id: `pg-${i}`, channel: 'SMS', channelUserId: to }));
      expect((await admin(a, `/accounts/${id}/messages`, { messages })).status).toBe(200);
      // Receipts go in through both instances, so both are poked.
      const receipts = numbers.map((_, i) => ({ messageId: `pg-${i}`, drStatuscode: 'delivered' }));
      const [first, second] = [receipts.slice(0, half / 2), receipts.slice(half / 2)];
      const applied = await Promise.all([
        admin(a, `/accounts/${id}/receipts`, { receipts: first }),
        admin(b, `/accounts/${id}/receipts`, { receipts: second }),
      ]);
      expect(
        applied.map((r) => r.body.applied),
        JSON.stringify(applied),
      ).toEqual([half / 2, half / 2]);
    }

    await waitFor(
      () => new Set(receiver?.received.map((r) => r.headers['webhook-id'])).size >= N,
      60_000,
      'every delivery',
    );
    // Every delivery got a 200 in the end (the 503s were retried)…
    await waitFor(
      () =>
        new Set(receiver?.received.filter((_, i) => i % 17 !== 5).map((r) => r.headers['webhook-id'])).size >=
        N,
      30_000,
      'every delivery answered 200',
    );
    // …and retries repeated a webhook-id, but never while another attempt of it was in flight.
    expect(receiver.maxConcurrentPerId).toBe(1);
    const perId = new Map<string, number>();
    for (const r of receiver.received) {
      const id = String(r.headers['webhook-id']);
      perId.set(id, (perId.get(id) ?? 0) + 1);
    }
    expect(perId.size).toBe(N);
    // Both shared the work.
    for (const server of servers) {
      expect(server.output().match(/"msg":"callback delivered"/g)?.length ?? 0).toBeGreaterThan(50);
    }
  }, 120_000);
});
