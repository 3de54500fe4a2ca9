import { describe, expect, it } from 'vitest';
import {
  AbortError,
  ConnectionError,
  InvalidCredentialsError,
  InvalidParametersError,
  RateLimitError,
  type ReceiptEvent,
  type ReceiptPage,
  SystemError,
  UnsupportedByServerError,
} from '../src/index.js';
import {
  dlrItem,
  fakeFetch,
  hangingFetch,
  json,
  KEY,
  makeClient,
  problem,
  recordingSleep,
  SECRET,
  type SeenRequest,
} from './helpers.js';

const event = (n: number, overrides: Record<string, unknown> = {}) => ({
  id: `evt_${String(n).padStart(26, '0')}`,
  recordedAt: new Date(Date.UTC(2026, 10, 22, 10, 0, n)).toISOString(),
  receipt: dlrItem({ messageid: `m-${n}`, drErrcode: 0, status: 0, ...overrides }),
});

/**
 * A feed of `events` (appendable while a test runs) with the contract's semantics: cursor `c-N` is the
 * position after the N-th event, `nextCursor` is always a string, `hasMore` says whether more exist now.
 */
function feedServer(events: ReturnType<typeof event>[]) {
  return (request: SeenRequest): Response => {
    const q = request.url.searchParams;
    const after = q.get('after');
    const start = after === null ? 0 : Number(after.slice('c-'.length));
    const limit = Number(q.get('limit') ?? 100);
    const page = events.slice(start, start + limit);
    const end = start + page.length;
    return json({ receipts: page, nextCursor: `c-${end}`, hasMore: end < events.length });
  };
}

const ids = (list: ReceiptEvent[]) => list.map((e) => e.id);
const afters = (calls: SeenRequest[]) => calls.map((c) => c.url.searchParams.get('after'));

