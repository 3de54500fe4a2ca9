import { describe, expect, it } from 'vitest';
import {
  API_ERROR_CODES,
  ApiError,
  ConnectionError,
  createApiError,
  InvalidCredentialsError,
  InvalidParametersError,
  isApiError,
  isConnectionError,
  isRateLimitError,
  isTimeoutError,
  isWaybillError,
  isWebhookVerificationError,
  RateLimitError,
  SystemError,
  TimeoutError,
  UnauthorizedIpError,
  WaybillError,
  WebhookVerificationError,
} from '../src/index.js';
import { fakeFetch, makeClient, problem } from './helpers.js';

describe('error registry', () => {
  const spec: Record<number, string> = {
    2: 'Missing parameters',
    3: 'Invalid parameters',
    4: 'Invalid credentials',
    5: 'Unauthorized IP',
    9: 'Quota exceeded',
    11: 'System error',
    20: 'Dlr search not support',
  };

  it('has a class for every failure code of the spec, with its descr, and for 429', () => {
    for (const [code, descr] of Object.entries(spec)) {
      const entry = API_ERROR_CODES[Number(code) as keyof typeof API_ERROR_CODES];
      expect(entry?.descr).toBe(descr);
    }
    expect(
      Object.keys(API_ERROR_CODES)
        .map(Number)
        .sort((a, b) => a - b),
    ).toEqual([2, 3, 4, 5, 9, 11, 20, 429]);
  });

  it('builds the class of each code, each with its own name', () => {
    const names = new Set<string>();
    for (const [code, entry] of Object.entries(API_ERROR_CODES)) {
      const err = createApiError({ status: entry.status, code: Number(code), descr: entry.descr });
      expect(err).toBeInstanceOf(entry.error);
      expect(err.name).toBe(entry.error.name);
      names.add(err.name);
    }
    expect(names.size).toBe(Object.keys(API_ERROR_CODES).length);
  });
});

describe('problem answers of the message endpoints', () => {
  const cases = [
    [400, 'invalid_request', InvalidParametersError, 3],
    [401, 'unauthorized', InvalidCredentialsError, 4],
    [403, 'ip_not_allowed', UnauthorizedIpError, 5],
    [429, 'rate_limited', RateLimitError, 429],
    [429, 'locked_out', RateLimitError, 429],
    [500, 'internal', SystemError, 11],
    [503, 'unavailable', SystemError, 11],
    [410, 'gone', ApiError, 410],
    [413, 'payload_too_large', ApiError, 413],
  ] as const;
  for (const [status, slug, ErrorClass, code] of cases) {
    it(`maps ${status} ${slug} to ${ErrorClass.name}`, async () => {
      const { fetch } = fakeFetch(() => problem(status, slug, { 'retry-after': '600' }));
      const err = await makeClient(fetch, { maxRetries: 0 })
        .messages.get(['m-1'])
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ErrorClass);
      expect(err?.constructor).toBe(ErrorClass);
      expect(err).toMatchObject({
        status,
        code,
        problemCode: slug,
        descr: `detail of ${slug}`,
        requestId: 'req-p',
      });
    });
  }

  it('names the parameter at fault when the problem body does', async () => {
    const { fetch } = fakeFetch(() =>
      problem(400, 'invalid_request', {}, { detail: 'size must be an integer from 1 to 100', param: 'size' }),
    );
    const err = await makeClient(fetch)
      .messages.history({ channel: 'SMS', channelUserId: 'x', size: 500 })
      .take(1)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidParametersError);
    expect(err).toMatchObject({ param: 'size', descr: 'size must be an integer from 1 to 100' });
  });

  it('leaves param undefined when the body names none, or not as a string', async () => {
    for (const members of [{}, { param: '' }, { param: 42 }, { param: null }]) {
      const { fetch } = fakeFetch(() => problem(400, 'invalid_request', {}, members));
      const err = await makeClient(fetch)
        .messages.get(['m-1'])
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InvalidParametersError);
      expect((err as InvalidParametersError).param, JSON.stringify(members)).toBeUndefined();
    }
    // A /dlr failure record never names a parameter.
    const dlr = fakeFetch(() => Response.json({ code: 3, descr: 'Invalid parameters' }, { status: 400 }));
    const err = await makeClient(dlr.fetch)
      .dlr.get('bad id!')
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 3, param: undefined });
  });

  it('maps an unknown slug by its HTTP status', async () => {
    const { fetch } = fakeFetch(() => problem(401, 'token_expired'));
    const err = await makeClient(fetch)
      .messages.get(['m-1'])
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidCredentialsError);
    expect(err).toMatchObject({ problemCode: 'token_expired' });
  });

  it('prefers the X-Request-Id header over the body', async () => {
    const { fetch } = fakeFetch(() => problem(401, 'unauthorized', { 'x-request-id': 'from-header' }));
    const err = await makeClient(fetch)
      .messages.get(['m-1'])
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ requestId: 'from-header' });
  });

  it('reads Retry-After as an HTTP date', async () => {
    const at = new Date(Date.now() + 120_000).toUTCString();
    const { fetch } = fakeFetch(() => problem(429, 'rate_limited', { 'retry-after': at }));
    const err = (await makeClient(fetch)
      .messages.get(['m-1'])
      .catch((e: unknown) => e)) as RateLimitError;
    expect(err.retryAfterSeconds).toBeGreaterThan(100);
    expect(err.retryAfterSeconds).toBeLessThanOrEqual(120);
  });
});

describe('type guards', () => {
  it('recognise the SDK errors', () => {
    const api = createApiError({ status: 429, code: 429, descr: 'Too many requests' });
    expect(isWaybillError(api) && isApiError(api) && isRateLimitError(api)).toBe(true);
    expect(isConnectionError(new ConnectionError('x'))).toBe(true);
    expect(isTimeoutError(new TimeoutError(5))).toBe(true);
    expect(isWebhookVerificationError(new WebhookVerificationError('invalid_signature', 'x'))).toBe(true);
    expect(isApiError(new ConnectionError('x'))).toBe(false);
    expect(isRateLimitError(createApiError({ status: 401, code: 4, descr: 'x' }))).toBe(false);
  });

  it('recognise an error from another copy of the package by its brand and name', () => {
    const foreign = Object.assign(new Error('x'), { name: 'InvalidCredentialsError' });
    Object.defineProperty(foreign, Symbol.for('@waybill/client.error'), { value: true });
    expect(isWaybillError(foreign)).toBe(true);
    expect(isApiError(foreign)).toBe(true);
    expect(isRateLimitError(foreign)).toBe(false);
  });

  it('do not mistake platform errors of the same name', () => {
    expect(isTimeoutError(new DOMException('late', 'TimeoutError'))).toBe(false);
    expect(isWaybillError(new DOMException('stop', 'AbortError'))).toBe(false);
    expect(isApiError(Object.assign(new Error('x'), { name: 'ApiError' }))).toBe(false);
    expect(isWaybillError(undefined)).toBe(false);
    expect(isWaybillError('ApiError')).toBe(false);
  });

  it('keep the class hierarchy', () => {
    const err = createApiError({ status: 401, code: 4, descr: 'Invalid credentials' });
    expect(err).toBeInstanceOf(WaybillError);
    expect(err).toBeInstanceOf(Error);
    expect(err.stack).toBeDefined();
  });
});
