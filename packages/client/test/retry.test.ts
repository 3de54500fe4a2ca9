import { describe, expect, it } from 'vitest';
import {
  AbortError,
  ConnectionError,
  InvalidCredentialsError,
  InvalidParametersError,
  QuotaExceededError,
  RateLimitError,
  SystemError,
  TimeoutError,
} from '../src/index.js';
import { dlrItem, fakeFetch, hangingFetch, json, makeClient, problem, recordingSleep } from './helpers.js';

describe('retries', () => {
  it('retries 5xx and then succeeds, backing off exponentially', async () => {
    const { fetch, calls } = fakeFetch((_r, i) =>
      i < 2 ? json({ code: 11, descr: 'System error' }, 503) : json([dlrItem()]),
    );
    const { sleep, delays } = recordingSleep();
    const items = await makeClient(fetch, { sleep }).dlr.get('m-1');
    expect(items).toHaveLength(1);
    expect(calls).toHaveLength(3);
    expect(delays).toHaveLength(2);
    expect(delays[0]).toBeGreaterThanOrEqual(375);
    expect(delays[0]).toBeLessThanOrEqual(500);
    expect(delays[1]).toBeGreaterThanOrEqual(750);
    expect(delays[1]).toBeLessThanOrEqual(1000);
  });

  it('gives up after maxRetries (default 2) with the last error', async () => {
    const { fetch, calls } = fakeFetch(() => new Response('no', { status: 500 }));
    await expect(makeClient(fetch).dlr.get('m-1')).rejects.toBeInstanceOf(SystemError);
    expect(calls).toHaveLength(3);
  });

  it('honours maxRetries', async () => {
    const { fetch, calls } = fakeFetch(() => new Response('no', { status: 500 }));
    await expect(makeClient(fetch, { maxRetries: 0 }).dlr.get('m-1')).rejects.toBeInstanceOf(SystemError);
    expect(calls).toHaveLength(1);
    const second = fakeFetch(() => new Response('no', { status: 500 }));
    await expect(makeClient(second.fetch, { maxRetries: 5 }).dlr.get('m-1')).rejects.toBeInstanceOf(
      SystemError,
    );
    expect(second.calls).toHaveLength(6);
  });

  it('retries a failure body that says System error even with HTTP 200', async () => {
    const { fetch, calls } = fakeFetch((_r, i) =>
      i === 0 ? json({ code: 11, descr: 'System error' }) : json([]),
    );
    await expect(makeClient(fetch).dlr.get('m-1')).resolves.toEqual([]);
    expect(calls).toHaveLength(2);
  });

  for (const [label, response, ErrorClass] of [
    ['code 2/3 (400)', () => json({ code: 3, descr: 'Invalid parameters' }, 400), InvalidParametersError],
    ['code 4 (401)', () => json({ code: 4, descr: 'Invalid credentials' }, 401), InvalidCredentialsError],
    ['code 9 (402)', () => json({ code: 9, descr: 'Quota exceeded' }, 402), QuotaExceededError],
    ['a 401 problem', () => problem(401, 'unauthorized'), InvalidCredentialsError],
  ] as const) {
    it(`does not retry ${label}`, async () => {
      const { fetch, calls } = fakeFetch(response);
      await expect(makeClient(fetch).dlr.get('m-1')).rejects.toBeInstanceOf(ErrorClass);
      expect(calls).toHaveLength(1);
    });
  }

  it('retries a 429 after the Retry-After seconds', async () => {
    const { fetch, calls } = fakeFetch((_r, i) =>
      i === 0 ? json({ code: 429, descr: 'Too many requests' }, 429, { 'retry-after': '3' }) : json([]),
    );
    const { sleep, delays } = recordingSleep();
    await makeClient(fetch, { sleep }).dlr.get('m-1');
    expect(calls).toHaveLength(2);
    expect(delays).toEqual([3000]);
  });

  it('retries a 429 after a Retry-After HTTP date', async () => {
    const at = new Date(Date.now() + 5000).toUTCString();
    const { fetch } = fakeFetch((_r, i) =>
      i === 0 ? problem(429, 'rate_limited', { 'retry-after': at }) : json([]),
    );
    const { sleep, delays } = recordingSleep();
    await makeClient(fetch, { sleep }).messages.get(['m-1']);
    expect(delays).toHaveLength(1);
    expect(delays[0]).toBeGreaterThan(2000);
    expect(delays[0]).toBeLessThanOrEqual(5000);
  });

  it('does not wait out a Retry-After beyond 60 s: the caller gets the RateLimitError', async () => {
    const { fetch, calls } = fakeFetch(() => problem(429, 'locked_out', { 'retry-after': '900' }));
    const { sleep, delays } = recordingSleep();
    const err = await makeClient(fetch, { sleep })
      .messages.get(['m-1'])
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimitError);
    expect((err as RateLimitError).retryAfterSeconds).toBe(900);
    expect(calls).toHaveLength(1);
    expect(delays).toEqual([]);
  });

  it('does not start a wait that would end after the deadline', async () => {
    const { fetch, calls } = fakeFetch(() => problem(429, 'rate_limited', { 'retry-after': '30' }));
    const { sleep } = recordingSleep();
    const err = await makeClient(fetch, { sleep, timeoutMs: 5000 })
      .messages.get(['m-1'])
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimitError);
    expect(calls).toHaveLength(1);
  });

  it('retries connection errors and then throws ConnectionError with the cause', async () => {
    const cause = new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED 127.0.0.1:9') });
    const { fetch, calls } = fakeFetch(() => {
      throw cause;
    });
    const err = await makeClient(fetch)
      .dlr.get('m-1')
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectionError);
    expect((err as ConnectionError).cause).toBe(cause);
    expect((err as Error).message).toContain('ECONNREFUSED');
    expect(calls).toHaveLength(3);
  });

  it('recovers when a retried connection succeeds', async () => {
    const { fetch, calls } = fakeFetch((_r, i) => {
      if (i === 0) throw new TypeError('fetch failed');
      return json([]);
    });
    await expect(makeClient(fetch).dlr.get('m-1')).resolves.toEqual([]);
    expect(calls).toHaveLength(2);
  });
});

