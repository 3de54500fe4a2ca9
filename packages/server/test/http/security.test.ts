import type { LightMyRequestResponse } from 'fastify';
import { describe, expect, it } from 'vitest';
import { type EngineFixture, engines } from '../support/engines.js';
import {
  ADMIN_TOKEN,
  basic,
  type CreatedAccount,
  type Harness,
  startHarness,
  useHarness,
} from '../support/http.js';

const CALLER = '10.0.0.7';
const TO = '447700900123';

interface Call {
  ip?: string;
  headers?: Record<string, string>;
  method?: 'GET' | 'HEAD' | 'POST';
}

function getDlr(h: Harness, query: Record<string, string>, call: Call = {}): Promise<LightMyRequestResponse> {
  return h.inject({
    method: call.method ?? 'GET',
    url: `/dlr?${new URLSearchParams(query)}`,
    remoteAddress: call.ip ?? CALLER,
    ...(call.headers ? { headers: call.headers } : {}),
  });
}

const creds = (account: CreatedAccount, messageid = 'm-1') => ({
  key: account.key,
  secret: account.secret,
  messageid,
});

const wrongSecret = (account: CreatedAccount) => (account.secret === 'Wrong000' ? 'Wrong001' : 'Wrong000');
const wrong = (account: CreatedAccount) => ({ ...creds(account), secret: wrongSecret(account) });

/** A harness of its own, for a configuration of one test or a store the test closes (never twice). */
async function withOwnHarness(
  engine: EngineFixture,
  env: Record<string, string>,
  fn: (h: Harness, closeStore: () => Promise<void>) => Promise<void>,
): Promise<void> {
  const h = await startHarness(engine, env);
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

/** The parsed pino lines captured so far. */
const logLines = (h: Harness): Record<string, unknown>[] =>
  h.logs.flatMap((chunk) =>
    chunk
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => JSON.parse(line) as Record<string, unknown>),
  );
const accessLines = (h: Harness) => logLines(h).filter((line) => line.msg === 'request');

describe.each(engines())('$name: IP whitelist', (engine) => {
  const harness = useHarness(engine);

  async function statusFrom(whitelist: string[], ip: string): Promise<number> {
    const h = harness();
    const account = await h.createAccount({ ipWhitelist: whitelist });
    const res = await getDlr(h, creds(account), { ip });
    if (res.statusCode !== 200) expect(res.json()).toStrictEqual({ code: 5, descr: 'Unauthorized IP' });
    return res.statusCode;
  }

  it.each([
    ['an IPv4 address', ['10.1.2.3'], '10.1.2.3', 200],
    ['another IPv4 address', ['10.1.2.3'], '10.1.2.4', 403],
    ['an IPv4 range, first address', ['10.1.0.0/16'], '10.1.0.0', 200],
    ['an IPv4 range, last address', ['10.1.0.0/16'], '10.1.255.255', 200],
    ['outside an IPv4 range', ['10.1.0.0/16'], '10.2.0.1', 403],
    ['a /32', ['10.1.2.3/32'], '10.1.2.3', 200],
    ['0.0.0.0/0', ['0.0.0.0/0'], '203.0.113.9', 200],
    ['an IPv6 address', ['2001:db8::1'], '2001:db8::1', 200],
    ['an IPv6 address written out in full', ['2001:db8::1'], '2001:0db8:0000:0000:0000:0000:0000:0001', 200],
    ['another IPv6 address', ['2001:db8::1'], '2001:db8::2', 403],
    ['an IPv6 range', ['2001:db8:abcd::/48'], '2001:db8:abcd:12::7', 200],
    ['outside an IPv6 range', ['2001:db8:abcd::/48'], '2001:db8:abce::1', 403],
    ['an IPv4-mapped caller against an IPv4 address', ['10.1.2.3'], '::ffff:10.1.2.3', 200],
    ['an IPv4-mapped caller against an IPv4 range', ['10.1.0.0/16'], '::ffff:10.1.9.9', 200],
    ['an IPv4-mapped caller outside the IPv4 entries', ['10.1.2.3'], '::ffff:10.1.2.4', 403],
    ['an IPv4 caller against IPv6 entries only', ['2001:db8::/32'], '10.1.2.3', 403],
    ['an IPv6 caller against IPv4 entries only', ['10.0.0.0/8'], '2001:db8::1', 403],
    ['the second of several entries', ['192.0.2.1', '2001:db8::/32', '10.1.0.0/16'], '10.1.7.7', 200],
    ['loopback not listed', ['192.0.2.1'], '127.0.0.1', 403],
    ['an empty whitelist, any IPv4 caller', [], '203.0.113.9', 200],
    ['an empty whitelist, any IPv6 caller', [], '2001:db8::99', 200],
  ])('%s', async (_name, whitelist, ip, status) => {
    expect(await statusFrom(whitelist, ip)).toBe(status);
  });

  it('applies a whitelist changed with PATCH to the next request', async () => {
    const h = harness();
    const account = await h.createAccount();
    expect((await getDlr(h, creds(account))).statusCode).toBe(200);
    await h.admin('PATCH', `/admin/v1/accounts/${account.id}`, { ipWhitelist: ['192.0.2.0/24'] });
    expect((await getDlr(h, creds(account))).statusCode).toBe(403);
    await h.admin('PATCH', `/admin/v1/accounts/${account.id}`, { ipWhitelist: [] });
    expect((await getDlr(h, creds(account))).statusCode).toBe(200);
  });

  it('applies the whitelist to /messages too, with a problem body', async () => {
    const h = harness();
    const account = await h.createAccount({ ipWhitelist: ['192.0.2.1'] });
    const res = await h.inject({
      url: '/messages?messageIds=m-1',
      remoteAddress: CALLER,
      headers: { authorization: basic(account.key, account.secret) },
    });
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({ status: 403, code: 'ip_not_allowed' });
  });
});

