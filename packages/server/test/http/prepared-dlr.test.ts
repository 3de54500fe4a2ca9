import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import inject from 'light-my-request';
import { describe, expect, it } from 'vitest';
import { preparedPathOf } from '../../src/app.js';
import { engines } from '../support/engines.js';
import { type CreatedAccount, type Harness, injectServed, startHarness } from '../support/http.js';

// The prepared /dlr path (src/http/prepared-dlr.ts) must answer exactly what the route answers: the same status,
// headers and body bytes, the same access-log line and the same metrics, for successes and for every failure.
// Each case runs twice on accounts set up alike, once through the route pipeline (app.inject) and once through
// the prepared path alone (which must take the request), and the two answers are compared.

const TO = '447700900123';
const CALLER = '10.0.0.7';

type Path = 'route' | 'prepared';

/** A request as the prepared path alone answers it; a request it leaves to the router fails the test. */
async function injectPrepared(h: Harness, options: InjectOptions): Promise<LightMyRequestResponse> {
  await h.app.ready();
  const prepared = preparedPathOf(h.app);
  if (prepared === undefined) throw new Error('no prepared path in this configuration');
  return inject((request, response) => {
    if (!prepared(request, response)) response.writeHead(599).end('left to the router');
  }, options);
}

const send = (h: Harness, path: Path, options: InjectOptions) =>
  path === 'route' ? h.app.inject(options) : injectPrepared(h, options);

/** What must agree between the two paths: everything but the Date header. */
function answer(res: LightMyRequestResponse) {
  const { date: _date, ...headers } = res.headers;
  return { status: res.statusCode, headers, body: res.body };
}

/** The log lines written since `from`, without their time and duration. */
function linesSince(h: Harness, from: number): Record<string, unknown>[] {
  return h.logs.slice(from).map((line) => {
    const { time: _time, ms, ...rest } = JSON.parse(line) as Record<string, unknown>;
    return { ...rest, ...(ms === undefined ? {} : { ms: typeof ms }) };
  });
}

interface Step {
  query: (account: CreatedAccount) => string;
  ip?: string;
  headers?: Record<string, string>;
}

/** Runs `steps` for a fresh account made by `setup`, on one path: each answer with the log lines it wrote. */
async function run(h: Harness, path: Path, setup: () => Promise<CreatedAccount>, steps: Step[]) {
  const account = await setup();
  const seen = [];
  for (const [i, step] of steps.entries()) {
    const from = h.logs.length;
    const res = await send(h, path, {
      method: 'GET',
      url: `/dlr?${step.query(account)}`,
      remoteAddress: step.ip ?? CALLER,
      headers: { 'x-request-id': `case-step-${i}`, ...step.headers },
    });
    seen.push({ ...answer(res), logs: linesSince(h, from) });
  }
  return seen;
}

const creds = (a: CreatedAccount, messageid = 'm-1') =>
  new URLSearchParams({ key: a.key, secret: a.secret, messageid }).toString();
const wrong = (a: CreatedAccount) =>
  new URLSearchParams({
    key: a.key,
    secret: a.secret === 'Wrong000' ? 'Wrong001' : 'Wrong000',
    messageid: 'm-1',
  }).toString();

