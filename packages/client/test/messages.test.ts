import { describe, expect, it } from 'vitest';
import {
  InvalidCredentialsError,
  type MessagePage,
  type MessageRecord,
  TimeoutError,
  UnsupportedByServerError,
  type WaybillWarning,
} from '../src/index.js';
import {
  fakeFetch,
  hangingFetch,
  json,
  KEY,
  makeClient,
  problem,
  SECRET,
  type SeenRequest,
} from './helpers.js';

const BASE_TIME = Date.parse('2026-11-22T10:00:00.000Z');

function record(index: number, overrides: Partial<MessageRecord> = {}): MessageRecord {
  return {
    id: `m-${String(index).padStart(3, '0')}`,
    channel: 'SMS',
    direction: 'outbound',
    contactId: '0190c0de-0000-7000-8000-000000000001',
    channelUserId: '447700900123',
    conversationId: '0190c0de-0000-7000-8000-000000000002',
    campaignId: null,
    text: `message ${index}`,
    content: null,
    status: 'delivered',
    createdAt: new Date(BASE_TIME + index * 1000).toISOString(),
    ...overrides,
  };
}

/** A server of `records` (oldest first) answering both modes with the contract's semantics. */
function historyServer(records: MessageRecord[]) {
  return (request: SeenRequest): Response => {
    const q = request.url.searchParams;
    const ids = q.get('messageIds');
    if (ids !== null) {
      const wanted = new Set(ids.split(','));
      return json({ messages: records.filter((r) => wanted.has(r.id)), nextCursor: null, hasMore: false });
    }
    const size = Number(q.get('size') ?? 20);
    const end = q.get('cursor') === null ? records.length : Number(q.get('cursor')?.slice('c-'.length));
    const start = Math.max(0, end - size);
    const hasMore = start > 0;
    return json({ messages: records.slice(start, end), nextCursor: hasMore ? `c-${start}` : null, hasMore });
  };
}