describe('client.receipts.list', () => {
  const events = Array.from({ length: 25 }, (_, i) => event(i + 1));

  it('walks every page oldest first with HTTP Basic, and ends caught up', async () => {
    const { fetch, calls } = fakeFetch(feedServer(events));
    const feed = makeClient(fetch).receipts.list({ limit: 10 });
    expect(calls).toHaveLength(0); // nothing until iterated
    const seen: ReceiptEvent[] = [];
    for await (const e of feed) seen.push(e);
    expect(ids(seen)).toEqual(events.map((e) => e.id));
    expect(calls.map((c) => c.url.pathname)).toEqual(['/receipts', '/receipts', '/receipts']);
    expect(afters(calls)).toEqual([null, 'c-10', 'c-20']);
    expect(calls.map((c) => c.url.searchParams.get('limit'))).toEqual(['10', '10', '10']);
    expect(calls[0]?.url.searchParams.has('key')).toBe(false);
    expect(calls[0]?.url.searchParams.has('secret')).toBe(false);
    expect(calls[0]?.headers.get('authorization')).toBe(`Basic ${btoa(`${KEY}:${SECRET}`)}`);
    expect(feed.nextCursor).toBe('c-25');
  });

  it('normalizes each receipt like dlr.get', async () => {
    const { fetch } = fakeFetch(feedServer(events));
    const [first] = await collect(makeClient(fetch).receipts.list({ limit: 1 }), 1);
    expect(first).toMatchObject({ id: events[0]?.id, recordedAt: '2026-11-22T10:00:01.000Z' });
    expect(first?.receipt).toMatchObject({ messageid: 'm-1', status: '0', drErrcode: '0', drStatus: 0 });
    expect(first?.receipt.drTimeDate?.toISOString()).toBe('2026-11-22T10:00:05.120Z');
  });

  it('leaves out limit when not given (the service defaults to 100)', async () => {
    const { fetch, calls } = fakeFetch(feedServer(events));
    await collect(makeClient(fetch).receipts.list());
    expect(calls).toHaveLength(1);
    expect(Object.fromEntries(calls[0]?.url.searchParams ?? [])).toEqual({});
  });

  it('yields the pages as the server returns them', async () => {
    const { fetch } = fakeFetch(feedServer(events));
    const pages: ReceiptPage[] = [];
    for await (const page of makeClient(fetch).receipts.list({ limit: 10 }).pages()) pages.push(page);
    expect(pages.map((p) => p.receipts.length)).toEqual([10, 10, 5]);
    expect(pages.map((p) => p.hasMore)).toEqual([true, true, false]);
    expect(pages.map((p) => p.nextCursor)).toEqual(['c-10', 'c-20', 'c-25']);
  });

  it('resumes from a cursor, and gives one empty page with the same cursor when caught up', async () => {
    const { fetch, calls } = fakeFetch(feedServer(events));
    const client = makeClient(fetch);
    const rest = client.receipts.list({ after: 'c-20', limit: 10 });
    expect(rest.nextCursor).toBe('c-20');
    expect(ids(await collect(rest))).toEqual(events.slice(20).map((e) => e.id));
    expect(rest.nextCursor).toBe('c-25');

    const nothing = client.receipts.list({ after: rest.nextCursor });
    const pages: ReceiptPage[] = [];
    for await (const page of nothing.pages()) pages.push(page);
    expect(pages).toEqual([{ receipts: [], nextCursor: 'c-25', hasMore: false }]);
    expect(nothing.nextCursor).toBe('c-25');
    expect(afters(calls)).toEqual(['c-20', 'c-25']);
  });

  it('moves nextCursor only past pages consumed in full, so a resume never skips an event', async () => {
    const { fetch } = fakeFetch(feedServer(events));
    const client = makeClient(fetch);
    const feed = client.receipts.list({ limit: 10 });
    const seen: ReceiptEvent[] = [];
    for await (const e of feed) {
      seen.push(e);
      if (seen.length === 15) break; // in the middle of the second page
    }
    expect(feed.nextCursor).toBe('c-10');
    const resumed = await collect(client.receipts.list({ after: feed.nextCursor, limit: 10 }));
    expect(resumed[0]?.id).toBe(events[10]?.id);
    const all = new Set([...ids(seen), ...ids(resumed)]);
    expect([...all]).toEqual(events.map((e) => e.id));
  });

  it('starts again from its cursor on every iteration', async () => {
    const { fetch } = fakeFetch(feedServer(events));
    const feed = makeClient(fetch).receipts.list({ after: 'c-5', limit: 100 });
    expect(await collect(feed)).toHaveLength(20);
    expect(await collect(feed)).toHaveLength(20);
  });

  it('never loops on a page that claims more but moves nothing', async () => {
    const { fetch, calls } = fakeFetch(() => json({ receipts: [], nextCursor: 'c-0', hasMore: true }));
    expect(await collect(makeClient(fetch).receipts.list())).toEqual([]);
    const same = fakeFetch((r) =>
      json({ receipts: [event(1)], nextCursor: r.url.searchParams.get('after') ?? 'c-0', hasMore: true }),
    );
    expect(await collect(makeClient(same.fetch).receipts.list({ after: 'c-0' }))).toHaveLength(1);
    expect(calls).toHaveLength(1);
    expect(same.calls).toHaveLength(1);
  });
});