describe('timeouts and aborts', () => {
  it('rejects with TimeoutError after timeoutMs', async () => {
    const err = await makeClient(hangingFetch, { timeoutMs: 20 })
      .dlr.get('m-1')
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TimeoutError);
    expect((err as TimeoutError).timeoutMs).toBe(20);
  });

  it('takes a per-call timeout over the client default', async () => {
    const err = await makeClient(hangingFetch, { timeoutMs: 60_000 })
      .dlr.get('m-1', { timeoutMs: 15 })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TimeoutError);
  });

  it('times out even when the fetch ignores its signal', async () => {
    const deaf = () => new Promise<Response>(() => {});
    await expect(makeClient(deaf, { timeoutMs: 15 }).dlr.get('m-1')).rejects.toBeInstanceOf(TimeoutError);
  });

  it('times out while reading a slow body', async () => {
    const { fetch } = fakeFetch(
      () => new Response(new ReadableStream({ start() {} }), { status: 200 }), // never closes
    );
    await expect(makeClient(fetch, { timeoutMs: 15 }).dlr.get('m-1')).rejects.toBeInstanceOf(TimeoutError);
  });

  it('rejects with AbortError when the caller aborts, and does not retry', async () => {
    const controller = new AbortController();
    const { fetch, calls } = fakeFetch((request) => {
      queueMicrotask(() => controller.abort(new Error('user gave up')));
      return hangingFetch(request.url.href, { signal: request.signal ?? null });
    });
    const err = await makeClient(fetch)
      .dlr.get('m-1', { signal: controller.signal })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AbortError);
    expect(((err as AbortError).cause as Error).message).toBe('user gave up');
    expect(calls).toHaveLength(1);
  });

  it('does not send anything with an already aborted signal', async () => {
    const { fetch, calls } = fakeFetch(() => json([]));
    await expect(makeClient(fetch).dlr.get('m-1', { signal: AbortSignal.abort() })).rejects.toBeInstanceOf(
      AbortError,
    );
    expect(calls).toHaveLength(0);
  });

  it('treats a platform timeout signal as a TimeoutError', async () => {
    await expect(
      makeClient(hangingFetch).dlr.get('m-1', { signal: AbortSignal.timeout(10) }),
    ).rejects.toBeInstanceOf(TimeoutError);
  });

  it('aborts a retry wait', async () => {
    const controller = new AbortController();
    const { fetch, calls } = fakeFetch(() => new Response('down', { status: 503 }));
    const err = await makeClient(fetch, {
      sleep: (_ms, signal) =>
        new Promise((_resolve, reject) => {
          signal.addEventListener('abort', () => reject(signal.reason));
          controller.abort();
        }),
    })
      .dlr.get('m-1', { signal: controller.signal })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AbortError);
    expect(calls).toHaveLength(1);
  });
});
