import type { LightMyRequestResponse } from 'fastify';
import { describe, expect, it } from 'vitest';
import { type EngineFixture, engines } from '../support/engines.js';
import { type CreatedAccount, type Harness, startHarness, useHarness } from '../support/http.js';

const CALLER = '10.0.0.7';
const TO = '447700900123';
const TO_2 = '447700900999';
const TO_3 = '12025550100';

const FAILURES = {
  2: { descr: 'Missing parameters', status: 400 },
  3: { descr: 'Invalid parameters', status: 400 },
  4: { descr: 'Invalid credentials', status: 401 },
  5: { descr: 'Unauthorized IP', status: 403 },
  9: { descr: 'Quota exceeded', status: 402 },
  11: { descr: 'System error', status: 500 },
  20: { descr: 'Dlr search not support', status: 403 },
  429: { descr: 'Too many requests', status: 429 },
} as const;

type Query = Record<string, string> | string;

function queryString(query: Query): string {
  return typeof query === 'string' ? query : new URLSearchParams(query).toString();
}

function getDlr(
  h: Harness,
  query: Query,
  options: { method?: 'GET' | 'HEAD' | 'POST' | 'PUT' | 'DELETE' | 'PATCH'; ip?: string } = {},
): Promise<LightMyRequestResponse> {
  return h.inject({
    method: options.method ?? 'GET',
    url: `/dlr?${queryString(query)}`,
    remoteAddress: options.ip ?? CALLER,
  });
}

const creds = (account: CreatedAccount, messageid = 'm-1') => ({
  key: account.key,
  secret: account.secret,
  messageid,
});

/** A secret of the right format that is not the account's. */
const wrongSecret = (account: CreatedAccount) => (account.secret === 'Wrong000' ? 'Wrong001' : 'Wrong000');

/**
 * Runs `fn` on a harness of its own whose store `fn` may close (closing it twice is an error on PostgreSQL, so
 * the shared per-test harness cannot be used for that).
 */
async function withOwnHarness(
  engine: EngineFixture,
  fn: (h: Harness, closeStore: () => Promise<void>) => Promise<void>,
): Promise<void> {
  const h = await startHarness(engine);
  let open = true;
  const closeStore = async () => {
    open = false;
    await h.store.close();
  };
  try {
    await fn(h, closeStore);
  } finally {
    await h.app.close();
    if (open) await h.store.close();
  }
}

function expectFailure(res: LightMyRequestResponse, code: keyof typeof FAILURES): void {
  expect(res.statusCode).toBe(FAILURES[code].status);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(res.json()).toStrictEqual({ code, descr: FAILURES[code].descr });
  expect(res.headers['cache-control']).toBe('no-store');
}

