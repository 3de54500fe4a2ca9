import type { LightMyRequestResponse } from 'fastify';
import { beforeEach, describe, expect, it } from 'vitest';
import { engines } from '../support/engines.js';
import { basic, type CreatedAccount, type Harness, START, useHarness } from '../support/http.js';
import { expectProblem } from '../support/problems.js';

const V1 = '/api/v1/contacts/messages';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const DEFAULT_DEPRECATION = '@1767225600';
const DEFAULT_SUNSET = 'Fri, 01 Jan 2027 00:00:00 GMT';
const ALICE = '447700900001';
const BOB = '447700900002';

/** `START + minutes`, as RFC 3339 with milliseconds. */
const at = (minutes: number) => new Date(START + minutes * 60_000).toISOString();

const query = (params: Record<string, string>) => new URLSearchParams(params).toString();

interface Page {
  messages: { id: string; channelUserId: string; contactId: string; [field: string]: unknown }[];
  nextCursor: string | null;
  hasMore: boolean;
}

function expectDeprecation(
  res: LightMyRequestResponse,
  link = '</messages>',
  deprecation = DEFAULT_DEPRECATION,
  sunset = DEFAULT_SUNSET,
): void {
  expect(res.headers.deprecation).toBe(deprecation);
  expect(res.headers.sunset).toBe(sunset);
  expect(res.headers.link).toBe(`${link}; rel="successor-version"`);
}

/** Query helpers bound to a harness and its current account. */
function client(h: () => Harness, account: () => CreatedAccount) {
  const v1 = (params: Record<string, string>, acct: CreatedAccount = account()) =>
    h().inject({
      method: 'GET',
      url: `${V1}?${query(params)}`,
      headers: { authorization: basic(acct.key, acct.secret) },
    });
  const ok = async (params: Record<string, string>, acct?: CreatedAccount): Promise<unknown> => {
    const res = await v1(params, acct);
    expect(res.statusCode, res.body).toBe(200);
    expectDeprecation(res, `</messages?${query(params)}>`);
    return res.json();
  };
  const page = (params: Record<string, string>, acct?: CreatedAccount) => ok(params, acct) as Promise<Page>;
  const ingestOk = async (messages: unknown[], acct: CreatedAccount = account()) => {
    const res = await h().ingest(acct.id, messages);
    expect(res.statusCode, res.body).toBe(200);
  };
  const contactOf = async (channel: string, channelUserId: string, acct?: CreatedAccount) => {
    const p = await page({ channel, channelUserId, size: '1' }, acct);
    const contactId = p.messages[0]?.contactId;
    if (typeof contactId !== 'string') throw new Error(`no contact for ${channel} ${channelUserId}`);
    return contactId;
  };
  /** Every page of a Mode 2 query, following nextCursor. */
  const walk = async (params: Record<string, string>, acct?: CreatedAccount): Promise<Page[]> => {
    const pages: Page[] = [];
    let cursor: string | null = null;
    do {
      const p: Page = await page(cursor === null ? params : { ...params, cursor }, acct);
      pages.push(p);
      cursor = p.nextCursor;
      if (pages.length > 50) throw new Error('paging does not end');
    } while (cursor !== null);
    return pages;
  };
  return { v1, ok, page, ingestOk, contactOf, walk };
}

const idsOf = (p: Page) => p.messages.map((m) => m.id);

/** SMS messages `prefix-1` … `prefix-n` to one number, one minute apart (1 is the oldest). */
const smsSeries = (prefix: string, n: number, to = ALICE, extra: Record<string, unknown> = {}) =>
  Array.from({ length: n }, (_, i) => ({
    id: `${prefix}-${String(i + 1).padStart(2, '0')}`,
    channel: 'SMS',
    channelUserId: to,
    createdAt: at(i + 1),
    text: `message ${i + 1}`,
    ...extra,
  }));

