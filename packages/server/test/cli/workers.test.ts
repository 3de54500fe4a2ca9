import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startReceiver, waitFor } from '../callbacks/receiver.js';
import { killAll, serve } from '../support/processes.js';

/**
 * `waybill serve --workers 2` on SQLite (CONTRACT §11): two processes answer on one port, writes from both
 * land in one file, exactly one of them runs the callback relay, and SIGTERM stops them all.
 */
afterAll(() => killAll());

const ADMIN = 'workers-test-admin-token';

describe('waybill serve --workers', () => {
  it('serves from two processes on one port, with one relay on SQLite', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'waybill-workers-'));
    const receiver = await startReceiver();
    try {
      const server = await serve(['--no-demo', '--workers', '2'], {
        DATABASE_URL: `sqlite:${join(dir, 'waybill.db')}`,
        WAYBILL_ADMIN_TOKEN: ADMIN,
        WAYBILL_CALLBACK_ALLOW_PRIVATE: 'true',
        WAYBILL_RATE_PER_SECOND: '0',
      });
      await waitFor(() => (server.output().match(/listening at/g) ?? []).length >= 2, 10_000, 'both workers');
      const pids = new Set([...server.output().matchAll(/"pid":(\d+)[^\n]*listening at/g)].map((m) => m[1]));
      expect(pids.size).toBe(2);
      // The log is written asynchronously: wait for the relay's line, then count (a second would be a bug).
      const relays = () => (server.output().match(/callback relay started/g) ?? []).length;
      await waitFor(() => relays() >= 1, 10_000, 'the relay');
      expect(relays()).toBe(1);

      const admin = (path: string, body: unknown) =>
        fetch(`${server.url}/admin/v1${path}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      const account = (await (await admin('/accounts', { name: 'w', callbackUrl: receiver.url })).json()) as {
        id: string;
      };
      // Concurrent writes, spread over both workers by the cluster, all land in the one file.
      const n = 40;
      const writes = await Promise.all(
        Array.from({ length: n }, async (_, i) => {
          const id = `w-${i}`;
          const m = await admin(`/accounts/${account.id}/messages`, {
            messages: [{ id, channel: 'SMS', channelUserId: '447700900123' }],
          });
          const r = await admin(`/accounts/${account.id}/receipts`, {
            receipts: [{ messageId: id, drStatuscode: 'delivered' }],
          });
          return [m.status, r.status];
        }),
      );
      expect(writes.flat().every((s) => s === 200)).toBe(true);
      await waitFor(
        () => new Set(receiver.received.map((r) => r.headers['webhook-id'])).size === n,
        15_000,
        'every delivery',
      );
      expect(receiver.maxConcurrentPerId).toBe(1);

      await server.stop();
      expect(server.output()).toMatch(/SIGTERM: stopping 2 workers/);
    } finally {
      killAll();
      await receiver.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
