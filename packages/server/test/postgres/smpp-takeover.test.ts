import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { receiptText, Smsc } from '../intake/smsc.js';
import { killAll, type Served, serve } from '../support/processes.js';
import { POSTGRES_URL, scratchDatabase } from './harness.js';

/**
 * Two `waybill serve` processes on one PostgreSQL database and one `smpp` route (CONTRACT §12 "SMPP binds": a
 * bind is held by exactly one process at a time; another takes it over within 30 s after its holder dies). One
 * binds, the other waits on the lease; the holder is killed with SIGKILL (its lease is never given up, it runs
 * out); the other binds, and receipts flow through it. The simulator never sees two binds at once.
 */

const ADMIN = 'smpp-takeover-admin-token';
const database = scratchDatabase('wb_smpp_takeover');
const RECEIPT = 0x04;
/** CONTRACT §12: the takeover comes within this after the holder dies. */
const TAKEOVER_MS = 30_000;

async function until(what: string, probe: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** Whether this process has logged a bind of its own. */
const hasBound = (server: Served) => server.output().includes('"msg":"SMPP bound"');

describe.skipIf(!POSTGRES_URL)('SMPP bind takeover between two instances on PostgreSQL', () => {
  const smsc = new Smsc();

  afterAll(async () => {
    killAll();
    await smsc.close();
    await database.drop();
  });

  it('binds once; when the holder is killed the other binds within 30 s, never two at once', {
    timeout: 120_000,
  }, async () => {
    const port = await smsc.listen();
    await database.create();
    const env = {
      DATABASE_URL: database.url,
      WAYBILL_PEPPER: 'smpp-takeover-pepper-0123',
      WAYBILL_ADMIN_TOKEN: ADMIN,
      WAYBILL_ACCESS_LOG: 'off',
      WAYBILL_CALLBACK_RELAY: 'off',
    };
    // One after the other: two starting at once on a busy machine may outlast the start timeout.
    const servers = [await serve(['--no-demo'], env), await serve(['--no-demo'], env)];
    const call = async (server: Served, method: string, path: string, body?: unknown) => {
      const res = await fetch(`${server.url}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${ADMIN}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await res.text();
      expect(res.status, text).toBeLessThan(300);
      return JSON.parse(text) as Record<string, unknown>;
    };
    const [first, second] = servers as [Served, Served];
    const account = (await call(first, 'POST', '/admin/v1/accounts', { name: 'Takeover' })) as {
      id: string;
      key: string;
      secret: string;
    };
    await call(first, 'POST', '/admin/v1/routes', {
      name: 'smsc',
      kind: 'smpp',
      smpp: { host: '127.0.0.1', port, systemId: 'waybill', password: 'pw' },
    });
    const ingest = (server: Served, id: string, carrierId: string) =>
      call(server, 'POST', `/admin/v1/accounts/${account.id}/messages`, {
        messages: [
          {
            id,
            channel: 'SMS',
            channelUserId: '447700900001',
            sms: { carrier: { route: 'smsc', messageId: carrierId } },
          },
        ],
      });
    const receiptOf = async (server: Served, id: string) => {
      const res = await fetch(
        `${server.url}/dlr?key=${account.key}&secret=${account.secret}&messageid=${id}`,
      );
      const [record] = (await res.json()) as { drStatuscode?: string }[];
      return record?.drStatuscode ?? null;
    };

    // Both read the route within 5 s; one binds.
    await until('a bind', () => smsc.bound.size === 1, 15_000);
    await until('the holder to log its bind', () => servers.some(hasBound), 5000);
    const holder = hasBound(first) ? first : second;
    const other = holder === first ? second : first;
    // The other has tried the lease meanwhile (every 5 s) and found it held.
    await sleep(6000);
    expect(smsc.events.binds).toBe(1);
    expect(hasBound(other)).toBe(false);
    const before = (await call(other, 'GET', '/admin/v1/routes/smsc')) as { status: { heldBy: string } };
    expect(before.status).toMatchObject({ state: 'bound' });
    await ingest(other, 'm-1', 'c-1');
    expect(await smsc.deliver({ esm_class: RECEIPT, short_message: receiptText('c-1', 'DELIVRD') })).toBe(0);
    expect(await receiptOf(other, 'm-1')).toBe('delivered');

    // The holder dies without a word: its lease has to run out.
    await holder.kill();
    const died = Date.now();
    await until('the other to bind', () => smsc.bound.size === 1 && smsc.events.binds === 2, TAKEOVER_MS);
    console.log(
      `takeover: the other instance bound ${((Date.now() - died) / 1000).toFixed(1)} s after the kill`,
    );
    expect(smsc.maxBound).toBe(1);
    // The simulator counts the bind when the request arrives; the process logs it once the answer is in.
    await until('the other to log its bind', () => hasBound(other), 5000);
    const after = (await call(other, 'GET', '/admin/v1/routes/smsc')) as { status: { heldBy: string } };
    expect(after.status).toMatchObject({ state: 'bound' });
    expect(after.status.heldBy).not.toBe(before.status.heldBy);

    // Receipts flow through the new holder: one matched, one parked until its message arrives.
    await ingest(other, 'm-2', 'c-2');
    expect(await smsc.deliver({ esm_class: RECEIPT, short_message: receiptText('c-2', 'UNDELIV') })).toBe(0);
    expect(await receiptOf(other, 'm-2')).toBe('failed');
    expect(
      await smsc.deliver({
        esm_class: RECEIPT,
        receipted_message_id: 'c-3',
        message_state: 2,
        short_message: '',
      }),
    ).toBe(0);
    await ingest(other, 'm-3', 'c-3');
    expect(await receiptOf(other, 'm-3')).toBe('delivered');

    await other.stop();
    expect(smsc.events.unbinds).toBe(1);
    expect(smsc.maxBound).toBe(1);
  });
});