describe.each(engines())('$name GET /api/v1/contacts/messages', (engine) => {
  describe('with the default dates', () => {
    const h = useHarness(engine);
    let acct: CreatedAccount;
    beforeEach(async () => {
      acct = await h().createAccount();
    });
    const { v1, ok, page, ingestOk, contactOf, walk } = client(h, () => acct);

    describe('authentication', () => {
      beforeEach(async () => {
        await ingestOk([{ id: 'm-1', channel: 'SMS', channelUserId: ALICE, text: 'hi' }]);
      });

      it('accepts HTTP Basic', async () => {
        expect(await ok({ messageIds: 'm-1' })).toMatchObject([{ id: 'm-1' }]);
      });

      it('accepts key and secret as query parameters, and leaves them out of the successor link', async () => {
        const res = await h().inject(
          `${V1}?${query({ key: acct.key, secret: acct.secret, messageIds: 'm-1' })}`,
        );
        expect(res.statusCode, res.body).toBe(200);
        expect(res.json()).toMatchObject([{ id: 'm-1' }]);
        expectDeprecation(res, '</messages?messageIds=m-1>');
      });

      it('lets Basic win over query credentials', async () => {
        const other = await h().createAccount({ name: 'Other' });
        // Good Basic, wrong query secret: Basic decides.
        const good = await h().inject({
          url: `${V1}?${query({ key: acct.key, secret: 'WRONG123', messageIds: 'm-1' })}`,
          headers: { authorization: basic(acct.key, acct.secret) },
        });
        expect(good.statusCode, good.body).toBe(200);
        expect(good.json()).toMatchObject([{ id: 'm-1' }]);
        // Basic of another account, query of this one: the other account is asked, which has no m-1.
        const swapped = await h().inject({
          url: `${V1}?${query({ key: acct.key, secret: acct.secret, messageIds: 'm-1' })}`,
          headers: { authorization: basic(other.key, other.secret) },
        });
        expect(swapped.statusCode, swapped.body).toBe(200);
        expect(swapped.json()).toStrictEqual([]);
        // Wrong Basic, right query credentials: refused.
        const bad = await h().inject({
          url: `${V1}?${query({ key: acct.key, secret: acct.secret, messageIds: 'm-1' })}`,
          headers: { authorization: basic(acct.key, 'WRONG123') },
        });
        expectProblem(bad, 401, 'unauthorized');
      });

      const refusals: [string, () => { url: string; headers?: Record<string, string> }][] = [
        ['no credentials', () => ({ url: `${V1}?messageIds=m-1` })],
        [
          'a wrong secret (Basic)',
          () => ({ url: `${V1}?messageIds=m-1`, headers: { authorization: basic(acct.key, 'WRONG123') } }),
        ],
        [
          'an unknown key (Basic)',
          () => ({ url: `${V1}?messageIds=m-1`, headers: { authorization: basic('NOSUCHKY', acct.secret) } }),
        ],
        [
          'a wrong secret (query)',
          () => ({ url: `${V1}?${query({ key: acct.key, secret: 'WRONG123', messageIds: 'm-1' })}` }),
        ],
        ['only a key (query)', () => ({ url: `${V1}?${query({ key: acct.key, messageIds: 'm-1' })}` })],
        [
          'only a secret (query)',
          () => ({ url: `${V1}?${query({ secret: acct.secret, messageIds: 'm-1' })}` }),
        ],
        [
          'a malformed key (query)',
          () => ({ url: `${V1}?${query({ key: 'short', secret: acct.secret, messageIds: 'm-1' })}` }),
        ],
        [
          'a key given twice (query)',
          () => ({ url: `${V1}?key=${acct.key}&key=${acct.key}&secret=${acct.secret}&messageIds=m-1` }),
        ],
        [
          'Basic without a colon',
          () => ({
            url: `${V1}?messageIds=m-1`,
            headers: { authorization: `Basic ${Buffer.from(acct.key + acct.secret).toString('base64')}` },
          }),
        ],
        [
          'Basic that is not base64 of key:secret',
          () => ({ url: `${V1}?messageIds=m-1`, headers: { authorization: 'Basic !!!not-base64!!!' } }),
        ],
        ['an empty Basic', () => ({ url: `${V1}?messageIds=m-1`, headers: { authorization: 'Basic ' } })],
        [
          'Basic with a malformed secret',
          () => ({ url: `${V1}?messageIds=m-1`, headers: { authorization: basic(acct.key, 'sec ret!') } }),
        ],
        [
          'a Bearer token',
          () => ({ url: `${V1}?messageIds=m-1`, headers: { authorization: `Bearer ${acct.secret}` } }),
        ],
      ];
      it.each(refusals)('answers 401 with WWW-Authenticate to %s', async (_name, request) => {
        const res = await h().inject({ method: 'GET', ...request() });
        const body = expectProblem(res, 401, 'unauthorized');
        expect(body.title).toBe('Unauthorized');
        expect(res.headers['www-authenticate']).toBe('Basic realm="waybill"');
        expect(res.body).not.toContain(acct.secret);
        expectDeprecation(res, '</messages?messageIds=m-1>');
      });

      it('authenticates before it validates parameters', async () => {
        const badParams = { messageIds: ',,,', channel: 'FAX' };
        expectProblem(await h().inject(`${V1}?${query(badParams)}`), 401, 'unauthorized');
        const wrong = await h().inject({
          url: `${V1}?${query(badParams)}`,
          headers: { authorization: basic(acct.key, 'WRONG123') },
        });
        expectProblem(wrong, 401, 'unauthorized');
        const noMode = await h().inject({
          url: `${V1}?size=0`,
          headers: { authorization: basic(acct.key, 'WRONG123') },
        });
        expectProblem(noMode, 401, 'unauthorized');
        // With good credentials the same parameters are a 400.
        expectProblem(await v1(badParams), 400, 'invalid_request');
      });

      it('keeps the caller request id in problem bodies', async () => {
        const res = await h().inject({
          url: `${V1}?messageIds=m-1`,
          headers: { 'x-request-id': 'trace-42' },
        });
        expect(expectProblem(res, 401, 'unauthorized').requestId).toBe('trace-42');
        expect(res.headers['x-request-id']).toBe('trace-42');
      });
    });

    describe('Mode 1 (messageIds)', () => {
      it('splits, trims, drops empty elements and duplicates, and answers oldest first', async () => {
        await ingestOk([
          { id: 'm-3', channel: 'SMS', channelUserId: ALICE, createdAt: at(3) },
          { id: 'm-1', channel: 'WHATSAPP', channelUserId: 'wa-alice', createdAt: at(1) },
          { id: 'm-2', channel: 'VIBER', channelUserId: 'vb-alice', createdAt: at(2) },
        ]);
        const records = (await ok({ messageIds: ' m-3 ,, m-1,m-3,\tm-2 ,' })) as Page['messages'];
        expect(Array.isArray(records)).toBe(true);
        expect(records.map((m) => m.id)).toStrictEqual(['m-1', 'm-2', 'm-3']);
      });

      it('answers with message records of exactly the contract fields', async () => {
        await ingestOk([
          {
            id: 'm-1',
            channel: 'whatsapp',
            channelUserId: 'wa-alice',
            campaignId: 'spring',
            text: 'Hi',
            content: { template: 'welcome', vars: [1, 'x'] },
            status: 'read',
            createdAt: '2026-11-22T09:59:58.123Z',
          },
        ]);
        const [record] = (await ok({ messageIds: 'm-1' })) as Record<string, unknown>[];
        expect(record).toStrictEqual({
          id: 'm-1',
          channel: 'WHATSAPP',
          direction: 'outbound',
          contactId: expect.stringMatching(UUID),
          channelUserId: 'wa-alice',
          conversationId: expect.stringMatching(UUID),
          campaignId: 'spring',
          text: 'Hi',
          content: { template: 'welcome', vars: [1, 'x'] },
          status: 'read',
          createdAt: '2026-11-22T09:59:58.123Z',
        });
      });

      it('defaults text, content and campaignId to null and createdAt to now', async () => {
        await ingestOk([{ id: 'm-1', channel: 'TELEGRAM', channelUserId: 'tg-1' }]);
        expect(await ok({ messageIds: 'm-1' })).toMatchObject([
          {
            campaignId: null,
            text: null,
            content: null,
            status: 'sent',
            createdAt: '2026-11-22T10:00:00.000Z',
          },
        ]);
      });

      it('accepts 20 ids (after duplicates are removed) and refuses 21', async () => {
        const twenty = Array.from({ length: 20 }, (_, i) => `m-${i}`);
        expect(await ok({ messageIds: [...twenty, ...twenty].join(',') })).toStrictEqual([]);
        const res = await v1({ messageIds: [...twenty, 'm-20'].join(',') });
        expectProblem(res, 400, 'invalid_request');
        expectDeprecation(res, `</messages?${query({ messageIds: [...twenty, 'm-20'].join(',') })}>`);
      });

      it.each(['', ',', ' , ,, ', '   '])('refuses messageIds=%j that names no id', async (value) => {
        expectProblem(await v1({ messageIds: value }), 400, 'invalid_request');
      });

      it.each(['bad id', 'm/1', 'm-1,ok,n@pe', 'x'.repeat(65), 'é'])(
        'refuses a malformed id in %j',
        async (value) => {
          expectProblem(await v1({ messageIds: value }), 400, 'invalid_request');
        },
      );

      it('refuses messageIds given twice', async () => {
        const res = await h().inject({
          url: `${V1}?messageIds=m-1&messageIds=m-2`,
          headers: { authorization: basic(acct.key, acct.secret) },
        });
        expectProblem(res, 400, 'invalid_request');
      });

      it('silently drops unknown ids and ids of another account', async () => {
        const other = await h().createAccount({ name: 'Other' });
        await ingestOk([{ id: 'theirs', channel: 'SMS', channelUserId: ALICE }], other);
        await ingestOk([{ id: 'mine', channel: 'SMS', channelUserId: ALICE }]);
        expect((await ok({ messageIds: 'theirs,mine,nobody' })) as Page['messages']).toMatchObject([
          { id: 'mine' },
        ]);
        expect(await ok({ messageIds: 'theirs,nobody' })).toStrictEqual([]);
      });

      it('ignores the Mode 2 parameters without validating them', async () => {
        await ingestOk([{ id: 'm-1', channel: 'SMS', channelUserId: ALICE }]);
        const params = {
          messageIds: 'm-1',
          size: 'abc',
          channel: 'FAX',
          contactId: 'not-a-uuid',
          channelUserId: ' ',
          cursor: 'garbage',
        };
        expect(await ok(params)).toMatchObject([{ id: 'm-1' }]);
        const twice = await h().inject({
          url: `${V1}?messageIds=m-1&size=1&size=2&channel=SMS&channel=VIBER`,
          headers: { authorization: basic(acct.key, acct.secret) },
        });
        expect(twice.statusCode, twice.body).toBe(200);
      });

      it('makes every recipient of an SMS id a record of its own', async () => {
        await ingestOk([
          { id: 'blast', channel: 'SMS', channelUserId: BOB, createdAt: at(1) },
          { id: 'blast', channel: 'SMS', channelUserId: ALICE, createdAt: at(1) },
          { id: 'blast', channel: 'SMS', channelUserId: '15551234567', createdAt: at(1) },
        ]);
        const records = (await ok({ messageIds: 'blast' })) as Page['messages'];
        expect(records.map((m) => m.channelUserId)).toStrictEqual(['15551234567', ALICE, BOB]);
        expect(new Set(records.map((m) => m.contactId)).size).toBe(3);
      });

      it('derives the status of each record', async () => {
        await ingestOk([
          { id: 's-pending', channel: 'SMS', channelUserId: ALICE, createdAt: at(1) },
          { id: 's-failed', channel: 'SMS', channelUserId: ALICE, createdAt: at(2), sms: { status: '400' } },
          { id: 's-sent', channel: 'SMS', channelUserId: ALICE, createdAt: at(3), sms: { status: '0' } },
          { id: 's-accepted', channel: 'SMS', channelUserId: ALICE, createdAt: at(4), sms: { status: '0' } },
          { id: 's-delivered', channel: 'SMS', channelUserId: ALICE, createdAt: at(5) },
          { id: 's-rejected', channel: 'SMS', channelUserId: ALICE, createdAt: at(6) },
          { id: 's-in', channel: 'SMS', channelUserId: ALICE, createdAt: at(7), direction: 'inbound' },
          { id: 'w-read', channel: 'WHATSAPP', channelUserId: 'wa-1', createdAt: at(8), status: 'read' },
          { id: 'w-default', channel: 'WHATSAPP', channelUserId: 'wa-1', createdAt: at(9) },
          { id: 'w-in', channel: 'WHATSAPP', channelUserId: 'wa-1', createdAt: at(10), direction: 'inbound' },
          { id: 'r-failed', channel: 'RBM', channelUserId: 'rbm-1', createdAt: at(11), status: 'failed' },
          { id: 'r-pending', channel: 'RBM', channelUserId: 'rbm-1', createdAt: at(12), status: 'pending' },
        ]);
        const receipts = await h().receipts(acct.id, [
          { messageId: 's-accepted', drStatuscode: 'accepted' },
          { messageId: 's-delivered', drStatuscode: 'delivered' },
          { messageId: 's-rejected', drStatuscode: 'rejected', drErrcode: '5' },
        ]);
        expect(receipts.json()).toStrictEqual({ applied: 3, ignored: 0, unknown: [] });
        const records = (await ok({
          messageIds:
            's-pending,s-failed,s-sent,s-accepted,s-delivered,s-rejected,s-in,w-read,w-default,w-in,r-failed,r-pending',
        })) as Page['messages'];
        expect(Object.fromEntries(records.map((m) => [m.id, m.status]))).toStrictEqual({
          's-pending': 'pending',
          's-failed': 'failed',
          's-sent': 'sent',
          's-accepted': 'sent',
          's-delivered': 'delivered',
          's-rejected': 'failed',
          's-in': 'received',
          'w-read': 'read',
          'w-default': 'sent',
          'w-in': 'received',
          'r-failed': 'failed',
          'r-pending': 'pending',
        });
        expect(records.find((m) => m.id === 's-in')?.direction).toBe('inbound');
      });

      it('answers HEAD like GET without a body', async () => {
        await ingestOk([{ id: 'm-1', channel: 'SMS', channelUserId: ALICE }]);
        const res = await h().inject({
          method: 'HEAD',
          url: `${V1}?messageIds=m-1`,
          headers: { authorization: basic(acct.key, acct.secret) },
        });
        expect(res.statusCode).toBe(200);
        expect(res.body).toBe('');
        expectDeprecation(res, '</messages?messageIds=m-1>');
      });
    });

    describe('Mode 2 (contact history)', () => {
      it('pages backwards: newest page first, each page oldest first, every message exactly once', async () => {
        await ingestOk(smsSeries('m', 7));
        const pages = await walk({ channel: 'SMS', channelUserId: ALICE, size: '3' });
        expect(pages.map(idsOf)).toStrictEqual([
          ['m-05', 'm-06', 'm-07'],
          ['m-02', 'm-03', 'm-04'],
          ['m-01'],
        ]);
        expect(pages.map((p) => p.hasMore)).toStrictEqual([true, true, false]);
        expect(pages.map((p) => p.nextCursor === null)).toStrictEqual([false, false, true]);
        for (const p of pages)
          expect(Object.keys(p).sort()).toStrictEqual(['hasMore', 'messages', 'nextCursor']);
      });

      it('never ends on an empty page when the history divides evenly', async () => {
        await ingestOk(smsSeries('m', 6));
        const pages = await walk({ channel: 'SMS', channelUserId: ALICE, size: '3' });
        expect(pages.map(idsOf)).toStrictEqual([
          ['m-04', 'm-05', 'm-06'],
          ['m-01', 'm-02', 'm-03'],
        ]);
        expect(pages[1]).toMatchObject({ hasMore: false, nextCursor: null });
      });

      it('answers a history that fits one page with hasMore false', async () => {
        await ingestOk(smsSeries('m', 3));
        expect(await page({ channel: 'SMS', channelUserId: ALICE, size: '3' })).toMatchObject({
          hasMore: false,
          nextCursor: null,
        });
      });

      it('orders records of the same instant by id, then by channelUserId, across page boundaries', async () => {
        await ingestOk([
          { id: 'b', channel: 'SMS', channelUserId: ALICE, createdAt: at(5) },
          { id: 'a', channel: 'SMS', channelUserId: ALICE, createdAt: at(5) },
          { id: 'c', channel: 'SMS', channelUserId: ALICE, createdAt: at(5) },
          { id: 'z', channel: 'SMS', channelUserId: ALICE, createdAt: at(4) },
          { id: 'd', channel: 'SMS', channelUserId: ALICE, createdAt: at(5) },
        ]);
        const pages = await walk({ channel: 'SMS', channelUserId: ALICE, size: '2' });
        expect(pages.map(idsOf)).toStrictEqual([['c', 'd'], ['a', 'b'], ['z']]);
      });

      it('lists only that contact on that channel, outbound and inbound', async () => {
        await ingestOk([
          { id: 'out', channel: 'SMS', channelUserId: ALICE, createdAt: at(1) },
          { id: 'in', channel: 'SMS', channelUserId: ALICE, createdAt: at(2), direction: 'inbound' },
          { id: 'bob', channel: 'SMS', channelUserId: BOB, createdAt: at(3) },
        ]);
        const contactId = await contactOf('SMS', ALICE);
        await ingestOk([
          { id: 'wa', channel: 'WHATSAPP', channelUserId: 'wa-alice', contactId, createdAt: at(4) },
        ]);
        expect(idsOf(await page({ channel: 'SMS', contactId }))).toStrictEqual(['out', 'in']);
        expect(idsOf(await page({ channel: 'WHATSAPP', contactId }))).toStrictEqual(['wa']);
      });

      it('defaults size to 20 and accepts 1 to 100', async () => {
        await ingestOk(smsSeries('m', 25));
        const first = await page({ channel: 'SMS', channelUserId: ALICE });
        expect(first.messages).toHaveLength(20);
        expect(first.messages[0]?.id).toBe('m-06');
        expect(first.hasMore).toBe(true);
        expect((await page({ channel: 'SMS', channelUserId: ALICE, size: '1' })).messages).toHaveLength(1);
        const all = await page({ channel: 'SMS', channelUserId: ALICE, size: '100' });
        expect(all.messages).toHaveLength(25);
        expect(all.hasMore).toBe(false);
      });

      it.each(['0', '101', 'abc', '-1', '1.5', '', ' 5', '1e1', '0x10'])('refuses size=%j', async (size) => {
        await ingestOk(smsSeries('m', 2));
        const res = await v1({ channel: 'SMS', channelUserId: ALICE, size });
        expectProblem(res, 400, 'invalid_request');
        expectDeprecation(res, `</messages?${query({ channel: 'SMS', channelUserId: ALICE, size })}>`);
      });

      it('matches channel case-insensitively and echoes it upper-case', async () => {
        await ingestOk([{ id: 'm-1', channel: 'Viber', channelUserId: 'vb-1' }]);
        const p = await page({ channel: 'vIbEr', channelUserId: 'vb-1' });
        expect(p.messages).toMatchObject([{ id: 'm-1', channel: 'VIBER' }]);
      });

      it('matches contactId case-insensitively and echoes it lower-case', async () => {
        await ingestOk(smsSeries('m', 2));
        const contactId = await contactOf('SMS', ALICE);
        const p = await page({ channel: 'SMS', contactId: contactId.toUpperCase() });
        expect(idsOf(p)).toStrictEqual(['m-01', 'm-02']);
        expect(p.messages[0]?.contactId).toBe(contactId);
      });

      const badQueries: [string, Record<string, string>][] = [
        ['no channel', { channelUserId: ALICE }],
        ['an unknown channel', { channel: 'FAX', channelUserId: ALICE }],
        ['an empty channel', { channel: '', channelUserId: ALICE }],
        ['neither channelUserId nor contactId', { channel: 'SMS' }],
        ['nothing at all', {}],
        [
          'both channelUserId and contactId',
          { channel: 'SMS', channelUserId: ALICE, contactId: '0190a5d4-7e2b-7c3d-8e4f-5a6b7c8d9e0f' },
        ],
        ['a malformed contactId', { channel: 'SMS', contactId: 'not-a-uuid' }],
        [
          'an SMS channelUserId that is not a phone number',
          { channel: 'SMS', channelUserId: '+447700900001' },
        ],
        ['a channelUserId with white space', { channel: 'WHATSAPP', channelUserId: 'wa alice' }],
        ['an empty cursor', { channel: 'SMS', channelUserId: ALICE, cursor: '' }],
      ];
      it.each(badQueries)('refuses %s with 400', async (_name, params) => {
        const res = await v1(params);
        expectProblem(res, 400, 'invalid_request');
        expectDeprecation(
          res,
          Object.keys(params).length === 0 ? '</messages>' : `</messages?${query(params)}>`,
        );
      });

      it('refuses a Mode 2 parameter given twice', async () => {
        const res = await h().inject({
          url: `${V1}?channel=SMS&channelUserId=${ALICE}&channelUserId=${BOB}`,
          headers: { authorization: basic(acct.key, acct.secret) },
        });
        expectProblem(res, 400, 'invalid_request');
      });

      it('answers an unknown contact or identity with an empty page', async () => {
        await ingestOk(smsSeries('m', 2));
        const empty = { messages: [], nextCursor: null, hasMore: false };
        expect(await page({ channel: 'SMS', channelUserId: BOB })).toStrictEqual(empty);
        expect(
          await page({ channel: 'SMS', contactId: '0190a5d4-7e2b-7c3d-8e4f-5a6b7c8d9e0f' }),
        ).toStrictEqual(empty);
        // A known contact on a channel it never used.
        expect(await page({ channel: 'TELEGRAM', contactId: await contactOf('SMS', ALICE) })).toStrictEqual(
          empty,
        );
      });

      it('does not show another account the contacts of this one', async () => {
        await ingestOk(smsSeries('m', 2));
        const contactId = await contactOf('SMS', ALICE);
        const other = await h().createAccount({ name: 'Other' });
        const empty = { messages: [], nextCursor: null, hasMore: false };
        expect(await page({ channel: 'SMS', channelUserId: ALICE }, other)).toStrictEqual(empty);
        expect(await page({ channel: 'SMS', contactId }, other)).toStrictEqual(empty);
      });

      it('resolves a channelUserId to its contact, whose cursor works with the contactId query', async () => {
        await ingestOk(smsSeries('m', 5));
        const contactId = await contactOf('SMS', ALICE);
        const byUser = await page({ channel: 'SMS', channelUserId: ALICE, size: '2' });
        expect(idsOf(byUser)).toStrictEqual(['m-04', 'm-05']);
        expect(byUser.messages.every((m) => m.contactId === contactId)).toBe(true);
        const cursor = byUser.nextCursor as string;
        const next = await page({ channel: 'SMS', contactId, size: '2', cursor });
        expect(idsOf(next)).toStrictEqual(['m-02', 'm-03']);
        // And back: a contactId cursor works with the channelUserId query.
        const last = await page({
          channel: 'sms',
          channelUserId: ALICE,
          size: '2',
          cursor: next.nextCursor as string,
        });
        expect(idsOf(last)).toStrictEqual(['m-01']);
        expect(last.hasMore).toBe(false);
      });

      it('lets the next page have a different size', async () => {
        await ingestOk(smsSeries('m', 7));
        const first = await page({ channel: 'SMS', channelUserId: ALICE, size: '3' });
        const second = await page({
          channel: 'SMS',
          channelUserId: ALICE,
          size: '2',
          cursor: first.nextCursor as string,
        });
        expect(idsOf(second)).toStrictEqual(['m-03', 'm-04']);
        const rest = await page({
          channel: 'SMS',
          channelUserId: ALICE,
          size: '100',
          cursor: second.nextCursor as string,
        });
        expect(idsOf(rest)).toStrictEqual(['m-01', 'm-02']);
        expect(rest).toMatchObject({ hasMore: false, nextCursor: null });
      });

      it('keeps accepting a cursor a month later (cursors do not expire)', async () => {
        await ingestOk(smsSeries('m', 4));
        const first = await page({ channel: 'SMS', channelUserId: ALICE, size: '2' });
        h().advance(30 * 24 * 3600_000);
        const second = await page({
          channel: 'SMS',
          channelUserId: ALICE,
          size: '2',
          cursor: first.nextCursor as string,
        });
        expect(idsOf(second)).toStrictEqual(['m-01', 'm-02']);
      });

      describe('cursor integrity', () => {
        let cursor: string;
        beforeEach(async () => {
          await ingestOk(smsSeries('m', 5));
          cursor = (await page({ channel: 'SMS', channelUserId: ALICE, size: '2' })).nextCursor as string;
          expect(cursor).toEqual(expect.any(String));
        });

        const flip = (s: string, i: number) => {
          const c = s[i] === 'A' ? 'B' : 'A';
          return s.slice(0, i) + c + s.slice(i + 1);
        };
        const tamperings: [string, (c: string) => string][] = [
          ['a flipped first character', (c) => flip(c, 0)],
          ['a flipped middle character', (c) => flip(c, Math.floor(c.length / 2))],
          ['a flipped last character', (c) => flip(c, c.length - 1)],
          ['a truncation', (c) => c.slice(0, -3)],
          ['a truncation to half', (c) => c.slice(0, Math.floor(c.length / 2))],
          ['an extension', (c) => `${c}AA`],
          ['garbage', () => 'garbage'],
          ['a dot alone', () => '.'],
          [
            'a forged position',
            (c) =>
              `${Buffer.from(JSON.stringify([START + 3600_000, 'm-99', ALICE])).toString('base64url')}.${c.split('.')[1]}`,
          ],
          ['a very long token', (c) => c.repeat(40)],
        ];
        it.each(tamperings)('refuses a cursor with %s', async (_name, tamper) => {
          const res = await v1({ channel: 'SMS', channelUserId: ALICE, size: '2', cursor: tamper(cursor) });
          expectProblem(res, 400, 'invalid_request');
        });

        it('refuses the cursor replayed by another account', async () => {
          const other = await h().createAccount({ name: 'Other' });
          await ingestOk(smsSeries('m', 5), other);
          const res = await v1({ channel: 'SMS', channelUserId: ALICE, size: '2', cursor }, other);
          expectProblem(res, 400, 'invalid_request');
          const byContact = await v1(
            { channel: 'SMS', contactId: await contactOf('SMS', ALICE, other), size: '2', cursor },
            other,
          );
          expectProblem(byContact, 400, 'invalid_request');
        });

        it('refuses the cursor replayed with another contact', async () => {
          await ingestOk(smsSeries('m', 5, BOB));
          expectProblem(
            await v1({ channel: 'SMS', channelUserId: BOB, size: '2', cursor }),
            400,
            'invalid_request',
          );
          expectProblem(
            await v1({ channel: 'SMS', contactId: await contactOf('SMS', BOB), size: '2', cursor }),
            400,
            'invalid_request',
          );
          // An identity nobody owns, and a contact that does not exist.
          expectProblem(
            await v1({ channel: 'SMS', channelUserId: '15550000000', cursor }),
            400,
            'invalid_request',
          );
          expectProblem(
            await v1({ channel: 'SMS', contactId: '0190a5d4-7e2b-7c3d-8e4f-5a6b7c8d9e0f', cursor }),
            400,
            'invalid_request',
          );
        });

        it('refuses the cursor replayed with another channel of the same contact', async () => {
          const contactId = await contactOf('SMS', ALICE);
          await ingestOk(
            smsSeries('w', 5, 'wa-alice', { channel: 'WHATSAPP', contactId }).map((m) => ({ ...m })),
          );
          expect(idsOf(await page({ channel: 'WHATSAPP', contactId, size: '2' }))).toStrictEqual([
            'w-04',
            'w-05',
          ]);
          expectProblem(
            await v1({ channel: 'WHATSAPP', contactId, size: '2', cursor }),
            400,
            'invalid_request',
          );
          expectProblem(
            await v1({ channel: 'WHATSAPP', channelUserId: 'wa-alice', size: '2', cursor }),
            400,
            'invalid_request',
          );
        });
      });

      describe('while new messages arrive', () => {
        it('never shifts or duplicates older pages', async () => {
          await ingestOk(smsSeries('m', 7));
          const params = { channel: 'SMS', channelUserId: ALICE, size: '3' };
          const first = await page(params);
          expect(idsOf(first)).toStrictEqual(['m-05', 'm-06', 'm-07']);
          await ingestOk([
            // Newer than everything.
            { id: 'new-1', channel: 'SMS', channelUserId: ALICE, createdAt: at(60) },
            // Same instant as the oldest record of the first page, after it in the total order.
            { id: 'm-05b', channel: 'SMS', channelUserId: ALICE, createdAt: at(5) },
            // Same instant as the newest record of the next page, after it in the total order.
            { id: 'm-04b', channel: 'SMS', channelUserId: ALICE, createdAt: at(4) },
          ]);
          // Ingested "now", two hours after every other record.
          h().advance(2 * 3600_000);
          await ingestOk([{ id: 'new-2', channel: 'SMS', channelUserId: ALICE }]);
          const second = await page({ ...params, cursor: first.nextCursor as string });
          // m-04b is older than the cursor position (m-05) in the total order, so it belongs here.
          expect(idsOf(second)).toStrictEqual(['m-03', 'm-04', 'm-04b']);
          const third = await page({ ...params, cursor: second.nextCursor as string });
          expect(idsOf(third)).toStrictEqual(['m-01', 'm-02']);
          expect(third).toMatchObject({ hasMore: false, nextCursor: null });
          const seen = [first, second, third].flatMap(idsOf);
          expect(new Set(seen).size).toBe(seen.length);
          expect(seen).not.toContain('m-05b');
          expect(seen).not.toContain('new-1');
          expect(seen).not.toContain('new-2');
        });

        it('does not move a page when a record of it is updated', async () => {
          await ingestOk(smsSeries('m', 4));
          const params = { channel: 'SMS', channelUserId: ALICE, size: '2' };
          const first = await page(params);
          h().advance(3600_000);
          // A re-send of the oldest record on the first page keeps its createdAt, so it keeps its place.
          await ingestOk([
            { id: 'm-03', channel: 'SMS', channelUserId: ALICE, text: 'edited', createdAt: at(99) },
          ]);
          const second = await page({ ...params, cursor: first.nextCursor as string });
          expect(idsOf(second)).toStrictEqual(['m-01', 'm-02']);
          expect((await page(params)).messages[0]).toMatchObject({
            id: 'm-03',
            text: 'edited',
            createdAt: at(3),
          });
        });
      });
    });

    describe('headers and protocol', () => {
      it('sends the deprecation headers on 200, 400, 401 and 405 responses', async () => {
        const okRes = await v1({ messageIds: 'x' });
        expect(okRes.statusCode).toBe(200);
        expectDeprecation(okRes, '</messages?messageIds=x>');
        const bad = await v1({ channel: 'SMS' });
        expect(bad.statusCode).toBe(400);
        expectDeprecation(bad, '</messages?channel=SMS>');
        const unauthorized = await h().inject(`${V1}?${query({ key: acct.key, secret: 'WRONG123' })}`);
        expect(unauthorized.statusCode).toBe(401);
        expectDeprecation(unauthorized, '</messages>');
        const bare = await h().inject(V1);
        expect(bare.statusCode).toBe(401);
        expectDeprecation(bare, '</messages>');
        for (const method of ['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'] as const) {
          const res = await h().inject({ method, url: `${V1}?messageIds=x&secret=${acct.secret}` });
          expectProblem(res, 405, 'method_not_allowed');
          expect(res.headers.allow).toBe('GET, HEAD');
          expectDeprecation(res, '</messages?messageIds=x>');
        }
      });

      it('sends the deprecation headers on a 414 as well', async () => {
        const long = 'x'.repeat(9000);
        const res = await h().inject(`${V1}?channel=${long}`);
        expectProblem(res, 414, 'uri_too_long');
        expectDeprecation(res, `</messages?channel=${long}>`);
      });

      it('keeps the rest of the query, in order and as sent, in the successor link', async () => {
        const res = await h().inject({
          url: `${V1}?channel=sms&key=${acct.key}&contactId=ABC&secret=${acct.secret}&size=5&cursor=a%2Bb&extra=1`,
        });
        expectDeprecation(res, '</messages?channel=sms&contactId=ABC&size=5&cursor=a%2Bb&extra=1>');
      });

      it('sends Cache-Control: no-store and an X-Request-Id', async () => {
        const res = await v1({ messageIds: 'x' });
        expect(res.headers['cache-control']).toBe('no-store');
        expect(res.headers['x-request-id']).toEqual(expect.any(String));
        expect((await h().inject(V1)).headers['cache-control']).toBe('no-store');
      });

      it('answers 410 from the sunset instant on, before authentication', async () => {
        await ingestOk([{ id: 'm-1', channel: 'SMS', channelUserId: ALICE }]);
        h().advance(Date.parse('2027-01-01T00:00:00Z') - START - 1);
        expect((await v1({ messageIds: 'm-1' })).statusCode).toBe(200);
        h().advance(1);
        for (const res of [
          await v1({ messageIds: 'm-1' }),
          await h().inject(V1),
          await h().inject(`${V1}?channel=FAX&size=0`),
          await h().inject({
            url: `${V1}?messageIds=m-1`,
            headers: { authorization: basic(acct.key, 'WRONG123') },
          }),
        ]) {
          const body = expectProblem(res, 410, 'gone');
          expect(body.title).toBe('Gone');
          expect(body.detail).toContain('/messages');
          expect(res.headers['www-authenticate']).toBeUndefined();
          expect(res.headers.deprecation).toBe(DEFAULT_DEPRECATION);
          expect(res.headers.sunset).toBe(DEFAULT_SUNSET);
        }
        // The successor keeps working.
        const successor = await h().inject({
          url: '/messages?messageIds=m-1',
          headers: { authorization: basic(acct.key, acct.secret) },
        });
        expect(successor.statusCode).toBe(200);
      });
    });
  });

  describe('with WAYBILL_V1_DEPRECATED and WAYBILL_V1_SUNSET set', () => {
    const h = useHarness(engine, {
      WAYBILL_V1_DEPRECATED: '2026-06-15T12:30:00Z',
      WAYBILL_V1_SUNSET: '2026-12-01T08:00:00Z',
    });

    it('sends the configured dates', async () => {
      const acct = await h().createAccount();
      const res = await h().inject({
        url: `${V1}?messageIds=m-1`,
        headers: { authorization: basic(acct.key, acct.secret) },
      });
      expect(res.statusCode).toBe(200);
      expectDeprecation(
        res,
        '</messages?messageIds=m-1>',
        `@${Date.parse('2026-06-15T12:30:00Z') / 1000}`,
        'Tue, 01 Dec 2026 08:00:00 GMT',
      );
      const refused = await h().inject(`${V1}?messageIds=m-1`);
      expect(refused.statusCode).toBe(401);
      expectDeprecation(
        refused,
        '</messages?messageIds=m-1>',
        '@1781526600',
        'Tue, 01 Dec 2026 08:00:00 GMT',
      );
    });

    it('turns 410 when the clock passes the configured sunset', async () => {
      const acct = await h().createAccount();
      h().advance(Date.parse('2026-12-01T08:00:00Z') - START);
      const res = await h().inject({
        url: `${V1}?messageIds=m-1`,
        headers: { authorization: basic(acct.key, acct.secret) },
      });
      expect(expectProblem(res, 410, 'gone').detail).toContain('/messages');
      expectDeprecation(res, '</messages?messageIds=m-1>', '@1781526600', 'Tue, 01 Dec 2026 08:00:00 GMT');
    });
  });

  describe('with a sunset in the past', () => {
    const h = useHarness(engine, { WAYBILL_V1_SUNSET: '2026-11-01T00:00:00Z' });

    it('answers 410 to everyone, with or without credentials', async () => {
      const acct = await h().createAccount();
      const withCredentials = await h().inject({
        url: `${V1}?messageIds=m-1`,
        headers: { authorization: basic(acct.key, acct.secret) },
      });
      expect(expectProblem(withCredentials, 410, 'gone').detail).toContain('/messages');
      expectDeprecation(
        withCredentials,
        '</messages?messageIds=m-1>',
        DEFAULT_DEPRECATION,
        'Sun, 01 Nov 2026 00:00:00 GMT',
      );
      const anonymous = await h().inject(`${V1}?channel=SMS&key=${acct.key}`);
      expectProblem(anonymous, 410, 'gone');
      expectDeprecation(
        anonymous,
        '</messages?channel=SMS>',
        DEFAULT_DEPRECATION,
        'Sun, 01 Nov 2026 00:00:00 GMT',
      );
    });

    it('still refuses other methods with 405 first', async () => {
      const res = await h().inject({ method: 'POST', url: V1 });
      expectProblem(res, 405, 'method_not_allowed');
      expect(res.headers.allow).toBe('GET, HEAD');
      expectDeprecation(res, '</messages>', DEFAULT_DEPRECATION, 'Sun, 01 Nov 2026 00:00:00 GMT');
    });
  });
});