describe.each(engines())('$name: GET /dlr', (engine) => {
  const harness = useHarness(engine, { WAYBILL_LOCKOUT_FAILURES: '3', WAYBILL_LOCKOUT_SECONDS: '600' });

  async function accountWithSms(body: Record<string, unknown> = {}): Promise<CreatedAccount> {
    const account = await harness().createAccount(body);
    const res = await harness().ingest(account.id, [{ id: 'm-1', channel: 'SMS', channelUserId: TO }]);
    expect(res.statusCode).toBe(200);
    return account;
  }

  describe('success', () => {
    it('answers a message without a receipt with exactly the send fields', async () => {
      const h = harness();
      const account = await accountWithSms();
      const res = await getDlr(h, creds(account));
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.json()).toStrictEqual([
        { type: 'dlr', messageid: 'm-1', to: TO, status: '1', price: 0, counts: 1 },
      ]);
    });

    it('adds network, price and counts as ingested, and the receipt fields once a receipt is recorded', async () => {
      const h = harness();
      const account = await h.createAccount();
      await h.ingest(account.id, [
        {
          id: 'm-2',
          channel: 'SMS',
          channelUserId: TO,
          sms: { status: '0', network: '23410', price: 0.0475, counts: 2 },
        },
      ]);
      const before = await getDlr(h, creds(account, 'm-2'));
      expect(before.json()).toStrictEqual([
        { type: 'dlr', messageid: 'm-2', to: TO, status: '0', price: 0.0475, counts: 2, network: '23410' },
      ]);

      const applied = await h.receipts(account.id, [
        { messageId: 'm-2', drStatuscode: 'delivered', drErrcode: 0, drTime: '2026-11-22 10:00:05.007' },
      ]);
      expect(applied.json()).toMatchObject({ applied: 1 });
      const res = await getDlr(h, creds(account, 'm-2'));
      expect(res.statusCode).toBe(200);
      const [item] = res.json() as Record<string, unknown>[];
      expect(item).toStrictEqual({
        type: 'dlr',
        messageid: 'm-2',
        to: TO,
        status: '0',
        price: 0.0475,
        counts: 2,
        network: '23410',
        drStatus: 0,
        drStatuscode: 'delivered',
        drErrcode: '0',
        drTime: '2026-11-22 10:00:05.007',
      });
      expect(Object.keys(item ?? {}).sort()).toStrictEqual(
        [
          'type',
          'messageid',
          'to',
          'status',
          'price',
          'counts',
          'network',
          'drStatus',
          'drStatuscode',
          'drErrcode',
          'drTime',
        ].sort(),
      );
    });

    it('omits network when it is unknown, also with a receipt', async () => {
      const h = harness();
      const account = await accountWithSms();
      await h.receipts(account.id, [
        { messageId: 'm-1', drStatuscode: 'failed', drErrcode: '3', drTime: '2026-11-22T10:00:01Z' },
      ]);
      const [item] = (await getDlr(h, creds(account))).json() as Record<string, unknown>[];
      expect(item).not.toHaveProperty('network');
      expect(item).toStrictEqual({
        type: 'dlr',
        messageid: 'm-1',
        to: TO,
        status: '0',
        price: 0,
        counts: 1,
        drStatus: 400,
        drStatuscode: 'failed',
        drErrcode: '3',
        drTime: '2026-11-22 10:00:01.000',
      });
    });

    it.each([
      ['delivered', 0],
      ['accepted', 0],
      ['rejected', 400],
      ['failed', 400],
      ['expired', 400],
      ['deleted', 400],
      ['unknown', 400],
    ] as const)('derives drStatus from drStatuscode %s → %i', async (code, drStatus) => {
      const h = harness();
      const account = await accountWithSms();
      await h.receipts(account.id, [{ messageId: 'm-1', drStatuscode: code }]);
      const [item] = (await getDlr(h, creds(account))).json() as Record<string, unknown>[];
      expect(item).toMatchObject({ drStatuscode: code, drStatus, status: '0' });
      expect(typeof item?.drStatus).toBe('number');
    });

    it('writes drTime as yyyy-MM-dd HH:mm:ss.SSS in UTC, converting an offset', async () => {
      const h = harness();
      const account = await accountWithSms();
      await h.receipts(account.id, [
        { messageId: 'm-1', drStatuscode: 'delivered', drTime: '2026-11-22T12:30:45.5+02:00' },
      ]);
      const [item] = (await getDlr(h, creds(account))).json() as Record<string, unknown>[];
      expect(item?.drTime).toBe('2026-11-22 10:30:45.500');
      expect(item?.drTime).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}$/);
    });

    it('defaults drTime to the time the receipt arrived', async () => {
      const h = harness();
      const account = await accountWithSms();
      h.advance(1234);
      await h.receipts(account.id, [{ messageId: 'm-1', drStatuscode: 'accepted' }]);
      const [item] = (await getDlr(h, creds(account))).json() as Record<string, unknown>[];
      expect(item?.drTime).toBe('2026-11-22 10:00:01.234');
    });

    it('lists every recipient of a multi-recipient id in the order they were first ingested', async () => {
      const h = harness();
      const account = await h.createAccount();
      // Creation times and numbers both sort against ingestion order, so neither can pass for it.
      await h.ingest(account.id, [
        { id: 'multi', channel: 'SMS', channelUserId: TO_2, createdAt: '2026-11-22T09:00:00.000Z' },
      ]);
      await h.ingest(account.id, [
        { id: 'multi', channel: 'SMS', channelUserId: TO_3, createdAt: '2026-11-22T08:00:00.000Z' },
        { id: 'multi', channel: 'SMS', channelUserId: TO, createdAt: '2026-11-22T07:00:00.000Z' },
      ]);
      // A re-send of the first recipient does not move it.
      await h.ingest(account.id, [
        { id: 'multi', channel: 'SMS', channelUserId: TO_2, sms: { status: '0' } },
      ]);
      await h.receipts(account.id, [{ messageId: 'multi', to: TO_3, drStatuscode: 'delivered' }]);

      const items = (await getDlr(h, creds(account, 'multi'))).json() as Record<string, unknown>[];
      expect(items.map((i) => i.to)).toStrictEqual([TO_2, TO_3, TO]);
      expect(items.map((i) => i.status)).toStrictEqual(['0', '0', '1']);
      expect(items[1]).toHaveProperty('drStatus', 0);
      expect(items[0]).not.toHaveProperty('drStatus');
      expect(items[2]).not.toHaveProperty('drStatus');
    });

    it('never shows other channels or inbound messages', async () => {
      const h = harness();
      const account = await h.createAccount();
      await h.ingest(account.id, [
        { id: 'shared', channel: 'WHATSAPP', channelUserId: TO },
        { id: 'shared', channel: 'SMS', channelUserId: TO_2, direction: 'inbound' },
        { id: 'shared', channel: 'SMS', channelUserId: TO_3 },
        { id: 'wa-only', channel: 'VIBER', channelUserId: 'viber-user-1' },
        { id: 'in-only', channel: 'SMS', channelUserId: TO, direction: 'inbound' },
      ]);
      const shared = await getDlr(h, creds(account, 'shared'));
      expect((shared.json() as Record<string, unknown>[]).map((i) => i.to)).toStrictEqual([TO_3]);
      expect((await getDlr(h, creds(account, 'wa-only'))).json()).toStrictEqual([]);
      expect((await getDlr(h, creds(account, 'in-only'))).json()).toStrictEqual([]);
    });

    it('answers [] for an unknown id and for an id of another account', async () => {
      const h = harness();
      const mine = await h.createAccount();
      const other = await accountWithSms({ name: 'Other' });
      const unknown = await getDlr(h, creds(mine, 'nope'));
      expect(unknown.statusCode).toBe(200);
      expect(unknown.json()).toStrictEqual([]);
      const foreign = await getDlr(h, creds(mine, 'm-1'));
      expect(foreign.statusCode).toBe(200);
      expect(foreign.body).toBe(unknown.body);
      expect((await getDlr(h, creds(other))).json()).toHaveLength(1);
    });

    it('accepts a message id of 64 characters from the whole alphabet, and ignores unknown parameters', async () => {
      const h = harness();
      const account = await h.createAccount();
      const id = `Az09._:-${'x'.repeat(56)}`;
      await h.ingest(account.id, [{ id, channel: 'SMS', channelUserId: TO }]);
      const res = await getDlr(h, { ...creds(account, id), extra: 'whatever', Key: 'x' });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject([{ messageid: id }]);
    });
  });

  describe('failures', () => {
    it.each([
      ['no parameters at all', ''],
      ['key absent', 'secret=Abcdefgh&messageid=m-1'],
      ['secret absent', 'key=Abcdefgh&messageid=m-1'],
      ['messageid absent', 'key=Abcdefgh&secret=Abcdefgh'],
      ['key empty', 'key=&secret=Abcdefgh&messageid=m-1'],
      ['secret empty', 'key=Abcdefgh&secret=&messageid=m-1'],
      ['messageid empty', 'key=Abcdefgh&secret=Abcdefgh&messageid='],
      ['messageid without =', 'key=Abcdefgh&secret=Abcdefgh&messageid'],
      ['names in another case', 'KEY=Abcdefgh&Secret=Abcdefgh&MessageId=m-1'],
    ])('code 2 when %s', async (_name, query) => {
      expectFailure(await getDlr(harness(), query), 2);
    });

    it.each([
      ['key too short', 'key=Abcdefg&secret=Abcdefgh&messageid=m-1'],
      ['key too long', 'key=Abcdefghi&secret=Abcdefgh&messageid=m-1'],
      ['key not alphanumeric', 'key=Abcd-fgh&secret=Abcdefgh&messageid=m-1'],
      ['key with a non-ASCII letter', 'key=Abcdefg%C3%A9&secret=Abcdefgh&messageid=m-1'],
      ['secret malformed', 'key=Abcdefgh&secret=Abc%20efgh&messageid=m-1'],
      ['messageid over 64 characters', `key=Abcdefgh&secret=Abcdefgh&messageid=${'a'.repeat(65)}`],
      ['messageid with a bad character', 'key=Abcdefgh&secret=Abcdefgh&messageid=m%2F1'],
      ['messageid with a space', 'key=Abcdefgh&secret=Abcdefgh&messageid=m+1'],
      ['key given twice', 'key=Abcdefgh&key=Abcdefgh&secret=Abcdefgh&messageid=m-1'],
      ['secret given twice', 'key=Abcdefgh&secret=Abcdefgh&secret=Bbcdefgh&messageid=m-1'],
      ['messageid given twice', 'key=Abcdefgh&secret=Abcdefgh&messageid=m-1&messageid=m-1'],
    ])('code 3 when %s', async (_name, query) => {
      expectFailure(await getDlr(harness(), query), 3);
    });

    it('code 4 for an unknown key', async () => {
      const h = harness();
      const account = await accountWithSms();
      const otherKey = account.key === 'Unknown1' ? 'Unknown2' : 'Unknown1';
      const res = await getDlr(h, { ...creds(account), key: otherKey });
      expectFailure(res, 4);
      expect(res.headers['www-authenticate']).toBeUndefined();
    });

    it('code 4 for a wrong secret', async () => {
      const h = harness();
      const account = await accountWithSms();
      const res = await getDlr(h, { ...creds(account), secret: wrongSecret(account) });
      expectFailure(res, 4);
      expect(res.headers['www-authenticate']).toBeUndefined();
    });

    it('matches the key and the secret case-sensitively', async () => {
      const h = harness();
      const account = await accountWithSms();
      const flip = (s: string) =>
        [...s].map((c) => (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase())).join('');
      if (flip(account.key) !== account.key) {
        expectFailure(await getDlr(h, { ...creds(account), key: flip(account.key) }), 4);
      }
      if (flip(account.secret) !== account.secret) {
        expectFailure(await getDlr(h, { ...creds(account), secret: flip(account.secret) }), 4);
      }
    });

    it('code 5 for a caller outside the whitelist, with the right secret', async () => {
      const h = harness();
      const account = await accountWithSms({ ipWhitelist: ['192.0.2.0/24'] });
      expectFailure(await getDlr(h, creds(account)), 5);
      expect((await getDlr(h, creds(account), { ip: '192.0.2.44' })).statusCode).toBe(200);
    });

    it('checks the whitelist before the secret: a wrong secret from outside it is 5 and locks nothing', async () => {
      const h = harness();
      const account = await accountWithSms({ ipWhitelist: ['192.0.2.0/24'] });
      for (let i = 0; i < 5; i++) {
        expectFailure(await getDlr(h, { ...creds(account), secret: wrongSecret(account) }), 5);
      }
      expect((await getDlr(h, creds(account), { ip: '192.0.2.1' })).statusCode).toBe(200);
    });

    it('code 429 with Retry-After when the key is locked out, even to the right secret', async () => {
      const h = harness();
      const account = await accountWithSms();
      for (let i = 0; i < 3; i++) {
        expectFailure(await getDlr(h, { ...creds(account), secret: wrongSecret(account) }), 4);
      }
      const locked = await getDlr(h, creds(account));
      expectFailure(locked, 429);
      expect(locked.headers['retry-after']).toBe('600');
      const lockedWrong = await getDlr(h, { ...creds(account), secret: wrongSecret(account) });
      expectFailure(lockedWrong, 429);
      expect(lockedWrong.headers['retry-after']).toBe('600');
    });

    it('code 20 when the account has DLR query disabled', async () => {
      const h = harness();
      const account = await accountWithSms();
      const patched = await h.admin('PATCH', `/admin/v1/accounts/${account.id}`, { dlrQueryEnabled: false });
      expect(patched.statusCode).toBe(200);
      expectFailure(await getDlr(h, creds(account)), 20);
      // For an id that does not exist too: the refusal does not depend on the data.
      expectFailure(await getDlr(h, creds(account, 'nope')), 20);
    });

    it('code 9 when balance + creditLimit < 0, and not when it is exactly 0', async () => {
      const h = harness();
      const over = await accountWithSms({ balance: -10.5, creditLimit: 10 });
      expectFailure(await getDlr(h, creds(over)), 9);
      const edge = await accountWithSms({ name: 'Edge', balance: -10, creditLimit: 10 });
      expect((await getDlr(h, creds(edge))).statusCode).toBe(200);
      const credit = await accountWithSms({ name: 'Credit', balance: -5, creditLimit: 10 });
      expect((await getDlr(h, creds(credit))).statusCode).toBe(200);
    });

    it('code 11 with HTTP 500 and no internals when storage is unavailable', async () => {
      await withOwnHarness(engine, async (h, closeStore) => {
        const account = await h.createAccount();
        await closeStore();
        const res = await getDlr(h, creds(account));
        expectFailure(res, 11);
        expect(res.body).toBe('{"code":11,"descr":"System error"}');
        expect(res.headers['x-request-id']).toBeTruthy();
      });
    });
  });

  describe('the order of the checks', () => {
    it('missing beats malformed and repeated (2 before 3)', async () => {
      const h = harness();
      expectFailure(await getDlr(h, 'key=bad!&secret=&messageid=m-1'), 2);
      expectFailure(await getDlr(h, `key=bad&messageid=${'x'.repeat(80)}`), 2);
      expectFailure(await getDlr(h, 'key=Abcdefgh&key=Bbcdefgh&secret=Abcdefgh'), 2);
    });

    it('malformed beats an unknown key (3 before 4), and a repeated known key is 3', async () => {
      const h = harness();
      const account = await accountWithSms();
      expectFailure(await getDlr(h, { key: 'Unknown1', secret: 'Abcdefgh', messageid: 'bad/id' }), 3);
      expectFailure(await getDlr(h, { ...creds(account), messageid: 'bad id' }), 3);
      expectFailure(
        await getDlr(h, `key=${account.key}&key=${account.key}&secret=${account.secret}&messageid=m-1`),
        3,
      );
    });

    it('malformed beats the whitelist, the lockout and the disabled query', async () => {
      const h = harness();
      const account = await accountWithSms({ ipWhitelist: ['192.0.2.1'], balance: -1 });
      expectFailure(await getDlr(h, { ...creds(account), messageid: 'bad id' }), 3);
    });

    it('an unknown key beats the whitelist (4 before 5): nothing is said about other keys', async () => {
      const h = harness();
      expectFailure(await getDlr(h, { key: 'Unknown1', secret: 'Abcdefgh', messageid: 'm-1' }), 4);
    });

    it('the whitelist beats the lockout (5 before 429)', async () => {
      const h = harness();
      const account = await accountWithSms({ ipWhitelist: ['10.0.0.7'] });
      for (let i = 0; i < 3; i++) await getDlr(h, { ...creds(account), secret: wrongSecret(account) });
      expectFailure(await getDlr(h, creds(account)), 429);
      expectFailure(await getDlr(h, creds(account), { ip: '10.0.0.8' }), 5);
    });

    it('the lockout beats a disabled query and the quota', async () => {
      const h = harness();
      const account = await accountWithSms({ dlrQueryEnabled: false, balance: -1 });
      for (let i = 0; i < 3; i++) {
        expectFailure(await getDlr(h, { ...creds(account), secret: wrongSecret(account) }), 4);
      }
      expectFailure(await getDlr(h, creds(account)), 429);
    });

    it('a wrong secret beats a disabled query and the quota (4 before 20 and 9)', async () => {
      const h = harness();
      const account = await accountWithSms({ dlrQueryEnabled: false, balance: -1 });
      expectFailure(await getDlr(h, { ...creds(account), secret: wrongSecret(account) }), 4);
    });

    it('a disabled query beats the quota (20 before 9)', async () => {
      const h = harness();
      const account = await accountWithSms({ dlrQueryEnabled: false, balance: -100, creditLimit: 1 });
      expectFailure(await getDlr(h, creds(account)), 20);
    });

    it('a broken store beats everything after the parameters, yet never the parameter checks', async () => {
      await withOwnHarness(engine, async (h, closeStore) => {
        await closeStore();
        expectFailure(await getDlr(h, 'key=Abcdefgh&secret=Abcdefgh'), 2);
        expectFailure(await getDlr(h, { key: 'Abcdefgh', secret: 'Abcdefgh', messageid: 'a b' }), 3);
        expectFailure(await getDlr(h, { key: 'Abcdefgh', secret: 'Abcdefgh', messageid: 'm-1' }), 11);
      });
    });
  });

  describe('HTTP', () => {
    it('sends Cache-Control: no-store on successes and on every kind of failure', async () => {
      const h = harness();
      const account = await accountWithSms();
      for (const res of [
        await getDlr(h, creds(account)),
        await getDlr(h, ''),
        await getDlr(h, { ...creds(account), secret: wrongSecret(account) }),
        await getDlr(h, creds(account), { method: 'POST' }),
        await h.inject({ url: `/dlr?x=${'a'.repeat(9000)}`, remoteAddress: CALLER }),
      ]) {
        expect(res.headers['cache-control']).toBe('no-store');
      }
    });

    it('answers HEAD like GET, without a body', async () => {
      const h = harness();
      const account = await accountWithSms();
      const get = await getDlr(h, creds(account));
      const head = await getDlr(h, creds(account), { method: 'HEAD' });
      expect(head.statusCode).toBe(200);
      expect(head.body).toBe('');
      expect(head.headers['content-type']).toBe(get.headers['content-type']);
      expect(head.headers['cache-control']).toBe('no-store');
      expect(head.headers['content-length']).toBe(get.headers['content-length']);

      const failed = await getDlr(h, { ...creds(account), secret: wrongSecret(account) }, { method: 'HEAD' });
      expect(failed.statusCode).toBe(401);
      expect(failed.body).toBe('');
      expect(failed.headers['cache-control']).toBe('no-store');
    });

    it.each(['POST', 'PUT', 'DELETE', 'PATCH'] as const)(
      'answers %s with 405, Allow: GET, HEAD and a problem body',
      async (method) => {
        const h = harness();
        const account = await accountWithSms();
        const res = await getDlr(h, creds(account), { method });
        expect(res.statusCode).toBe(405);
        expect(res.headers.allow).toBe('GET, HEAD');
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(res.headers['cache-control']).toBe('no-store');
        const body = res.json();
        expect(body).toMatchObject({
          type: 'about:blank',
          title: 'Method Not Allowed',
          status: 405,
          code: 'method_not_allowed',
          requestId: res.headers['x-request-id'],
        });
        expect(typeof body.detail).toBe('string');
        expect(res.body).not.toContain(account.secret);
      },
    );

    it('refuses a request line over 8 KiB with a 414 problem, and accepts one just under', async () => {
      const h = harness();
      const account = await accountWithSms();
      const base = `/dlr?${new URLSearchParams(creds(account))}&pad=`;
      // "GET " + url + " HTTP/1.1" is the request line.
      const fits = `${base}${'p'.repeat(8192 - 'GET  HTTP/1.1'.length - base.length)}`;
      const over = `${fits}p`;
      const ok = await h.inject({ url: fits, remoteAddress: CALLER });
      expect(ok.statusCode).toBe(200);
      const res = await h.inject({ url: over, remoteAddress: CALLER });
      expect(res.statusCode).toBe(414);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.json()).toMatchObject({ status: 414, code: 'uri_too_long', title: 'URI Too Long' });
      expect(res.body).not.toContain(account.secret);
      expect(res.body).not.toContain(account.key);
    });
  });
});

