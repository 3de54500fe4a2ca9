import { describe, expect, it } from 'vitest';
import {
  API_ERROR_CODES,
  ApiError,
  DlrSearchNotSupportedError,
  describeErrcode,
  hasReceipt,
  InvalidCredentialsError,
  InvalidParametersError,
  isDelivered,
  MissingParametersError,
  parseDrTime,
  QuotaExceededError,
  RateLimitError,
  SystemError,
  UnauthorizedIpError,
} from '../src/index.js';
import { dlrItem, fakeFetch, json, KEY, makeClient, SECRET } from './helpers.js';

describe('client.dlr.get', () => {
  it('sends key, secret and messageid as query parameters to GET /dlr', async () => {
    const { fetch, calls } = fakeFetch(() => json([]));
    await makeClient(fetch).dlr.get('m-1');
    expect(calls).toHaveLength(1);
    const [call] = calls;
    expect(call?.url.pathname).toBe('/dlr');
    expect(Object.fromEntries(call?.url.searchParams ?? [])).toEqual({
      key: KEY,
      secret: SECRET,
      messageid: 'm-1',
    });
    expect(call?.headers.get('authorization')).toBeNull();
  });

  it('returns [] for an unknown id', async () => {
    const { fetch } = fakeFetch(() => json([]));
    await expect(makeClient(fetch).dlr.get('nope')).resolves.toEqual([]);
  });

  it('normalizes numbers the spec allows: status and drErrcode become strings', async () => {
    const { fetch } = fakeFetch(() =>
      json([dlrItem({ status: 0, drErrcode: 5, drStatus: 400, drStatuscode: 'rejected', network: 23410 })]),
    );
    const [item] = await makeClient(fetch).dlr.get('m-1');
    expect(item).toMatchObject({ status: '0', drErrcode: '5', drStatus: 400, network: '23410' });
    expect(typeof item?.status).toBe('string');
    expect(typeof item?.drErrcode).toBe('string');
  });

  it('keeps drTime as given and adds drTimeDate parsed as UTC', async () => {
    const { fetch } = fakeFetch(() => json([dlrItem()]));
    const [item] = await makeClient(fetch).dlr.get('m-1');
    if (!item || !hasReceipt(item)) throw new Error('expected a receipt');
    expect(item.drTime).toBe('2026-11-22 10:00:05.120');
    expect(item.drTimeDate.toISOString()).toBe('2026-11-22T10:00:05.120Z');
    expect(isDelivered(item)).toBe(true);
  });

  it('leaves the receipt fields out for a recipient without a receipt', async () => {
    const pending = { type: 'dlr', messageid: 'm-1', to: '447700900124', status: '1', price: 0, counts: 1 };
    const { fetch } = fakeFetch(() => json([dlrItem(), pending]));
    const items = await makeClient(fetch).dlr.get('m-1');
    expect(items).toHaveLength(2);
    const second = items[1];
    expect(second).toEqual(pending);
    expect(second && hasReceipt(second)).toBe(false);
    expect(second && isDelivered(second)).toBe(false);
  });

  it('takes an array as success whatever the HTTP status', async () => {
    const { fetch } = fakeFetch(() => json([dlrItem()], 203));
    await expect(makeClient(fetch).dlr.get('m-1')).resolves.toHaveLength(1);
  });

  it('takes a failure object as failure even with HTTP 200', async () => {
    const { fetch } = fakeFetch(() => json({ code: 4, descr: 'Invalid credentials' }, 200));
    const err = await makeClient(fetch)
      .dlr.get('m-1')
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidCredentialsError);
    expect(err).toMatchObject({ status: 200, code: 4, descr: 'Invalid credentials', requestId: 'req-1' });
  });

  const cases = [
    [2, 400, MissingParametersError],
    [3, 400, InvalidParametersError],
    [4, 401, InvalidCredentialsError],
    [5, 403, UnauthorizedIpError],
    [9, 402, QuotaExceededError],
    [11, 500, SystemError],
    [20, 403, DlrSearchNotSupportedError],
    [429, 429, RateLimitError],
  ] as const;
  for (const [code, status, ErrorClass] of cases) {
    it(`throws ${ErrorClass.name} for code ${code}`, async () => {
      const descr = API_ERROR_CODES[code].descr;
      const { fetch } = fakeFetch(() => json({ code, descr }, status, { 'x-request-id': `rid-${code}` }));
      const err = await makeClient(fetch, { maxRetries: 0 })
        .dlr.get('m-1')
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ErrorClass);
      expect(err).toBeInstanceOf(ApiError);
      expect(err).toMatchObject({ code, descr, status, requestId: `rid-${code}`, name: ErrorClass.name });
      expect((err as Error).message).toContain(descr);
    });
  }

  it('accepts a failure code sent as a string', async () => {
    const { fetch } = fakeFetch(() => json({ code: '3', descr: 'Invalid parameters' }, 400));
    await expect(makeClient(fetch).dlr.get('bad id')).rejects.toBeInstanceOf(InvalidParametersError);
  });

  it('gives a plain ApiError for a code the spec does not list', async () => {
    const { fetch } = fakeFetch(() => json({ code: 42, descr: 'Something new' }, 400));
    const err = await makeClient(fetch)
      .dlr.get('m-1')
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err?.constructor).toBe(ApiError);
    expect(err).toMatchObject({ code: 42, descr: 'Something new' });
  });

  it('reads a 429 with Retry-After as a RateLimitError', async () => {
    const { fetch } = fakeFetch(() =>
      json({ code: 429, descr: 'Too many requests' }, 429, { 'retry-after': '900' }),
    );
    const err = await makeClient(fetch)
      .dlr.get('m-1')
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimitError);
    expect((err as RateLimitError).retryAfterSeconds).toBe(900);
  });

  it('turns an unreadable answer into a SystemError by HTTP status', async () => {
    const { fetch } = fakeFetch(() => new Response('<html>Bad gateway</html>', { status: 502 }));
    const err = await makeClient(fetch, { maxRetries: 0 })
      .dlr.get('m-1')
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SystemError);
    expect(err).toMatchObject({ status: 502, code: 11 });
  });

  it('turns a 200 that is not JSON into a SystemError', async () => {
    const { fetch } = fakeFetch(() => new Response('OK', { status: 200 }));
    await expect(makeClient(fetch, { maxRetries: 0 }).dlr.get('m-1')).rejects.toBeInstanceOf(SystemError);
  });

  it('never puts the secret into an error message', async () => {
    const { fetch } = fakeFetch(() => {
      throw new TypeError('fetch failed');
    });
    const err = await makeClient(fetch, { maxRetries: 0 })
      .dlr.get('m-1')
      .catch((e: unknown) => e);
    expect(String((err as Error).message)).not.toContain(SECRET);
  });
});