describe('client.receipts.follow', () => {
  it('drains, polls after an empty page, and yields each new event exactly once', async () => {
    const events = Array.from({ length: 3 }, (_, i) => event(i + 1));
    const { fetch, calls } = fakeFetch(feedServer(events));
    const { sleep, delays } = recordingSleep();
    let polls = 0;
    const client = makeClient(fetch, {
      sleep: async (ms, signal) => {
        await sleep(ms);
        polls++;
        // New events arrive while the follower waits: two after the first wait, one after the third.
        if (polls === 1) events.push(event(4), event(5));
        if (polls === 3) events.push(event(6));
        if (signal.aborted) throw signal.reason;
      },
    });
    const follower = client.receipts.follow({ limit: 2, intervalMs: 1500 });
    const seen: ReceiptEvent[] = [];
    for await (const e of follower) {
      seen.push(e);
      if (seen.length === 6) break;
    }
    expect(ids(seen)).toEqual(events.map((e) => e.id));
    // Pages of 2 back to back while hasMore; after the wait only the new ones; an empty poll keeps its place.
    expect(afters(calls)).toEqual([null, 'c-2', 'c-3', 'c-5', 'c-5']);
    expect(calls.map((c) => c.url.searchParams.get('limit'))).toEqual(['2', '2', '2', '2', '2']);
    expect(delays).toEqual([1500, 1500, 1500]);
  });

  it('waits 2 s between polls by default', async () => {
    const { fetch } = fakeFetch(feedServer([]));
    const controller = new AbortController();
    const delays: number[] = [];
    const client = makeClient(fetch, {
      sleep: async (ms) => {
        delays.push(ms);
        if (delays.length === 2) controller.abort();
      },
    });
    const seen = await collect(client.receipts.follow({ signal: controller.signal }));
    expect(seen).toEqual([]);
    expect(delays).toEqual([2000, 2000]);
  });

  it('keeps a resumable nextCursor', async () => {
    const events = Array.from({ length: 4 }, (_, i) => event(i + 1));
    const { fetch } = fakeFetch(feedServer(events));
    const controller = new AbortController();
    const client = makeClient(fetch, { sleep: async () => controller.abort() });
    const follower = client.receipts.follow({ after: 'c-1', signal: controller.signal });
    expect(follower.nextCursor).toBe('c-1');
    expect(ids(await collect(follower))).toEqual(events.slice(1).map((e) => e.id));
    expect(follower.nextCursor).toBe('c-4');
  });

  it('stops cleanly when the signal aborts during the wait', async () => {
    const { fetch, calls } = fakeFetch(feedServer([event(1)]));
    const controller = new AbortController();
    // The real setTimeout-based wait, for a long interval: only the abort can end it.
    const client = makeClient(fetch, { sleep: undefined });
    const follower = client.receipts.follow({ signal: controller.signal, intervalMs: 60_000 });
    const first = await follower.next();
    expect(first.done).toBe(false);
    const pending = follower.next();
    setTimeout(() => controller.abort(), 20);
    await expect(pending).resolves.toEqual({ done: true, value: undefined });
    expect(calls).toHaveLength(1);
    expect(follower.nextCursor).toBe('c-1');
    await expect(follower.next()).resolves.toMatchObject({ done: true });
  });

  it('stops cleanly when the signal aborts during a request', async () => {
    const controller = new AbortController();
    const follower = makeClient(hangingFetch).receipts.follow({ signal: controller.signal });
    const pending = follower.next();
    setTimeout(() => controller.abort(new Error('shutting down')), 20);
    await expect(pending).resolves.toEqual({ done: true, value: undefined });
  });

  it('stops at once, mid-page, when the signal aborts while the caller handles an event', async () => {
    const events = Array.from({ length: 5 }, (_, i) => event(i + 1));
    const { fetch, calls } = fakeFetch(feedServer(events));
    const controller = new AbortController();
    const follower = makeClient(fetch).receipts.follow({ signal: controller.signal });
    const seen: ReceiptEvent[] = [];
    for await (const e of follower) {
      seen.push(e);
      if (seen.length === 2) controller.abort();
    }
    expect(seen).toHaveLength(2);
    expect(calls).toHaveLength(1);
    expect(follower.nextCursor).toBeUndefined(); // the page was not finished: resume from its start
  });

  it('does not start when the signal is already aborted', async () => {
    const { fetch, calls } = fakeFetch(feedServer([event(1)]));
    const follower = makeClient(fetch).receipts.follow({ signal: AbortSignal.abort() });
    expect(await collect(follower)).toEqual([]);
    expect(calls).toHaveLength(0);
  });

  it('retries a failed poll as every GET, then goes on', async () => {
    const events = [event(1)];
    const serve = feedServer(events);
    const { fetch, calls } = fakeFetch((r, i) =>
      i === 1 ? problem(503, 'unavailable', { 'retry-after': '1' }) : serve(r),
    );
    const controller = new AbortController();
    let waits = 0;
    const client = makeClient(fetch, {
      sleep: async () => {
        waits++;
        if (waits === 1) events.push(event(2));
      },
    });
    const seen: ReceiptEvent[] = [];
    for await (const e of client.receipts.follow({ signal: controller.signal })) {
      seen.push(e);
      if (seen.length === 2) controller.abort();
    }
    expect(ids(seen)).toEqual(events.map((e) => e.id));
    expect(afters(calls)).toEqual([null, 'c-1', 'c-1']);
  });

  it('ends with the error when a request still fails after the retries', async () => {
    const { fetch, calls } = fakeFetch(() => new Response('down', { status: 502 }));
    const follower = makeClient(fetch).receipts.follow({ after: 'c-7' });
    await expect(follower.next()).rejects.toBeInstanceOf(SystemError);
    expect(calls).toHaveLength(3);
    expect(follower.nextCursor).toBe('c-7');
  });

  it('refuses an interval that is not a number of milliseconds', () => {
    const { fetch } = fakeFetch(feedServer([]));
    const client = makeClient(fetch);
    expect(() => client.receipts.follow({ intervalMs: -1 })).toThrow(TypeError);
    expect(() => client.receipts.follow({ intervalMs: Number.NaN })).toThrow(TypeError);
  });
});