describe.each(engines())('$name: WAYBILL_TRUST_PROXY', (engine) => {
  const forwarded = (h: Harness, account: CreatedAccount, from: string, xff: string) =>
    getDlr(h, creds(account), { ip: from, headers: { 'x-forwarded-for': xff } });

  it('ignores X-Forwarded-For by default', async () => {
    await withOwnHarness(engine, {}, async (h) => {
      const listed = await h.createAccount({ ipWhitelist: ['192.0.2.1'] });
      expect((await forwarded(h, listed, CALLER, '192.0.2.1')).statusCode).toBe(403);
      const proxy = await h.createAccount({ name: 'Proxy', ipWhitelist: [CALLER] });
      expect((await forwarded(h, proxy, CALLER, '192.0.2.1')).statusCode).toBe(200);
    });
  });

  it('believes X-Forwarded-For when set to true', async () => {
    await withOwnHarness(engine, { WAYBILL_TRUST_PROXY: 'true' }, async (h) => {
      const listed = await h.createAccount({ ipWhitelist: ['192.0.2.1'] });
      expect((await forwarded(h, listed, CALLER, '192.0.2.1')).statusCode).toBe(200);
      const proxy = await h.createAccount({ name: 'Proxy', ipWhitelist: [CALLER] });
      expect((await forwarded(h, proxy, CALLER, '192.0.2.1')).statusCode).toBe(403);
      // Without the header, the socket address is the caller.
      expect((await getDlr(h, creds(proxy))).statusCode).toBe(200);
    });
  });

  it('believes only the listed proxies when given addresses and ranges', async () => {
    await withOwnHarness(engine, { WAYBILL_TRUST_PROXY: '10.0.0.0/8, 172.16.0.1' }, async (h) => {
      const listed = await h.createAccount({ ipWhitelist: ['192.0.2.1'] });
      expect((await forwarded(h, listed, CALLER, '192.0.2.1')).statusCode).toBe(200);
      expect((await forwarded(h, listed, '172.16.0.1', '192.0.2.1')).statusCode).toBe(200);
      expect((await forwarded(h, listed, '198.51.100.5', '192.0.2.1')).statusCode).toBe(403);
    });
  });

  it('believes as many hops as the count says', async () => {
    await withOwnHarness(engine, { WAYBILL_TRUST_PROXY: '1' }, async (h) => {
      const listed = await h.createAccount({ ipWhitelist: ['192.0.2.1'] });
      // One trusted hop: the last address of the header is the caller; one further back is not believed.
      expect((await forwarded(h, listed, CALLER, '192.0.2.1')).statusCode).toBe(200);
      expect((await forwarded(h, listed, CALLER, '192.0.2.1, 198.51.100.5')).statusCode).toBe(403);
    });
  });

  it('writes the believed caller address in the access log', async () => {
    await withOwnHarness(engine, { WAYBILL_TRUST_PROXY: 'true' }, async (h) => {
      const account = await h.createAccount();
      h.logs.length = 0;
      await forwarded(h, account, CALLER, '192.0.2.1');
      expect(accessLines(h)).toMatchObject([{ ip: '192.0.2.1' }]);
    });
  });
});