describe('client.messages.get', () => {
  it('uses GET /messages with HTTP Basic, never key and secret in the query', async () => {
    const { fetch, calls } = fakeFetch(() =>
      json({ messages: [record(1)], nextCursor: null, hasMore: false }),
    );
    const [m] = await makeClient(fetch).messages.get(['m-001']);
    expect(m?.id).toBe('m-001');
    const [call] = calls;
    expect(call?.url.pathname).toBe('/messages');
    expect(call?.url.searchParams.get('messageIds')).toBe('m-001');
    expect(call?.url.searchParams.has('key')).toBe(false);
    expect(call?.url.searchParams.has('secret')).toBe(false);
    expect(call?.headers.get('authorization')).toBe(`Basic ${btoa(`${KEY}:${SECRET}`)}`);
  });

  it('sends nothing for no ids', async () => {
    const { fetch, calls } = fakeFetch(() => json({ messages: [], nextCursor: null, hasMore: false }));
    await expect(makeClient(fetch).messages.get([])).resolves.toEqual([]);
    expect(calls).toHaveLength(0);
  });

  it('trims, drops empty and duplicate ids', async () => {
    const { fetch, calls } = fakeFetch(() => json({ messages: [], nextCursor: null, hasMore: false }));
    await makeClient(fetch).messages.get(['a', ' a ', '', 'b']);
    expect(calls.map((c) => c.url.searchParams.get('messageIds'))).toEqual(['a,b']);
  });

  it('refuses an id with a comma instead of querying two ids', async () => {
    const { fetch } = fakeFetch(() => json({ messages: [], nextCursor: null, hasMore: false }));
    await expect(makeClient(fetch).messages.get(['a,b'])).rejects.toBeInstanceOf(TypeError);
  });

  it('splits 45 ids into 3 requests of at most 20 and merges them oldest first', async () => {
    // Two recipients of one SMS id, and every record answered in reverse order.
    const records = Array.from({ length: 45 }, (_, i) => record(i));
    const twin = record(7, { channelUserId: '447700900999' });
    const all = [...records, twin];
    const { fetch, calls } = fakeFetch((request) => {
      const wanted = new Set(request.url.searchParams.get('messageIds')?.split(','));
      const found = all.filter((r) => wanted.has(r.id)).reverse();
      return json({ messages: found, nextCursor: null, hasMore: false });
    });
    const ids = records.map((r) => r.id).reverse();
    const result = await makeClient(fetch).messages.get(ids);

    expect(calls).toHaveLength(3);
    const sizes = calls.map((c) => c.url.searchParams.get('messageIds')?.split(',').length);
    expect(sizes).toEqual([20, 20, 5]);
    const asked = calls.flatMap((c) => c.url.searchParams.get('messageIds')?.split(',') ?? []);
    expect(new Set(asked).size).toBe(45);
    expect(result).toHaveLength(46);
    const expected = [...all].sort(
      (a, b) =>
        a.createdAt.localeCompare(b.createdAt) ||
        a.id.localeCompare(b.id) ||
        a.channelUserId.localeCompare(b.channelUserId),
    );
    expect(result.map((r) => `${r.id}/${r.channelUserId}`)).toEqual(
      expected.map((r) => `${r.id}/${r.channelUserId}`),
    );
  });

  it('de-duplicates a record returned by two requests', async () => {
    const same = record(1);
    const { fetch } = fakeFetch(() => json({ messages: [same], nextCursor: null, hasMore: false }));
    const ids = Array.from({ length: 30 }, (_, i) => `id-${i}`);
    await expect(makeClient(fetch).messages.get(ids)).resolves.toEqual([same]);
  });

  it('orders by createdAt, then id, then channelUserId', async () => {
    const t = '2026-11-22T10:00:00.000Z';
    const shuffled = [
      record(0, { id: 'b', createdAt: t, channelUserId: '2' }),
      record(0, { id: 'a', createdAt: '2026-11-22T10:00:00.001Z', channelUserId: '0' }),
      record(0, { id: 'b', createdAt: t, channelUserId: '1' }),
      record(0, { id: 'a', createdAt: t }),
    ];
    const { fetch } = fakeFetch(() => json({ messages: shuffled, nextCursor: null, hasMore: false }));
    const result = await makeClient(fetch).messages.get(['a', 'b']);
    expect(result.map((r) => `${r.createdAt.slice(-6)} ${r.id} ${r.channelUserId}`)).toEqual([
      '0.000Z a 447700900123',
      '0.000Z b 1',
      '0.000Z b 2',
      '0.001Z a 0',
    ]);
  });

  it('keeps at most 4 requests in flight', async () => {
    let inFlight = 0;
    let peak = 0;
    const { fetch, calls } = fakeFetch(async () => {
      inFlight++;
      peak = Math.max(peak, inFlight);
      await new Promise((resolve) => setTimeout(resolve, 5));
      inFlight--;
      return json({ messages: [], nextCursor: null, hasMore: false });
    });
    await makeClient(fetch).messages.get(Array.from({ length: 200 }, (_, i) => `id-${i}`));
    expect(calls).toHaveLength(10);
    expect(peak).toBe(4);
  });

  it('fails as a whole when one request fails, and stops sending the rest', async () => {
    const { fetch, calls } = fakeFetch((_r, i) =>
      i === 1 ? problem(401, 'unauthorized') : json({ messages: [], nextCursor: null, hasMore: false }),
    );
    const ids = Array.from({ length: 200 }, (_, i) => `id-${i}`);
    await expect(makeClient(fetch).messages.get(ids)).rejects.toBeInstanceOf(InvalidCredentialsError);
    expect(calls.length).toBeLessThan(10);
  });

  it('applies timeoutMs to the whole call', async () => {
    const ids = Array.from({ length: 45 }, (_, i) => `id-${i}`);
    await expect(makeClient(hangingFetch).messages.get(ids, { timeoutMs: 20 })).rejects.toBeInstanceOf(
      TimeoutError,
    );
  });
});

