import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAll, type Served, serve } from '../support/processes.js';
import { POSTGRES_URL, scratchDatabase } from './harness.js';

/**
 * Two `waybill serve` processes on one PostgreSQL database behave as one service (issue 3): both start (and
 * migrate) at once, what one ingests the other serves, concurrent identical batches into both leave exactly one
 * copy, and with REDIS_URL a lockout on one instance holds on the other.
 */

const ADMIN = 'multi-instance-admin-token';
const database = scratchDatabase('wb_multi');

const json = async (res: Response) => ({
  status: res.status,
  body: (await res.json()) as Record<string, unknown>,
});

describe.skipIf(!POSTGRES_URL)('two instances on one PostgreSQL database', () => {
  let a: Served;
  let b: Served;
  const admin = (server: Served, path: string, body: unknown) =>
    fetch(`${server.url}/admin/v1${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  beforeAll(async () => {
    await database.create();
    const env: Record<string, string> = {
      DATABASE_URL: database.url,
      WAYBILL_PEPPER: 'multi-instance-pepper-0123',
      WAYBILL_ADMIN_TOKEN: ADMIN,
      WAYBILL_ACCESS_LOG: 'off',
      WAYBILL_LOCKOUT_FAILURES: '4',
      WAYBILL_RATE_PER_SECOND: '0',
    };
    if (process.env.REDIS_URL) env.REDIS_URL = process.env.REDIS_URL;
    // Started together, so their migrations race (an advisory lock serializes them).
    [a, b] = await Promise.all([serve(['--no-demo'], env), serve(['--no-demo'], env)]);
  }, 60_000);

  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    killAll();
    await database.drop();
  });

  it('serves through one instance what was ingested through the other, with nothing duplicated or lost', async () => {
    const created = await json(await admin(a, '/accounts', { name: 'Multi' }));
    expect(created.status).toBe(201);
    const { id, key, secret } = created.body as { id: string; key: string; secret: string };

    const start = Date.parse('2026-11-01T00:00:00Z');
    const batch = Array.from({ length: 400 }, (_, i) => ({
      id: `race-${i}`,
      channel: i % 2 ? 'SMS' : 'WHATSAPP',
      channelUserId: i % 2 ? `4477009${String(i % 40).padStart(5, '0')}` : `wa-user-${i % 40}`,
      createdAt: new Date(start + i * 1000).toISOString(),
      text: `message ${i}`,
      ...(i % 2 ? { sms: { status: '0' } } : {}),
    }));
    // The same batch, three times into each instance, all at once.
    const results = await Promise.all(
      [a, b, a, b, a, b].map((server) =>
        admin(server, `/accounts/${id}/messages`, { messages: batch }).then(json),
      ),
    );
    for (const r of results) expect(r).toEqual({ status: 200, body: { accepted: 400 } });

    const receipts = batch
      .filter((m) => m.channel === 'SMS')
      .map((m) => ({ messageId: m.id, drStatuscode: 'delivered', drTime: '2026-11-02 00:00:00.000' }));
    const applied = await Promise.all(
      [a, b].map((s) => admin(s, `/accounts/${id}/receipts`, { receipts }).then(json)),
    );
    // Each receipt applies exactly once, on whichever instance got there first.
    expect(applied.reduce((n, r) => n + (r.body.applied as number), 0)).toBe(200);
    expect(applied.reduce((n, r) => n + (r.body.ignored as number), 0)).toBe(200);

    const auth = { authorization: `Basic ${Buffer.from(`${key}:${secret}`).toString('base64')}` };
    const dlr = await (await fetch(`${b.url}/dlr?key=${key}&secret=${secret}&messageid=race-1`)).json();
    expect(dlr).toMatchObject([{ messageid: 'race-1', status: '0', drStatuscode: 'delivered' }]);

    // Every contact's history, walked through instance B, holds each of its messages exactly once.
    const seen: string[] = [];
    for (let u = 0; u < 40; u++) {
      const channel = u % 2 ? 'SMS' : 'WHATSAPP';
      const user = u % 2 ? `4477009${String(u).padStart(5, '0')}` : `wa-user-${u}`;
      let cursor: string | null = null;
      do {
        const query = `channel=${channel}&channelUserId=${user}&size=100${cursor ? `&cursor=${cursor}` : ''}`;
        const page = (await (await fetch(`${b.url}/messages?${query}`, { headers: auth })).json()) as {
          messages: { id: string }[];
          nextCursor: string | null;
        };
        seen.push(...page.messages.map((m) => m.id));
        cursor = page.nextCursor;
      } while (cursor);
    }
    expect(seen).toHaveLength(400);
    expect(new Set(seen).size).toBe(400);
  });

  it.skipIf(!process.env.REDIS_URL)(
    'shares the lockout of a key between instances through Redis',
    async () => {
      const { body } = await json(await admin(b, '/accounts', { name: 'Lockout' }));
      const { key, secret } = body as { key: string; secret: string };
      const wrong = secret === 'WRONGSEC' ? 'WRONGSE2' : 'WRONGSEC';
      for (const server of [a, b, a, b]) {
        expect((await fetch(`${server.url}/dlr?key=${key}&secret=${wrong}&messageid=x`)).status).toBe(401);
      }
      for (const server of [a, b]) {
        const res = await fetch(`${server.url}/dlr?key=${key}&secret=${secret}&messageid=x`);
        expect(res.status).toBe(429);
        expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      }
    },
  );
});