describe.each(engines())('$name: the prepared /dlr path', (engine) => {
  async function compare(
    env: Record<string, string>,
    account: (h: Harness) => Promise<CreatedAccount>,
    steps: Step[],
  ) {
    const answers: Record<Path, unknown> = { route: null, prepared: null };
    for (const path of ['route', 'prepared'] as const) {
      const h = await startHarness(engine, { WAYBILL_LOCKOUT_FAILURES: '3', ...env });
      try {
        answers[path] = await run(h, path, () => account(h), steps);
      } finally {
        await h.close();
      }
    }
    expect(answers.prepared).toStrictEqual(answers.route);
    return answers.route as ReturnType<typeof answer>[];
  }

  async function withSms(h: Harness, body: Record<string, unknown> = {}): Promise<CreatedAccount> {
    const account = await h.createAccount(body);
    await h.ingest(account.id, [
      { id: 'm-1', channel: 'SMS', channelUserId: TO, sms: { network: '23410', price: 0.0475, counts: 2 } },
      { id: 'm-1', channel: 'SMS', channelUserId: '447700900999' },
    ]);
    await h.receipts(account.id, [
      {
        messageId: 'm-1',
        to: TO,
        drStatuscode: 'delivered',
        drErrcode: 0,
        drTime: '2026-11-22 10:00:05.007',
      },
    ]);
    return account;
  }

  it('answers items, an unknown id and the parameter codes as the route does', async () => {
    const seen = await compare({}, withSms, [
      { query: (a) => creds(a) },
      { query: (a) => creds(a, 'nobody') },
      { query: (a) => `key=${a.key}&secret=${a.secret}` },
      { query: (a) => `${creds(a)}&messageid=m-2` },
      { query: (a) => creds(a, 'bad id!') },
      { query: () => 'key=Abcdefgh&secret=Abcdefgh&messageid=m-1' },
      { query: (a) => `key=${a.key}&secret=${a.secret}&messageid=m%2D1&extra=%zz` },
    ]);
    expect(seen.map((s) => s.status)).toStrictEqual([200, 200, 400, 400, 400, 401, 200]);
    expect(JSON.parse(seen[0]?.body ?? '')).toHaveLength(2);
    expect(seen[0]?.headers.ratelimit).toBeDefined();
  });

  it('locks a key out after wrong secrets, with the same Retry-After', async () => {
    const seen = await compare({ WAYBILL_LOCKOUT_SECONDS: '600' }, withSms, [
      { query: wrong },
      { query: wrong },
      { query: wrong },
      { query: (a) => creds(a) },
    ]);
    expect(seen.map((s) => s.status)).toStrictEqual([401, 401, 401, 429]);
    expect(seen[3]?.headers['retry-after']).toBe('600');
  });

  it('refuses by whitelist, switch, quota and rate as the route does', async () => {
    const whitelisted = await compare({}, (h) => withSms(h, { ipWhitelist: ['10.0.0.0/24'] }), [
      { query: (a) => creds(a) },
      { query: (a) => creds(a), ip: '192.0.2.1' },
    ]);
    expect(whitelisted.map((s) => s.status)).toStrictEqual([200, 403]);
    const off = await compare({}, (h) => withSms(h, { dlrQueryEnabled: false }), [
      { query: (a) => creds(a) },
    ]);
    expect(off[0]?.body).toBe('{"code":20,"descr":"Dlr search not support"}');
    const broke = await compare({}, (h) => withSms(h, { balance: -11, creditLimit: 10 }), [
      { query: (a) => creds(a) },
    ]);
    expect(broke[0]?.status).toBe(402);
    const rated = await compare({ WAYBILL_RATE_PER_SECOND: '1', WAYBILL_RATE_BURST: '2' }, withSms, [
      { query: (a) => creds(a) },
      { query: (a) => creds(a) },
      { query: (a) => creds(a) },
    ]);
    expect(rated.map((s) => s.status)).toStrictEqual([200, 200, 429]);
    expect(rated[2]?.headers['retry-after']).toBeDefined();
  });

  it('judges the forwarded address under WAYBILL_TRUST_PROXY as request.ip does', async () => {
    const seen = await compare(
      { WAYBILL_TRUST_PROXY: '1' },
      (h) => withSms(h, { ipWhitelist: ['198.51.100.7'] }),
      [
        { query: (a) => creds(a), headers: { 'x-forwarded-for': '198.51.100.7' } },
        { query: (a) => creds(a), headers: { 'x-forwarded-for': '198.51.100.7, 203.0.113.9' } },
        { query: (a) => creds(a) },
      ],
    );
    expect(seen.map((s) => s.status)).toStrictEqual([200, 403, 403]);
  });

  it('answers code 11 and logs the failure, as the route does, when the store is gone', async () => {
    const answers: Record<Path, unknown> = { route: null, prepared: null };
    for (const path of ['route', 'prepared'] as const) {
      const h = await startHarness(engine);
      const account = await h.createAccount();
      await h.store.close();
      const from = h.logs.length;
      const res = await send(h, path, {
        url: `/dlr?${creds(account)}`,
        remoteAddress: CALLER,
        headers: { 'x-request-id': 'store-gone' },
      });
      answers[path] = { ...answer(res), logs: linesSince(h, from).map(({ err: _err, ...line }) => line) };
      await h.app.close();
    }
    expect(answers.prepared).toStrictEqual(answers.route);
    expect(answers.route).toMatchObject({ status: 500, body: '{"code":11,"descr":"System error"}' });
    expect((answers.route as { logs: { level: number }[] }).logs.map((line) => line.level)).toContain(50);
  });

  it('counts its requests in the same metrics', async () => {
    const h = await startHarness(engine);
    try {
      const account = await withSms(h);
      await h.app.inject({ url: `/dlr?${creds(account)}`, remoteAddress: CALLER });
      await injectPrepared(h, { url: `/dlr?${creds(account)}`, remoteAddress: CALLER });
      await injectPrepared(h, { url: `/dlr?${wrong(account)}`, remoteAddress: CALLER });
      const metrics = (await h.admin('GET', '/metrics')).body;
      expect(metrics).toMatch(/waybill_http_requests_total\{route="\/dlr",method="GET",status="200"\} 2\n/);
      expect(metrics).toMatch(/waybill_http_requests_total\{route="\/dlr",method="GET",status="401"\} 1\n/);
    } finally {
      await h.close();
    }
  });

  it('leaves to the router what the route pipeline must answer', async () => {
    const h = await startHarness(engine);
    try {
      const account = await withSms(h);
      const left = async (options: InjectOptions) => (await injectPrepared(h, options)).statusCode === 599;
      const url = `/dlr?${creds(account)}`;
      expect(await left({ url, remoteAddress: CALLER })).toBe(false);
      expect(await left({ method: 'HEAD', url })).toBe(true);
      expect(await left({ method: 'POST', url })).toBe(true);
      expect(await left({ url: '/dlr' })).toBe(true);
      expect(await left({ url: url.replace('/dlr', '/DLR') })).toBe(true);
      expect(await left({ url: url.replace('/dlr', '/dlr/') })).toBe(true);
      expect(await left({ url, headers: { expect: '100-continue' } })).toBe(true);
      expect(await left({ url: `${url}&pad=${'a'.repeat(9000)}` })).toBe(true);
      // Through the whole dispatch these reach the route pipeline and get its answers.
      expect((await injectServed(h.app, { method: 'HEAD', url, remoteAddress: CALLER })).statusCode).toBe(
        200,
      );
      expect((await injectServed(h.app, { method: 'POST', url })).statusCode).toBe(405);
    } finally {
      await h.close();
    }
    const cors = await startHarness(engine, { WAYBILL_CORS_ORIGINS: 'https://app.example' });
    try {
      expect(preparedPathOf(cors.app)).toBeUndefined();
    } finally {
      await cors.close();
    }
  });
});