describe.each(engines())('$name: GET /dlr rate limit', (engine) => {
  const harness = useHarness(engine, { WAYBILL_RATE_BURST: '2', WAYBILL_RATE_PER_SECOND: '1' });

  it('code 429 with Retry-After when the account is over its rate', async () => {
    const h = harness();
    const account = await h.createAccount();
    expect((await getDlr(h, creds(account))).statusCode).toBe(200);
    expect((await getDlr(h, creds(account))).statusCode).toBe(200);
    const res = await getDlr(h, creds(account));
    expectFailure(res, 429);
    expect(res.headers['retry-after']).toBe('1');
  });

  it('a wrong secret beats the rate limit (4 before 429), and the rate limit beats 20 and 9', async () => {
    const h = harness();
    const account = await h.createAccount({ dlrQueryEnabled: false, balance: -1 });
    expectFailure(await getDlr(h, creds(account)), 20);
    expectFailure(await getDlr(h, creds(account)), 20);
    expectFailure(await getDlr(h, { ...creds(account), secret: wrongSecret(account) }), 4);
    expectFailure(await getDlr(h, creds(account)), 429);
    await h.admin('PATCH', `/admin/v1/accounts/${account.id}`, { dlrQueryEnabled: true });
    expectFailure(await getDlr(h, creds(account)), 429);
    h.advance(1000);
    expectFailure(await getDlr(h, creds(account)), 9);
  });
});