describe('client.messages.history', () => {
  const records = Array.from({ length: 45 }, (_, i) => record(i));

  it('walks 45 messages newest to oldest across pages', async () => {
    const { fetch, calls } = fakeFetch(historyServer(records));
    const seen: MessageRecord[] = [];
    for await (const m of makeClient(fetch).messages.history({
      channel: 'SMS',
      channelUserId: '447700900123',
      size: 10,
    })) {
      seen.push(m);
    }
    expect(seen.map((m) => m.id)).toEqual(records.map((r) => r.id).reverse());
    expect(calls).toHaveLength(5);
    const [first, second] = calls;
    expect(Object.fromEntries(first?.url.searchParams ?? [])).toEqual({
      channel: 'SMS',
      channelUserId: '447700900123',
      size: '10',
    });
    expect(second?.url.searchParams.get('cursor')).toBe('c-35');
  });

  it('yields the pages as the server returns them', async () => {
    const { fetch } = fakeFetch(historyServer(records));
    const pages: MessagePage[] = [];
    for await (const page of makeClient(fetch)
      .messages.history({ channel: 'SMS', contactId: 'c1', size: 20 })
      .pages()) {
      pages.push(page);
    }
    expect(pages.map((p) => p.messages.length)).toEqual([20, 20, 5]);
    expect(pages.map((p) => p.hasMore)).toEqual([true, true, false]);
    expect(pages[0]?.messages[0]?.id).toBe('m-025');
    expect(pages[2]?.nextCursor).toBeNull();
  });

  it('fetches only the pages it needs', async () => {
    const { fetch, calls } = fakeFetch(historyServer(records));
    const latest = await makeClient(fetch)
      .messages.history({ channel: 'SMS', channelUserId: 'x', size: 10 })
      .take(12);
    expect(latest.map((m) => m.id)).toEqual(
      records
        .slice(33)
        .map((r) => r.id)
        .reverse(),
    );
    expect(calls).toHaveLength(2);
  });

  it('passes contactId, campaignId and a starting cursor', async () => {
    const { fetch, calls } = fakeFetch(historyServer(records));
    const pager = makeClient(fetch).messages.history({
      channel: 'VIBER',
      contactId: 'c1',
      campaignId: 'spring',
      cursor: 'c-10',
      size: 10,
    });
    const pages = [];
    for await (const page of pager.pages()) pages.push(page);
    expect(pages).toHaveLength(1);
    expect(Object.fromEntries(calls[0]?.url.searchParams ?? [])).toEqual({
      channel: 'VIBER',
      contactId: 'c1',
      campaignId: 'spring',
      cursor: 'c-10',
      size: '10',
    });
  });

  it('lists a campaign', async () => {
    const { fetch, calls } = fakeFetch(historyServer(records));
    const all = [];
    for await (const m of makeClient(fetch).messages.campaign('spring', { channel: 'SMS', size: 50 }))
      all.push(m);
    expect(all).toHaveLength(45);
    expect(Object.fromEntries(calls[0]?.url.searchParams ?? [])).toEqual({
      campaignId: 'spring',
      channel: 'SMS',
      size: '50',
    });
  });

  it('still takes the deprecated pageSize as the size', async () => {
    const { fetch, calls } = fakeFetch(historyServer(records));
    const client = makeClient(fetch);
    await client.messages.history({ channel: 'SMS', channelUserId: 'x', pageSize: 15 }).take(1);
    await client.messages.campaign('spring', { pageSize: 7 }).take(1);
    // The same value under both names is no conflict.
    await client.messages.history({ channel: 'SMS', contactId: 'c1', size: 9, pageSize: 9 }).take(1);
    expect(calls.map((c) => c.url.searchParams.getAll('size'))).toEqual([['15'], ['7'], ['9']]);
  });

  it('refuses size and pageSize given with different values, before any request', () => {
    const { fetch, calls } = fakeFetch(historyServer(records));
    const client = makeClient(fetch);
    expect(() =>
      client.messages.history({ channel: 'SMS', channelUserId: 'x', size: 10, pageSize: 50 }),
    ).toThrow(
      new TypeError('Give size (10) or pageSize (50), not both: pageSize is the deprecated old name of size'),
    );
    expect(() => client.messages.campaign('spring', { size: 10, pageSize: 50 })).toThrow(TypeError);
    expect(calls).toHaveLength(0);
  });

  it('stops on a page that says hasMore without a cursor', async () => {
    const { fetch, calls } = fakeFetch(() =>
      json({ messages: [record(1)], nextCursor: null, hasMore: true }),
    );
    const pages = [];
    for await (const page of makeClient(fetch).messages.campaign('x').pages()) pages.push(page);
    expect(pages).toHaveLength(1);
    expect(calls).toHaveLength(1);
  });

  it('propagates errors from a page request', async () => {
    const { fetch } = fakeFetch(() => problem(400, 'invalid_request'));
    const pager = makeClient(fetch).messages.history({ channel: 'SMS', channelUserId: 'x' });
    await expect(pager.take(1)).rejects.toMatchObject({ code: 3, problemCode: 'invalid_request' });
  });
});

