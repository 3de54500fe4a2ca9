import { type FetchFunction, WaybillClient, type WaybillClientOptions } from '../src/index.js';

/** One request the fake fetch saw. */
export interface SeenRequest {
  url: URL;
  headers: Headers;
  signal: AbortSignal | undefined;
}

export type Handler = (request: SeenRequest, index: number) => Response | Promise<Response>;

/** A fetch double that records every request and answers with `handler`; no global is touched. */
export function fakeFetch(handler: Handler): { fetch: FetchFunction; calls: SeenRequest[] } {
  const calls: SeenRequest[] = [];
  const fetch: FetchFunction = async (input, init) => {
    const request: SeenRequest = {
      url: new URL(input),
      headers: new Headers(init.headers),
      signal: init.signal ?? undefined,
    };
    calls.push(request);
    return handler(request, calls.length - 1);
  };
  return { fetch, calls };
}

export function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json', 'x-request-id': 'req-1', ...headers },
  });
}

export function problem(
  status: number,
  code: string,
  headers: Record<string, string> = {},
  members: Record<string, unknown> = {},
): Response {
  return new Response(
    JSON.stringify({
      type: 'about:blank',
      title: 'Problem',
      status,
      detail: `detail of ${code}`,
      code,
      requestId: 'req-p',
      ...members,
    }),
    { status, headers: { 'content-type': 'application/problem+json', ...headers } },
  );
}

/** A fetch that never answers but rejects, as the platform's does, when its signal aborts. */
export const hangingFetch: FetchFunction = (_input, init) =>
  new Promise((_resolve, reject) => {
    init.signal?.addEventListener('abort', () => reject(init.signal?.reason), { once: true });
  });

/** Sleeps that return at once and remember how long they were asked to wait. */
export function recordingSleep(): { sleep: (ms: number) => Promise<void>; delays: number[] } {
  const delays: number[] = [];
  return {
    delays,
    sleep: async (ms: number) => {
      delays.push(ms);
    },
  };
}

export const KEY = 'TESTKEY1';
export const SECRET = 'TESTSEC1';

export function makeClient(fetch: FetchFunction, options: WaybillClientOptions = {}): WaybillClient {
  return new WaybillClient({
    baseUrl: 'https://waybill.test',
    key: KEY,
    secret: SECRET,
    fetch,
    sleep: async () => {},
    ...options,
  });
}

export const dlrItem = (overrides: Record<string, unknown> = {}): Record<string, unknown> => ({
  type: 'dlr',
  messageid: 'm-1',
  to: '447700900123',
  status: '0',
  price: 0.05,
  counts: 1,
  network: '23410',
  drStatus: 0,
  drStatuscode: 'delivered',
  drErrcode: '0',
  drTime: '2026-11-22 10:00:05.120',
  ...overrides,
});
