import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { killAll, type Served, serve } from '../support/processes.js';
import { type Receiver, startReceiver, waitFor } from './receiver.js';

/**
 * Deliveries survive a crash (CONTRACT §9): `waybill serve` on a SQLite file is killed with SIGKILL while it is
 * delivering, restarted on the same file, and every event still reaches the receiver — at least once, and a
 * repeat carries the same webhook-id and the same body.
 */

const ADMIN = 'crash-test-admin-token';
const N = 2000;

describe('callback deliveries across a crash (SQLite file)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'waybill-crash-'));
  let receiver: Receiver | undefined;
  let server: Served | undefined;

  afterAll(async () => {
    await server?.stop().catch(() => {});
    killAll();
    await receiver?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const env = {
    DATABASE_URL: `sqlite:${join(dir, 'waybill.db')}`,
    WAYBILL_PEPPER: 'crash-test-pepper-0123456789',
    WAYBILL_ADMIN_TOKEN: ADMIN,
    WAYBILL_ACCESS_LOG: 'off',
    WAYBILL_RATE_PER_SECOND: '0',
    WAYBILL_CALLBACK_ALLOW_PRIVATE: 'true',
    WAYBILL_CALLBACK_TIMEOUT_MS: '1000',
    WAYBILL_CALLBACK_RETRY_SCHEDULE: '0.1,0.1,0.1,0.1,0.1',
  };
  const call = async (method: string, path: string, body?: unknown, auth = `Bearer ${ADMIN}`) => {
    const res = await fetch(`${server?.url}${path}`, {
      method,
      headers: { authorization: auth, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  it('delivers every event at least once, repeats identical, after a SIGKILL mid-delivery', async () => {
    // Slow enough that the kill lands while deliveries are in progress.
    receiver = await startReceiver(() => ({ status: 200, delayMs: 10 }));
    server = await serve(['--no-demo'], env);
    const created = await call('POST', '/admin/v1/accounts', { name: 'Crash', callbackUrl: receiver.url });
    expect(created.status).toBe(201);
    const { id, key, secret } = created.body as { id: string; key: string; secret: string };

    const numbers = Array.from({ length: N }, (_, i) => `4477009${String(i).padStart(5, '0')}`);
    for (let from = 0; from < N; from += 1000) {
      const messages = numbers
        .slice(from, from + 1000)
        .map((to, i) => ({ id: `crash-${from + i}`, channel: 'SMS', channelUserId: to }));
      expect((await call('POST', `/admin/v1/accounts/${id}/messages`, { messages })).status).toBe(200);
    }
    for (let from = 0; from < N; from += 1000) {
      const receipts = numbers.slice(from, from + 1000).map((_, i) => ({
        messageId: `crash-${from + i}`,
        drStatuscode: 'delivered',
      }));
      const applied = await call('POST', `/admin/v1/accounts/${id}/receipts`, { receipts });
      expect(applied.body).toMatchObject({ applied: 1000 });
    }

    await waitFor(() => (receiver?.received.length ?? 0) >= 200, 15_000, 'deliveries to start');
    killAll(); // SIGKILL: no shutdown, leases held, attempts cut off mid-flight
    const atKill = receiver.received.length;
    expect(atKill).toBeLessThan(N);

    server = await serve(['--no-demo'], env);
    // Leased deliveries of the dead process come back when their lease runs out (timeout + margin).
    await waitFor(
      () => new Set(receiver?.received.map((r) => r.headers['webhook-id'])).size >= N,
      40_000,
      'every delivery after the restart',
    );

    // Every event of the feed reached the receiver; every repeat had the same id and the same bytes.
    const auth = `Basic ${Buffer.from(`${key}:${secret}`).toString('base64')}`;
    const events = new Map<string, unknown>();
    let cursor = '';
    for (;;) {
      const page = await call(
        'GET',
        `/receipts?limit=1000${cursor ? `&after=${cursor}` : ''}`,
        undefined,
        auth,
      );
      expect(page.status).toBe(200);
      for (const e of page.body.receipts as { id: string; receipt: unknown }[]) events.set(e.id, e.receipt);
      cursor = page.body.nextCursor as string;
      if (!page.body.hasMore) break;
    }
    expect(events.size).toBe(N);
    const bodies = new Map<string, Set<string>>();
    for (const r of receiver.received) {
      const webhookId = String(r.headers['webhook-id']);
      bodies.set(webhookId, (bodies.get(webhookId) ?? new Set()).add(r.body));
    }
    expect([...bodies.keys()].sort()).toEqual([...events.keys()].sort());
    for (const [webhookId, seen] of bodies) {
      expect(seen.size, webhookId).toBe(1);
      expect(JSON.parse([...seen][0] as string)).toEqual(events.get(webhookId));
    }
    const repeats = receiver.received.length - N;
    expect(repeats).toBeGreaterThanOrEqual(0);

    // And nothing is left pending once the receiver has them all.
    await waitFor(
      async () => {
        const pending = await call('GET', `/admin/v1/accounts/${id}/deliveries?state=pending&limit=1`);
        return (pending.body.deliveries as unknown[]).length === 0;
      },
      10_000,
      'the queue to drain',
    );
    const stopping = server;
    server = undefined;
    await stopping.stop();
  }, 90_000);
});