describe('fallback to the deprecated endpoint', () => {
  const records = Array.from({ length: 45 }, (_, i) => record(i));

  /** An old server: no /messages; v1 answers Mode 1 with a bare array. */
  function oldServer() {
    const serve = historyServer(records);
    return fakeFetch((request) => {
      if (request.url.pathname === '/messages')
        return json({ message: 'Route GET:/messages not found' }, 404);
      if (request.url.pathname !== '/api/v1/contacts/messages') return json({}, 500);
      const ids = request.url.searchParams.get('messageIds');
      if (ids === null) return serve(request);
      const wanted = new Set(ids.split(','));
      return json(records.filter((r) => wanted.has(r.id)));
    });
  }

  it('switches after one 404, warns once, and stays switched', async () => {
    const { fetch, calls } = oldServer();
    const warnings: WaybillWarning[] = [];
    const client = makeClient(fetch, { onWarning: (w) => warnings.push(w) });

    const found = await client.messages.get(records.map((r) => r.id));
    expect(found.map((r) => r.id)).toEqual(records.map((r) => r.id));
    const walked = await client.messages.history({ channel: 'SMS', channelUserId: 'x', size: 10 }).take(45);
    expect(walked).toHaveLength(45);

    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.code).toBe('deprecated_endpoint');
    const paths = calls.map((c) => c.url.pathname);
    // The three concurrent chunks may each have met the 404 once; nothing after them asks /messages again.
    const lastCurrent = paths.lastIndexOf('/messages');
    expect(lastCurrent).toBeLessThan(3);
    expect(paths.filter((p) => p === '/api/v1/contacts/messages')).toHaveLength(3 + 5);
    const v1 = calls.find((c) => c.url.pathname === '/api/v1/contacts/messages');
    expect(v1?.headers.get('authorization')).toMatch(/^Basic /);
  });

  it('refuses a campaign filter the old endpoint would ignore', async () => {
    const { fetch } = oldServer();
    const client = makeClient(fetch);
    await expect(client.messages.campaign('spring').take(1)).rejects.toBeInstanceOf(UnsupportedByServerError);
    await expect(
      client.messages.history({ channel: 'SMS', channelUserId: 'x', campaignId: 'spring' }).take(1),
    ).rejects.toBeInstanceOf(UnsupportedByServerError);
  });

  it('does not fall back on other errors', async () => {
    const warnings: WaybillWarning[] = [];
    const { fetch, calls } = fakeFetch(() => problem(401, 'unauthorized'));
    await expect(
      makeClient(fetch, { onWarning: (w) => warnings.push(w) }).messages.get(['m-1']),
    ).rejects.toBeInstanceOf(InvalidCredentialsError);
    expect(calls).toHaveLength(1);
    expect(warnings).toHaveLength(0);
  });
});