describe.each(engines())('$name: lockout', (engine) => {
  const harness = useHarness(engine, { WAYBILL_LOCKOUT_FAILURES: '3', WAYBILL_LOCKOUT_SECONDS: '60' });

  async function lock(h: Harness, account: CreatedAccount): Promise<void> {
    for (let i = 0; i < 3; i++) expect((await getDlr(h, wrong(account))).json()).toMatchObject({ code: 4 });
  }

  it('locks the key after N failures: 429 even to the right secret, Retry-After the seconds left', async () => {
    const h = harness();
    const account = await h.createAccount();
    expect((await getDlr(h, wrong(account))).statusCode).toBe(401);
    expect((await getDlr(h, wrong(account))).statusCode).toBe(401);
    expect((await getDlr(h, creds(account))).statusCode).toBe(200);
    await lock(h, account);
    const res = await getDlr(h, creds(account));
    expect(res.statusCode).toBe(429);
    expect(res.json()).toStrictEqual({ code: 429, descr: 'Too many requests' });
    expect(res.headers['retry-after']).toBe('60');
    expect(res.headers.ratelimit).toBeUndefined();
    h.advance(20_500);
    expect((await getDlr(h, creds(account))).headers['retry-after']).toBe('40');
  });

  it('does not extend the lock for attempts made while locked', async () => {
    const h = harness();
    const account = await h.createAccount();
    await lock(h, account);
    for (let i = 0; i < 5; i++) {
      h.advance(10_000);
      expect((await getDlr(h, wrong(account))).statusCode).toBe(429);
    }
    expect((await getDlr(h, creds(account))).headers['retry-after']).toBe('10');
    h.advance(10_000);
    expect((await getDlr(h, creds(account))).statusCode).toBe(200);
  });

  it('expires, and starts counting afresh', async () => {
    const h = harness();
    const account = await h.createAccount();
    await lock(h, account);
    h.advance(59_999);
    const last = await getDlr(h, creds(account));
    expect(last.statusCode).toBe(429);
    expect(last.headers['retry-after']).toBe('1');
    h.advance(1);
    expect((await getDlr(h, wrong(account))).statusCode).toBe(401);
    expect((await getDlr(h, creds(account))).statusCode).toBe(200);
  });

  it('is reset by a success', async () => {
    const h = harness();
    const account = await h.createAccount();
    for (let round = 0; round < 3; round++) {
      expect((await getDlr(h, wrong(account))).statusCode).toBe(401);
      expect((await getDlr(h, wrong(account))).statusCode).toBe(401);
      expect((await getDlr(h, creds(account))).statusCode).toBe(200);
    }
  });

  it('does not add up failures outside the window', async () => {
    const h = harness();
    const account = await h.createAccount();
    await getDlr(h, wrong(account));
    h.advance(30_000);
    await getDlr(h, wrong(account));
    h.advance(30_000);
    // The first failure is now 60 s old: out of the window.
    expect((await getDlr(h, wrong(account))).statusCode).toBe(401);
    expect((await getDlr(h, creds(account))).statusCode).toBe(200);
  });

  it('adds up failures inside the window', async () => {
    const h = harness();
    const account = await h.createAccount();
    await getDlr(h, wrong(account));
    h.advance(59_000);
    await getDlr(h, wrong(account));
    await getDlr(h, wrong(account));
    expect((await getDlr(h, creds(account))).statusCode).toBe(429);
  });

  it('is cleared by rotating the secret; the old secret then stops working', async () => {
    const h = harness();
    const account = await h.createAccount();
    await lock(h, account);
    expect((await getDlr(h, creds(account))).statusCode).toBe(429);
    const rotated = await h.admin('POST', `/admin/v1/accounts/${account.id}/secret`);
    expect(rotated.statusCode).toBe(200);
    const { secret } = rotated.json() as { secret: string };
    expect(secret).toMatch(/^[A-Za-z0-9]{8}$/);
    expect(secret).not.toBe(account.secret);
    const fresh = { ...account, secret };
    expect((await getDlr(h, creds(fresh))).statusCode).toBe(200);
    const old = await getDlr(h, creds(account));
    expect(old.statusCode).toBe(401);
    expect(old.json()).toStrictEqual({ code: 4, descr: 'Invalid credentials' });
  });

  it('locks one key only', async () => {
    const h = harness();
    const victim = await h.createAccount();
    const bystander = await h.createAccount({ name: 'Bystander' });
    await lock(h, victim);
    expect((await getDlr(h, creds(bystander))).statusCode).toBe(200);
  });

  it('counts failures on every query endpoint towards one lock', async () => {
    const h = harness();
    const account = await h.createAccount();
    const badBasic = { authorization: basic(account.key, wrongSecret(account)) };
    expect((await h.inject({ url: '/messages?messageIds=m-1', headers: badBasic })).statusCode).toBe(401);
    expect((await h.inject({ url: '/messages?messageIds=m-1', headers: badBasic })).statusCode).toBe(401);
    expect((await getDlr(h, wrong(account))).statusCode).toBe(401);
    const res = await h.inject({
      url: '/messages?messageIds=m-1',
      headers: { authorization: basic(account.key, account.secret) },
    });
    expect(res.statusCode).toBe(429);
    expect(res.json()).toMatchObject({ code: 'locked_out', status: 429 });
    expect(res.headers['retry-after']).toBe('60');
    expect((await getDlr(h, creds(account))).statusCode).toBe(429);
  });

  it('is not counted for unknown keys or malformed requests', async () => {
    const h = harness();
    const account = await h.createAccount();
    for (let i = 0; i < 5; i++) {
      expect((await getDlr(h, { ...wrong(account), messageid: 'bad id' })).statusCode).toBe(400);
      expect((await getDlr(h, { ...wrong(account), key: 'Unknown1' })).statusCode).toBe(401);
    }
    expect((await getDlr(h, creds(account))).statusCode).toBe(200);
  });
});

