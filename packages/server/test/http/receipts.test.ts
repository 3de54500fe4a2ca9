import { beforeEach, describe, expect, it } from 'vitest';
import { ReceiptFeedSchema } from '../../src/http/schemas.js';
import { engines } from '../support/engines.js';
import { basic, type CreatedAccount, START, useHarness } from '../support/http.js';
import { expectProblem } from '../support/problems.js';
import { schemaSerializer } from '../support/serializers.js';

const TO = '447700900123';
const drTime = (seconds: number) => new Date(START + seconds * 1000).toISOString();

interface Feed {
  receipts: { id: string; recordedAt: string; receipt: Record<string, unknown> }[];
  nextCursor: string;
  hasMore: boolean;
}

describe.each(engines())('$name GET /receipts', (engine) => {
  const h = useHarness(engine);
  let acct: CreatedAccount;
  beforeEach(async () => {
    acct = await h().createAccount();
    const ids = ['m-1', 'm-2', 'm-3'];
    expect(
      (
        await h().ingest(
          acct.id,
          ids.map((id) => ({ id, channel: 'SMS', channelUserId: TO })),
        )
      ).statusCode,
    ).toBe(200);
  });

  const feed = (query = '', account: CreatedAccount = acct) =>
    h().inject({
      method: 'GET',
      url: `/receipts${query}`,
      headers: { authorization: basic(account.key, account.secret) },
    });
  const page = async (query = ''): Promise<Feed> => {
    const res = await feed(query);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    const body = res.json() as Feed;
    expect(Object.keys(body).sort()).toStrictEqual(['hasMore', 'nextCursor', 'receipts']);
    return body;
  };
  const receipt = (messageId: string, drStatuscode: string, seconds: number) => ({
    messageId,
    drStatuscode,
    drTime: drTime(seconds),
  });

  it('lists applied receipts oldest first, each with the /dlr item as it stood then', async () => {
    await h().receipts(acct.id, [receipt('m-1', 'accepted', 1)]);
    h().advance(1000);
    await h().receipts(acct.id, [receipt('m-1', 'delivered', 2), receipt('m-1', 'delivered', 2)]);
    const body = await page();
    expect(body.hasMore).toBe(false);
    expect(body.receipts).toHaveLength(2);
    const [first, second] = body.receipts;
    expect(first).toStrictEqual({
      id: expect.stringMatching(/^evt_[0-9A-HJKMNP-TV-Z]{26}$/),
      recordedAt: new Date(START).toISOString(),
      receipt: {
        type: 'dlr',
        messageid: 'm-1',
        to: TO,
        status: '0',
        price: 0,
        counts: 1,
        drStatus: 0,
        drStatuscode: 'accepted',
        drErrcode: '0',
        drTime: '2026-11-22 10:00:01.000',
      },
    });
    expect(second?.recordedAt).toBe(new Date(START + 1000).toISOString());
    expect(second?.receipt).toMatchObject({ drStatuscode: 'delivered' });
    // The current state of /dlr matches the newest event.
    const dlr = await h().inject(`/dlr?key=${acct.key}&secret=${acct.secret}&messageid=m-1`);
    expect(dlr.json()).toStrictEqual([second?.receipt]);
  });

  it('answers the bytes the feed schema serializes: stored items spliced in schema order, nothing else', async () => {
    const ingested = await h().ingest(acct.id, [
      { id: 'm-4', channel: 'SMS', channelUserId: TO, sms: { network: '23415', price: 0.0123, counts: 2 } },
    ]);
    expect(ingested.statusCode, ingested.body).toBe(200);
    const applied = await h().receipts(acct.id, [
      receipt('m-1', 'accepted', 1),
      { ...receipt('m-4', 'failed', 2), drErrcode: '1' },
    ]);
    expect(applied.json(), applied.body).toMatchObject({ applied: 2 });
    const serialize = schemaSerializer(ReceiptFeedSchema);
    for (const query of ['', '?limit=1']) {
      const res = await feed(query);
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(res.body).toBe(serialize(res.json()));
    }
    expect((await page()).receipts[1]?.receipt).toMatchObject({ network: '23415', drErrcode: '1' });
  });

  it('walks every event exactly once across pages, and polls from the end for what comes later', async () => {
    await h().receipts(acct.id, [
      receipt('m-1', 'accepted', 1),
      receipt('m-2', 'accepted', 1),
      receipt('m-3', 'accepted', 1),
    ]);
    await h().receipts(acct.id, [receipt('m-1', 'delivered', 2), receipt('m-2', 'failed', 2)]);
    const seen: string[] = [];
    let cursor = '';
    for (let guard = 0; guard < 10; guard++) {
      const body = await page(`?limit=2${cursor ? `&after=${encodeURIComponent(cursor)}` : ''}`);
      seen.push(...body.receipts.map((r) => `${r.receipt.messageid}:${r.receipt.drStatuscode}`));
      cursor = body.nextCursor;
      if (!body.hasMore) break;
    }
    expect(seen).toStrictEqual([
      'm-1:accepted',
      'm-2:accepted',
      'm-3:accepted',
      'm-1:delivered',
      'm-2:failed',
    ]);
    // At the end: an empty page that keeps the same position.
    const empty = await page(`?after=${encodeURIComponent(cursor)}`);
    expect(empty).toStrictEqual({ receipts: [], nextCursor: cursor, hasMore: false });
    await h().receipts(acct.id, [receipt('m-3', 'delivered', 3)]);
    const later = await page(`?after=${encodeURIComponent(cursor)}`);
    expect(later.receipts.map((r) => r.receipt.messageid)).toStrictEqual(['m-3']);
    expect(later.nextCursor).not.toBe(cursor);
  });

  it('answers an empty feed with a cursor to poll from', async () => {
    const body = await page();
    expect(body.receipts).toStrictEqual([]);
    expect(body.hasMore).toBe(false);
    expect(body.nextCursor).toEqual(expect.any(String));
    await h().receipts(acct.id, [receipt('m-1', 'accepted', 1)]);
    expect((await page(`?after=${encodeURIComponent(body.nextCursor)}`)).receipts).toHaveLength(1);
  });

  it('lists events whether or not a callback is configured, and nothing of parked receipts', async () => {
    await h().receipts(acct.id, [receipt('m-9', 'delivered', 1)]);
    expect((await page()).receipts).toStrictEqual([]);
    await h().ingest(acct.id, [{ id: 'm-9', channel: 'SMS', channelUserId: TO }]);
    expect((await page()).receipts.map((r) => r.receipt.messageid)).toStrictEqual(['m-9']);
  });

  it('refuses a cursor that was altered, forged or comes from another account', async () => {
    const other = await h().createAccount();
    await h().receipts(acct.id, [receipt('m-1', 'accepted', 1)]);
    const mine = (await page()).nextCursor;
    const theirs = (await feed('', other).then((r) => r.json() as Feed)).nextCursor;
    for (const bad of [
      theirs,
      `${mine}x`,
      mine.replace(/^./, (c) => (c === 'M' ? 'N' : 'M')),
      'MQ.AAAA',
      'nonsense',
    ]) {
      expectProblem(await feed(`?after=${encodeURIComponent(bad)}`), 400, 'invalid_request');
    }
    expectProblem(await feed('?after='), 400, 'invalid_request');
  });

  it('validates limit, and refuses a parameter given twice', async () => {
    for (const limit of ['0', '1001', '-1', '1.5', 'ten', '']) {
      expectProblem(await feed(`?limit=${limit}`), 400, 'invalid_request');
    }
    expectProblem(await feed('?limit=1&limit=2'), 400, 'invalid_request');
    expect((await feed('?limit=1000')).statusCode).toBe(200);
  });

  it('authenticates like /messages: 401 with WWW-Authenticate, query credentials accepted', async () => {
    const res = await h().inject({ method: 'GET', url: '/receipts' });
    expectProblem(res, 401, 'unauthorized');
    expect(res.headers['www-authenticate']).toBe('Basic realm="waybill"');
    expectProblem(
      await h().inject({
        method: 'GET',
        url: '/receipts',
        headers: { authorization: basic(acct.key, 'WRONG123') },
      }),
      401,
      'unauthorized',
    );
    const viaQuery = await h().inject(`/receipts?key=${acct.key}&secret=${acct.secret}`);
    expect(viaQuery.statusCode).toBe(200);
    expect(viaQuery.headers.ratelimit).toEqual(expect.any(String));
  });

  it('answers 405 with Allow to other methods', async () => {
    const res = await h().inject({ method: 'POST', url: '/receipts' });
    expectProblem(res, 405, 'method_not_allowed');
    expect(res.headers.allow).toBe('GET, HEAD');
  });
});