describe('receipt helpers', () => {
  it('describes every spec error code, numbers included', () => {
    expect(describeErrcode('0')).toBe('Normal');
    expect(describeErrcode(8)).toBe('User do not disturb (DND)');
    expect(describeErrcode('99')).toBe('Other operator error');
    expect(describeErrcode('9')).toBeUndefined();
    expect(describeErrcode('toString')).toBeUndefined();
  });

  it('parses drTime as UTC and refuses impossible dates', () => {
    expect(parseDrTime('2026-01-02 03:04:05.006').toISOString()).toBe('2026-01-02T03:04:05.006Z');
    expect(parseDrTime('2026-01-02 03:04:05').toISOString()).toBe('2026-01-02T03:04:05.000Z');
    expect(parseDrTime('2026-01-02T03:04:05.1Z').toISOString()).toBe('2026-01-02T03:04:05.100Z');
    expect(Number.isNaN(parseDrTime('2026-02-31 00:00:00.000').getTime())).toBe(true);
    expect(Number.isNaN(parseDrTime('yesterday').getTime())).toBe(true);
  });

  it('does not call accepted delivered', () => {
    const accepted = { ...dlrItem({ drStatuscode: 'accepted' }), drTimeDate: new Date() } as never;
    expect(isDelivered(accepted)).toBe(false);
  });
});