describe('receipt feed errors', () => {
  const list = (fetch: ReturnType<typeof fakeFetch>['fetch'], options = {}) =>
    collect(makeClient(fetch, options).receipts.list({ after: 'c-1' }));

  for (const [label, response, ErrorClass, problemCode] of [
    [
      'an altered cursor (400)',
      () => problem(400, 'invalid_request'),
      InvalidParametersError,
      'invalid_request',
    ],
    ['wrong credentials (401)', () => problem(401, 'unauthorized'), InvalidCredentialsError, 'unauthorized'],
    [
      'a locked-out key (429)',
      () => problem(429, 'locked_out', { 'retry-after': '900' }),
      RateLimitError,
      'locked_out',
    ],
  ] as const) {
    it(`maps ${label} to ${ErrorClass.name}`, async () => {
      const { fetch, calls } = fakeFetch(response);
      const err = await list(fetch).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ErrorClass);
      expect(err).toMatchObject({ problemCode, requestId: 'req-p' });
      expect(calls).toHaveLength(1);
    });
  }

  it('maps a 404 (a server older than the SDK) to UnsupportedByServerError', async () => {
    const { fetch } = fakeFetch(() => json({ message: 'Route GET:/receipts not found' }, 404));
    const err = await list(fetch).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnsupportedByServerError);
    expect((err as Error).cause).toMatchObject({ status: 404 });
  });

  it('treats a success it cannot read as a SystemError (a feed without nextCursor, a bad event)', async () => {
    for (const body of [
      { receipts: [], hasMore: false },
      { receipts: [{ id: 'evt_1', recordedAt: 'x' }], nextCursor: 'c-1', hasMore: false },
      [event(1)],
    ]) {
      const { fetch } = fakeFetch(() => json(body));
      await expect(list(fetch, { maxRetries: 0 })).rejects.toBeInstanceOf(SystemError);
    }
  });

  it('throws ConnectionError when nothing answers', async () => {
    const fetch = async () => {
      throw new TypeError('fetch failed');
    };
    await expect(list(fetch, { maxRetries: 0 })).rejects.toBeInstanceOf(ConnectionError);
  });

  it('throws AbortError when list is aborted through its signal', async () => {
    const controller = new AbortController();
    const pending = collect(makeClient(hangingFetch).receipts.list({ signal: controller.signal }));
    controller.abort();
    await expect(pending).rejects.toBeInstanceOf(AbortError);
  });
});

async function collect(iterable: AsyncIterable<ReceiptEvent>, max = Number.POSITIVE_INFINITY) {
  const out: ReceiptEvent[] = [];
  for await (const e of iterable) {
    out.push(e);
    if (out.length >= max) break;
  }
  return out;
}