describe.each(engines())('$name: rate limit', (engine) => {
  const harness = useHarness(engine, { WAYBILL_RATE_BURST: '3', WAYBILL_RATE_PER_SECOND: '1' });

  it('sends RateLimit-Policy and RateLimit on authenticated responses, and 429 with Retry-After when empty', async () => {
    const h = harness();
    const account = await h.createAccount();
    const seen: (string | undefined)[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await getDlr(h, creds(account));
      expect(res.statusCode).toBe(200);
      expect(res.headers['ratelimit-policy']).toBe('"burst";q=3;w=3');
      seen.push(res.headers.ratelimit as string | undefined);
    }
    expect(seen).toStrictEqual(['"burst";r=2;t=1', '"burst";r=1;t=1', '"burst";r=0;t=1']);
    const refused = await getDlr(h, creds(account));
    expect(refused.statusCode).toBe(429);
    expect(refused.json()).toStrictEqual({ code: 429, descr: 'Too many requests' });
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.headers['ratelimit-policy']).toBe('"burst";q=3;w=3');
    expect(refused.headers.ratelimit).toBe('"burst";r=0;t=1');
  });

  it('sends the headers on authenticated refusals (20, 9) but not on unauthenticated ones', async () => {
    const h = harness();
    const disabled = await h.createAccount({ dlrQueryEnabled: false });
    const res = await getDlr(h, creds(disabled));
    expect(res.json()).toMatchObject({ code: 20 });
    expect(res.headers.ratelimit).toBe('"burst";r=2;t=1');
    const broke = await h.createAccount({ name: 'Broke', balance: -1 });
    expect((await getDlr(h, creds(broke))).headers.ratelimit).toBe('"burst";r=2;t=1');
    for (const refused of [
      await getDlr(h, wrong(disabled)),
      await getDlr(h, { ...creds(disabled), key: 'Unknown1' }),
      await getDlr(h, { ...creds(disabled), messageid: '' }),
    ]) {
      expect(refused.statusCode).toBeGreaterThanOrEqual(400);
      expect(refused.headers.ratelimit).toBeUndefined();
      expect(refused.headers['ratelimit-policy']).toBeUndefined();
    }
  });

  it('takes no token for refused requests', async () => {
    const h = harness();
    const account = await h.createAccount();
    const listedElsewhere = await h.createAccount({ name: 'Elsewhere', ipWhitelist: ['192.0.2.1'] });
    for (let i = 0; i < 2; i++) {
      expect((await getDlr(h, wrong(account))).statusCode).toBe(401);
      expect((await getDlr(h, { ...creds(account), messageid: 'bad id' })).statusCode).toBe(400);
      expect((await getDlr(h, creds(listedElsewhere))).statusCode).toBe(403);
    }
    for (let i = 0; i < 3; i++) expect((await getDlr(h, creds(account))).statusCode).toBe(200);
    expect((await getDlr(h, creds(account))).statusCode).toBe(429);
    // The refused caller did not spend the listed account's tokens either.
    const fromListed = await getDlr(h, creds(listedElsewhere), { ip: '192.0.2.1' });
    expect(fromListed.headers.ratelimit).toBe('"burst";r=2;t=1');
  });

  it('refills with the clock, up to the burst', async () => {
    const h = harness();
    const account = await h.createAccount();
    for (let i = 0; i < 3; i++) await getDlr(h, creds(account));
    expect((await getDlr(h, creds(account))).statusCode).toBe(429);
    h.advance(999);
    expect((await getDlr(h, creds(account))).statusCode).toBe(429);
    h.advance(1);
    const one = await getDlr(h, creds(account));
    expect(one.statusCode).toBe(200);
    expect(one.headers.ratelimit).toBe('"burst";r=0;t=1');
    h.advance(60_000);
    const full = await getDlr(h, creds(account));
    expect(full.headers.ratelimit).toBe('"burst";r=2;t=1');
  });

  it('keeps one bucket per account, shared by all query endpoints', async () => {
    const h = harness();
    const account = await h.createAccount();
    const other = await h.createAccount({ name: 'Other' });
    const auth = { authorization: basic(account.key, account.secret) };
    expect((await h.inject({ url: '/messages?messageIds=m-1', headers: auth })).statusCode).toBe(200);
    expect(
      (await h.inject({ url: '/api/v1/contacts/messages?messageIds=m-1', headers: auth })).statusCode,
    ).toBe(200);
    expect((await getDlr(h, creds(account))).headers.ratelimit).toBe('"burst";r=0;t=1');
    const limited = await h.inject({ url: '/messages?messageIds=m-1', headers: auth });
    expect(limited.statusCode).toBe(429);
    expect(limited.json()).toMatchObject({ code: 'rate_limited' });
    expect(limited.headers['retry-after']).toBe('1');
    expect((await getDlr(h, creds(other))).statusCode).toBe(200);
  });

  it('states a window of ceil(burst / rate) and a Retry-After for a fractional rate', async () => {
    await withOwnHarness(engine, { WAYBILL_RATE_BURST: '2', WAYBILL_RATE_PER_SECOND: '0.5' }, async (h) => {
      const account = await h.createAccount();
      const first = await getDlr(h, creds(account));
      expect(first.headers['ratelimit-policy']).toBe('"burst";q=2;w=4');
      expect(first.headers.ratelimit).toBe('"burst";r=1;t=2');
      await getDlr(h, creds(account));
      const refused = await getDlr(h, creds(account));
      expect(refused.statusCode).toBe(429);
      expect(refused.headers['retry-after']).toBe('2');
    });
  });

  it('sends no RateLimit headers and never refuses with WAYBILL_RATE_PER_SECOND=0', async () => {
    await withOwnHarness(engine, { WAYBILL_RATE_PER_SECOND: '0', WAYBILL_RATE_BURST: '1' }, async (h) => {
      const account = await h.createAccount();
      for (let i = 0; i < 10; i++) {
        const res = await getDlr(h, creds(account));
        expect(res.statusCode).toBe(200);
        expect(res.headers.ratelimit).toBeUndefined();
        expect(res.headers['ratelimit-policy']).toBeUndefined();
      }
    });
  });
});

