import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onServer, POSTGRES_URL, scratchDatabase } from '../postgres/harness.js';
import { killAll, type Served, serve } from '../support/processes.js';
import { type Receiver, startReceiver, waitFor } from './receiver.js';

/**
 * Deliveries queued on one instance wake the relay of another (LISTEN/NOTIFY, store/postgres/delivery-notices.ts):
 * instance A ingests with its relay off, instance B relays with a poll interval of an hour, so every delivery
 * that reaches the receiver within the test was sent because B was told, never because it polled. Then B's
 * listening connection is killed from the server side, and B listens again and is woken again.
 */

const ADMIN = 'callback-notices-admin-token';
const database = scratchDatabase('wb_notice');
/** Far beyond the test's own timeout: a delivery seen at all was not found by a poll. */
const POLL_MS = '3600000';

/** The backends of the test database waiting in LISTEN (B's listening connection). */
const listeners = () =>
  onServer<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE datname = $1 AND query LIKE 'LISTEN %'`, [
    database.name,
  ]);

describe.skipIf(!POSTGRES_URL)('relays woken by deliveries queued on another instance', () => {
  let a: Served;
  let b: Served;
  let receiver: Receiver;
  let accountId = '';

  const admin = async (server: Served, path: string, body: unknown) => {
    const res = await fetch(`${server.url}/admin/v1${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  /** Ingests a message and its receipt through A: one delivery queued there. */
  const queueThroughA = async (id: string, to: string) => {
    const messages = [{ id, channel: 'SMS', channelUserId: to }];
    expect((await admin(a, `/accounts/${accountId}/messages`, { messages })).status).toBe(200);
    const receipts = [{ messageId: id, drStatuscode: 'delivered' }];
    const applied = await admin(a, `/accounts/${accountId}/receipts`, { receipts });
    expect(applied.body.applied).toBe(1);
  };

  const delivered = (messageId: string) =>
    receiver.received.some((r) => (JSON.parse(r.body) as { messageid?: string }).messageid === messageId);

  beforeAll(async () => {
    await database.create();
    const env = {
      DATABASE_URL: database.url,
      WAYBILL_PEPPER: 'callback-notices-pepper-0123',
      WAYBILL_ADMIN_TOKEN: ADMIN,
      WAYBILL_ACCESS_LOG: 'off',
      WAYBILL_RATE_PER_SECOND: '0',
      WAYBILL_CALLBACK_ALLOW_PRIVATE: 'true',
      WAYBILL_CALLBACK_POLL_MS: POLL_MS,
    };
    receiver = await startReceiver();
    a = await serve(['--no-demo'], { ...env, WAYBILL_CALLBACK_RELAY: 'off' });
    b = await serve(['--no-demo'], env);
    const created = await admin(a, '/accounts', { name: 'Notices', callbackUrl: receiver.url });
    expect(created.status).toBe(201);
    accountId = created.body.id as string;
    await waitFor(async () => (await listeners()).length === 1, 10_000, 'B listening');
  }, 60_000);

  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    killAll();
    await receiver?.close();
    if (POSTGRES_URL) await database.drop();
  });

  it('delivers through the other instance’s relay without waiting for its poll', async () => {
    await queueThroughA('n-1', '447700900001');
    await waitFor(() => delivered('n-1'), 15_000, 'the delivery, sent by B');
    expect(receiver.received).toHaveLength(1);
  }, 30_000);

  it('listens again after its connection is killed, and is woken again', async () => {
    const [before] = await listeners();
    expect(before).toBeDefined();
    await onServer('SELECT pg_terminate_backend($1)', [before?.pid]);
    // A new listening connection (another backend), opened by B on its own.
    await waitFor(
      async () => {
        const now = await listeners();
        return now.length === 1 && now[0]?.pid !== before?.pid;
      },
      15_000,
      'B listening again',
    );
    await queueThroughA('n-2', '447700900002');
    await waitFor(() => delivered('n-2'), 15_000, 'the second delivery, sent by B');
    expect(b.output()).toContain('cannot listen for deliveries queued by other instances');
  }, 40_000);
});