describe.each(engines())('$name: secrets stay secret', (engine) => {
  const harness = useHarness(engine);

  it('never writes the key, the secret, the admin token or Authorization into logs or error bodies', async () => {
    const h = harness();
    const account = await h.createAccount();
    await h.ingest(account.id, [{ id: 'm-1', channel: 'SMS', channelUserId: TO }]);
    const other = await h.createAccount({ name: 'Listed', ipWhitelist: ['192.0.2.1'] });
    const { key, secret } = account;
    const auth = basic(key, secret);
    const badAuth = basic(key, 'Zz9Zz9Zz');
    const q = `key=${key}&secret=${secret}`;
    h.logs.length = 0;

    const bodies: LightMyRequestResponse[] = [];
    const send = async (options: Parameters<Harness['inject']>[0]) => {
      const res = await h.inject(options);
      bodies.push(res);
      return res;
    };
    await send({ url: `/dlr?${q}&messageid=m-1` });
    await send({ url: `/dlr?${q}&messageid=bad%20id` });
    await send({ url: `/dlr?key=${key}&secret=Zz9Zz9Zz&messageid=m-1` });
    await send({ url: `/dlr?key=${key}&key=${key}&secret=${secret}&messageid=m-1` });
    await send({ url: `/dlr?%6Bey=${key}&%73ecret=${secret}&messageid=m-1` });
    await send({ url: `/dlr?key=${other.key}&secret=${other.secret}&messageid=m-1` });
    await send({ method: 'POST', url: `/dlr?${q}&messageid=m-1`, payload: { key, secret } });
    await send({ url: `/dlr?${q}&messageid=m-1&pad=${'p'.repeat(9000)}` });
    await send({ url: `/nowhere?${q}` });
    await send({ url: '/messages?messageIds=m-1', headers: { authorization: auth } });
    await send({ url: '/messages?messageIds=m-1', headers: { authorization: badAuth } });
    await send({ url: '/messages?messageIds=bad%20id', headers: { authorization: auth } });
    await send({ url: `/messages?${q}&messageIds=m-1` });
    await send({ url: `/messages?key=${key}&secret=${secret}x` });
    await send({ url: '/messages?channel=SMS', headers: { authorization: `Basic ${secret}` } });
    await send({ url: `/api/v1/contacts/messages?${q}&channel=NOPE&channelUserId=1` });
    await send({ url: '/api/v1/contacts/messages?channel=SMS', headers: { authorization: auth } });
    await send({ url: '/admin/v1/accounts/nope', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    await send({ url: `/admin/v1/accounts/${account.id}`, headers: { authorization: `Bearer ${secret}` } });
    await send({
      method: 'POST',
      url: '/admin/v1/accounts',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      payload: `{"name": "${secret}", "key": "${key}"`,
    });
    await send({
      method: 'POST',
      url: '/admin/v1/accounts',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      payload: { name: 'x', key, secret, ipWhitelist: [secret] },
    });

    expect(bodies.some((r) => r.statusCode === 200)).toBe(true);
    expect(accessLines(h)).toHaveLength(bodies.length);
    const forbidden = [key, secret, other.key, other.secret, ADMIN_TOKEN, auth.slice(6), badAuth.slice(6)];
    const everything = [...h.logs, ...bodies.filter((r) => r.statusCode !== 200).map((r) => r.body)];
    for (const text of everything) {
      for (const value of forbidden) expect(text).not.toContain(value);
      expect(text.toLowerCase()).not.toContain('authorization');
    }
    for (const res of bodies) {
      for (const [name, value] of Object.entries(res.headers)) {
        if (name === 'www-authenticate') continue;
        for (const v of forbidden) expect(String(value)).not.toContain(v);
      }
    }
  });

  it('keeps them out of the log when the store fails', async () => {
    await withOwnHarness(engine, {}, async (h, closeStore) => {
      const account = await h.createAccount();
      await closeStore();
      h.logs.length = 0;
      const res = await getDlr(h, creds(account), {
        headers: { authorization: basic(account.key, account.secret) },
      });
      expect(res.statusCode).toBe(500);
      const failure = await h.inject({
        url: '/messages?messageIds=m-1',
        headers: { authorization: basic(account.key, account.secret) },
      });
      expect(failure.statusCode).toBe(500);
      expect(failure.json()).toMatchObject({
        status: 500,
        code: 'internal',
        requestId: failure.headers['x-request-id'],
      });
      expect(failure.body).not.toMatch(/sqlite|postgres|pool|closed|stack|at /i);
      expect(logLines(h).some((line) => line.level === 50)).toBe(true);
      for (const text of h.logs) {
        expect(text).not.toContain(account.key);
        expect(text).not.toContain(account.secret);
      }
    });
  });
});

describe.each(engines())('$name: access log', (engine) => {
  const harness = useHarness(engine);

  it('writes one line per request, with the credentials redacted from the URL', async () => {
    const h = harness();
    const account = await h.createAccount();
    h.logs.length = 0;
    const ok = await getDlr(h, creds(account));
    await getDlr(h, wrong(account));
    await h.inject({ url: '/healthz' });
    const lines = accessLines(h);
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatchObject({
      method: 'GET',
      url: '/dlr?key=[redacted]&secret=[redacted]&messageid=m-1',
      status: 200,
      ip: CALLER,
      reqId: ok.headers['x-request-id'],
    });
    expect(typeof lines[0]?.ms).toBe('number');
    expect(lines[1]).toMatchObject({
      status: 401,
      url: '/dlr?key=[redacted]&secret=[redacted]&messageid=m-1',
    });
    expect(lines[2]).toMatchObject({ url: '/healthz', status: 200 });
  });

  it('writes no access lines with WAYBILL_ACCESS_LOG=off', async () => {
    await withOwnHarness(engine, { WAYBILL_ACCESS_LOG: 'off' }, async (h) => {
      const account = await h.createAccount();
      await getDlr(h, creds(account));
      await getDlr(h, wrong(account));
      await h.inject({ url: '/healthz' });
      expect(accessLines(h)).toStrictEqual([]);
    });
  });
});

describe.each(engines())('$name: X-Request-Id', (engine) => {
  const harness = useHarness(engine);

  it('echoes a sane caller id in the header, the problem body and the log', async () => {
    const h = harness();
    const id = 'req-2026.11.22:abc/DEF+1=';
    const ok = await h.inject({ url: '/healthz', headers: { 'x-request-id': id } });
    expect(ok.headers['x-request-id']).toBe(id);
    h.logs.length = 0;
    const res = await h.inject({ method: 'POST', url: '/dlr', headers: { 'x-request-id': id } });
    expect(res.statusCode).toBe(405);
    expect(res.headers['x-request-id']).toBe(id);
    expect(res.json()).toMatchObject({ requestId: id });
    expect(accessLines(h)).toMatchObject([{ reqId: id }]);
  });

  it.each([
    ['too long', 'a'.repeat(129)],
    ['with spaces', 'my request'],
    ['with quotes', '"quoted"'],
    ['with non-ASCII', 'réq'],
  ])('replaces a caller id %s with a fresh one', async (_name, id) => {
    const h = harness();
    const res = await h.inject({ url: '/nowhere', headers: { 'x-request-id': id } });
    expect(res.statusCode).toBe(404);
    const sent = res.headers['x-request-id'];
    expect(sent).toMatch(/^[0-9a-f-]{36}$/);
    expect(sent).not.toBe(id);
    expect(res.json()).toMatchObject({ requestId: sent });
  });

  it('keeps a caller id of exactly 128 characters', async () => {
    const h = harness();
    const id = 'b'.repeat(128);
    expect(
      (await h.inject({ url: '/healthz', headers: { 'x-request-id': id } })).headers['x-request-id'],
    ).toBe(id);
  });

  it('mints a different id for every request without one', async () => {
    const h = harness();
    const account = await h.createAccount();
    const ids = new Set<string>();
    for (let i = 0; i < 5; i++) {
      const res = await getDlr(h, creds(account));
      ids.add(String(res.headers['x-request-id']));
    }
    expect(ids.size).toBe(5);
  });
});

describe.each(engines())('$name: health', (engine) => {
  it('answers /healthz and /readyz with ok, then /readyz 503 once the store is closed', async () => {
    await withOwnHarness(engine, {}, async (h, closeStore) => {
      const health = await h.inject({ url: '/healthz' });
      expect(health.statusCode).toBe(200);
      expect(health.json()).toStrictEqual({ status: 'ok' });
      const ready = await h.inject({ url: '/readyz' });
      expect(ready.statusCode).toBe(200);
      expect(ready.json()).toStrictEqual({ status: 'ok' });
      await closeStore();
      const down = await h.inject({ url: '/readyz' });
      expect(down.statusCode).toBe(503);
      expect(down.json()).toStrictEqual({ status: 'unavailable' });
      expect(down.headers['cache-control']).toBe('no-store');
      expect((await h.inject({ url: '/healthz' })).statusCode).toBe(200);
    });
  });
});
