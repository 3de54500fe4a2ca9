import type { LightMyRequestResponse } from 'fastify';
import { Type } from 'typebox';
import { beforeEach, describe, expect, it } from 'vitest';
import { MessageRecordSchema, MessagesEnvelopeSchema, ref } from '../../src/http/schemas.js';
import { engines } from '../support/engines.js';
import { basic, type CreatedAccount, START, useHarness } from '../support/http.js';
import { expectProblem } from '../support/problems.js';
import { schemaSerializer } from '../support/serializers.js';

const ALICE = '447700900001';
const BOB = '447700900002';

const at = (minutes: number) => new Date(START + minutes * 60_000).toISOString();
const query = (params: Record<string, string>) => new URLSearchParams(params).toString();

interface Page {
  messages: { id: string; channelUserId: string; contactId: string; [field: string]: unknown }[];
  nextCursor: string | null;
  hasMore: boolean;
}
const idsOf = (p: Page) => p.messages.map((m) => m.id);
const keysOf = (p: Page) => p.messages.map((m) => `${m.id}/${m.channelUserId}`);

function expectNoDeprecation(res: LightMyRequestResponse): void {
  expect(res.headers.deprecation).toBeUndefined();
  expect(res.headers.sunset).toBeUndefined();
  expect(res.headers.link).toBeUndefined();
}

describe.each(engines())('$name GET /messages', (engine) => {
  const h = useHarness(engine);
  let acct: CreatedAccount;
  beforeEach(async () => {
    acct = await h().createAccount();
  });

  const get = (path: string, params: Record<string, string>, account: CreatedAccount = acct) =>
    h().inject({
      method: 'GET',
      url: `${path}?${query(params)}`,
      headers: { authorization: basic(account.key, account.secret) },
    });
  const messages = (params: Record<string, string>, account?: CreatedAccount) =>
    get('/messages', params, account);
  const page = async (params: Record<string, string>, account?: CreatedAccount): Promise<Page> => {
    const res = await messages(params, account);
    expect(res.statusCode, res.body).toBe(200);
    expectNoDeprecation(res);
    const body = res.json() as Page;
    expect(Object.keys(body).sort()).toStrictEqual(['hasMore', 'messages', 'nextCursor']);
    return body;
  };
  const walk = async (params: Record<string, string>): Promise<Page[]> => {
    const pages: Page[] = [];
    let cursor: string | null = null;
    do {
      const p: Page = await page(cursor === null ? params : { ...params, cursor });
      pages.push(p);
      cursor = p.nextCursor;
      if (pages.length > 50) throw new Error('paging does not end');
    } while (cursor !== null);
    return pages;
  };
  const ingestOk = async (items: unknown[], account: CreatedAccount = acct) => {
    const res = await h().ingest(account.id, items);
    expect(res.statusCode, res.body).toBe(200);
  };
  const contactOf = async (channel: string, channelUserId: string) => {
    const p = await page({ channel, channelUserId, size: '1' });
    return p.messages[0]?.contactId as string;
  };

  /**
   * Campaign `spring` to Alice and Bob by SMS and to Alice on WhatsApp, interleaved with messages outside it.
   * Alice's SMS history: a-1 (spring), a-2, a-3 (spring), a-4 (autumn), a-5 (spring).
   */
  async function seedCampaigns(): Promise<void> {
    await ingestOk([
      { id: 'a-1', channel: 'SMS', channelUserId: ALICE, campaignId: 'spring', createdAt: at(1) },
      { id: 'a-2', channel: 'SMS', channelUserId: ALICE, createdAt: at(2) },
      { id: 'b-1', channel: 'SMS', channelUserId: BOB, campaignId: 'spring', createdAt: at(3) },
      { id: 'a-3', channel: 'SMS', channelUserId: ALICE, campaignId: 'spring', createdAt: at(4) },
      { id: 'w-1', channel: 'WHATSAPP', channelUserId: 'wa-alice', campaignId: 'spring', createdAt: at(5) },
      { id: 'a-4', channel: 'SMS', channelUserId: ALICE, campaignId: 'autumn', createdAt: at(6) },
      { id: 'b-2', channel: 'SMS', channelUserId: BOB, campaignId: 'spring', createdAt: at(7) },
      { id: 'a-5', channel: 'SMS', channelUserId: ALICE, campaignId: 'spring', createdAt: at(8) },
      { id: 'w-2', channel: 'WHATSAPP', channelUserId: 'wa-alice', createdAt: at(9) },
    ]);
  }

  it('answers the bytes its schemas serialize, on both paths and in both modes', async () => {
    await ingestOk([
      {
        id: 'r-1',
        channel: 'WHATSAPP',
        channelUserId: 'wa-alice',
        direction: 'inbound',
        text: 'Quote " backslash \\ newline \n emoji 🎉 and \u2028',
        content: { type: 'image', caption: 'é "x"', nested: { list: [1, 2.5, null, true] } },
        createdAt: at(1),
      },
      { id: 'r-2', channel: 'SMS', channelUserId: ALICE, campaignId: 'spring', text: 'Hi', createdAt: at(2) },
      { id: 'r-3', channel: 'SMS', channelUserId: ALICE, direction: 'inbound', createdAt: at(3) },
    ]);
    const applied = await h().receipts(acct.id, [
      { messageId: 'r-2', drStatuscode: 'delivered', drTime: at(4) },
    ]);
    expect(applied.statusCode, applied.body).toBe(200);
    const envelope = schemaSerializer(MessagesEnvelopeSchema);
    const records = schemaSerializer(Type.Array(ref(MessageRecordSchema)));
    const cases: [string, Record<string, string>, (body: unknown) => string][] = [
      ['/messages', { messageIds: 'r-1,r-2,r-3,r-9' }, envelope],
      ['/messages', { channel: 'SMS', channelUserId: ALICE, size: '1' }, envelope],
      ['/messages', { channel: 'WHATSAPP', channelUserId: 'wa-alice' }, envelope],
      ['/messages', { campaignId: 'spring' }, envelope],
      ['/api/v1/contacts/messages', { messageIds: 'r-1,r-2,r-3' }, records],
      ['/api/v1/contacts/messages', { channel: 'SMS', channelUserId: ALICE }, envelope],
    ];
    for (const [path, params, serialize] of cases) {
      const res = await get(path, params);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(res.body, `${path} ${query(params)}`).toBe(serialize(res.json()));
    }
    const byIds = (await page({ messageIds: 'r-1' })).messages[0];
    expect(byIds?.content).toStrictEqual({
      type: 'image',
      caption: 'é "x"',
      nested: { list: [1, 2.5, null, true] },
    });
  });

  it('sends no deprecation headers, on success or failure', async () => {
    expectNoDeprecation(await messages({ messageIds: 'x' }));
    expectNoDeprecation(await messages({ channel: 'SMS' }));
    expectNoDeprecation(await h().inject('/messages?messageIds=x'));
    expectNoDeprecation(await h().inject({ method: 'POST', url: '/messages' }));
  });

  it('authenticates like the v1 endpoint', async () => {
    const none = await h().inject('/messages?messageIds=x');
    expectProblem(none, 401, 'unauthorized');
    expect(none.headers['www-authenticate']).toBe('Basic realm="waybill"');
    const wrong = await h().inject({
      url: '/messages?channel=FAX',
      headers: { authorization: basic(acct.key, 'WRONG123') },
    });
    expectProblem(wrong, 401, 'unauthorized');
    const viaQuery = await h().inject(
      `/messages?${query({ key: acct.key, secret: acct.secret, messageIds: 'x' })}`,
    );
    expect(viaQuery.statusCode).toBe(200);
  });

  it('refuses other methods with 405 and Allow', async () => {
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH'] as const) {
      const res = await h().inject({ method, url: '/messages' });
      expectProblem(res, 405, 'method_not_allowed');
      expect(res.headers.allow).toBe('GET, HEAD');
    }
  });

  describe('Mode 1', () => {
    it('answers with the envelope, nextCursor null and hasMore false', async () => {
      await ingestOk([
        { id: 'm-2', channel: 'SMS', channelUserId: ALICE, createdAt: at(2) },
        { id: 'm-1', channel: 'SMS', channelUserId: ALICE, createdAt: at(1) },
      ]);
      expect(await page({ messageIds: 'm-2, m-1,m-2,unknown' })).toStrictEqual({
        messages: [expect.objectContaining({ id: 'm-1' }), expect.objectContaining({ id: 'm-2' })],
        nextCursor: null,
        hasMore: false,
      });
      expect(await page({ messageIds: 'unknown' })).toStrictEqual({
        messages: [],
        nextCursor: null,
        hasMore: false,
      });
    });

    it('applies the same limits as v1', async () => {
      const ids = Array.from({ length: 21 }, (_, i) => `m-${i}`);
      expectProblem(await messages({ messageIds: ids.join(',') }), 400, 'invalid_request');
      expectProblem(await messages({ messageIds: ' , ' }), 400, 'invalid_request');
      expectProblem(await messages({ messageIds: 'a b' }), 400, 'invalid_request');
      expect((await messages({ messageIds: 'x', size: 'abc', channel: 'FAX' })).statusCode).toBe(200);
    });

    it('filters by campaignId', async () => {
      await seedCampaigns();
      const filtered = await page({ messageIds: 'a-1,a-2,a-4,b-1,w-2', campaignId: 'spring' });
      expect(idsOf(filtered)).toStrictEqual(['a-1', 'b-1']);
      expect(filtered.messages.every((m) => m.campaignId === 'spring')).toBe(true);
      expect(idsOf(await page({ messageIds: 'a-2,w-2', campaignId: 'spring' }))).toStrictEqual([]);
      expect(idsOf(await page({ messageIds: 'a-1,a-4', campaignId: 'autumn' }))).toStrictEqual(['a-4']);
    });
  });

  describe('Mode 2', () => {
    it('pages backwards like v1', async () => {
      await seedCampaigns();
      const pages = await walk({ channel: 'sms', channelUserId: ALICE, size: '2' });
      expect(pages.map(idsOf)).toStrictEqual([['a-4', 'a-5'], ['a-2', 'a-3'], ['a-1']]);
      expect(pages.map((p) => p.hasMore)).toStrictEqual([true, true, false]);
    });

    it('filters a contact history by campaignId', async () => {
      await seedCampaigns();
      const pages = await walk({ channel: 'SMS', channelUserId: ALICE, campaignId: 'spring', size: '2' });
      expect(pages.map(idsOf)).toStrictEqual([['a-3', 'a-5'], ['a-1']]);
      const contactId = await contactOf('SMS', ALICE);
      expect(idsOf(await page({ channel: 'SMS', contactId, campaignId: 'autumn' }))).toStrictEqual(['a-4']);
      expect(await page({ channel: 'SMS', contactId, campaignId: 'winter' })).toStrictEqual({
        messages: [],
        nextCursor: null,
        hasMore: false,
      });
    });

    it('still requires channel with a contact, and exactly one of channelUserId and contactId', async () => {
      await seedCampaigns();
      const contactId = await contactOf('SMS', ALICE);
      expectProblem(await messages({ contactId, campaignId: 'spring' }), 400, 'invalid_request');
      expectProblem(await messages({ channelUserId: ALICE }), 400, 'invalid_request');
      expectProblem(
        await messages({ channel: 'SMS', contactId, channelUserId: ALICE, campaignId: 'spring' }),
        400,
        'invalid_request',
      );
      expectProblem(await messages({ channel: 'SMS' }), 400, 'invalid_request');
      expectProblem(await messages({}), 400, 'invalid_request');
    });
  });

  describe('a campaign alone', () => {
    it('lists the campaign across contacts and channels with backwards paging', async () => {
      await seedCampaigns();
      const pages = await walk({ campaignId: 'spring', size: '2' });
      expect(pages.map(idsOf)).toStrictEqual([
        ['b-2', 'a-5'],
        ['a-3', 'w-1'],
        ['a-1', 'b-1'],
      ]);
      expect(pages.map((p) => p.hasMore)).toStrictEqual([true, true, false]);
      expect(pages.map((p) => p.nextCursor === null)).toStrictEqual([false, false, true]);
    });

    it('takes channel as an optional filter, in any case', async () => {
      await seedCampaigns();
      const sms = await walk({ campaignId: 'spring', channel: 'sms', size: '3' });
      expect(sms.map(idsOf)).toStrictEqual([
        ['a-3', 'b-2', 'a-5'],
        ['a-1', 'b-1'],
      ]);
      const whatsapp = await page({ campaignId: 'spring', channel: 'WhatsApp' });
      expect(whatsapp.messages).toMatchObject([{ id: 'w-1', channel: 'WHATSAPP' }]);
      expect(whatsapp.hasMore).toBe(false);
      expectProblem(await messages({ campaignId: 'spring', channel: 'FAX' }), 400, 'invalid_request');
    });

    it('answers an unknown campaign with an empty page', async () => {
      await seedCampaigns();
      expect(await page({ campaignId: 'winter' })).toStrictEqual({
        messages: [],
        nextCursor: null,
        hasMore: false,
      });
    });

    it('lists every recipient of a multi-recipient SMS', async () => {
      await ingestOk([
        { id: 'blast', channel: 'SMS', channelUserId: BOB, campaignId: 'c', createdAt: at(1) },
        { id: 'blast', channel: 'SMS', channelUserId: ALICE, campaignId: 'c', createdAt: at(1) },
        { id: 'blast', channel: 'SMS', channelUserId: '15551234567', campaignId: 'c', createdAt: at(1) },
      ]);
      const pages = await walk({ campaignId: 'c', size: '2' });
      expect(pages.map(keysOf)).toStrictEqual([[`blast/${ALICE}`, `blast/${BOB}`], ['blast/15551234567']]);
    });

    it('does not list the campaign of another account', async () => {
      await seedCampaigns();
      const other = await h().createAccount({ name: 'Other' });
      expect(await page({ campaignId: 'spring' }, other)).toStrictEqual({
        messages: [],
        nextCursor: null,
        hasMore: false,
      });
    });

    it('never shifts older pages when new campaign messages arrive', async () => {
      await seedCampaigns();
      const first = await page({ campaignId: 'spring', size: '2' });
      await ingestOk([
        { id: 'z-new', channel: 'SMS', channelUserId: BOB, campaignId: 'spring', createdAt: at(30) },
        // Same instant as the oldest record of the first page (b-2), after it in the total order.
        { id: 'c-5z', channel: 'SMS', channelUserId: BOB, campaignId: 'spring', createdAt: at(7) },
      ]);
      const second = await page({ campaignId: 'spring', size: '2', cursor: first.nextCursor as string });
      expect(idsOf(second)).toStrictEqual(['a-3', 'w-1']);
    });
  });

  describe('cursors', () => {
    it('binds a cursor to the campaign filter', async () => {
      await seedCampaigns();
      await ingestOk([
        { id: 'x-1', channel: 'SMS', channelUserId: ALICE, campaignId: 'autumn', createdAt: at(10) },
        { id: 'x-2', channel: 'SMS', channelUserId: ALICE, campaignId: 'autumn', createdAt: at(11) },
      ]);
      const spring = (await page({ campaignId: 'spring', size: '2' })).nextCursor as string;
      expectProblem(
        await messages({ campaignId: 'autumn', size: '2', cursor: spring }),
        400,
        'invalid_request',
      );
      expectProblem(
        await messages({ campaignId: 'spring', channel: 'SMS', size: '2', cursor: spring }),
        400,
        'invalid_request',
      );
      expectProblem(
        await messages({ channel: 'SMS', channelUserId: ALICE, size: '2', cursor: spring }),
        400,
        'invalid_request',
      );

      const contactSpring = (
        await page({ channel: 'SMS', channelUserId: ALICE, campaignId: 'spring', size: '1' })
      ).nextCursor as string;
      expectProblem(
        await messages({ channel: 'SMS', channelUserId: ALICE, campaignId: 'autumn', cursor: contactSpring }),
        400,
        'invalid_request',
      );
      expectProblem(
        await messages({ channel: 'SMS', channelUserId: ALICE, cursor: contactSpring }),
        400,
        'invalid_request',
      );
      expectProblem(await messages({ campaignId: 'spring', cursor: contactSpring }), 400, 'invalid_request');

      const unfiltered = (await page({ channel: 'SMS', channelUserId: ALICE, size: '1' }))
        .nextCursor as string;
      expectProblem(
        await messages({ channel: 'SMS', channelUserId: ALICE, campaignId: 'spring', cursor: unfiltered }),
        400,
        'invalid_request',
      );
      // The same filter, matched: the cursor works.
      const next = await page({
        channel: 'SMS',
        channelUserId: ALICE,
        campaignId: 'spring',
        size: '1',
        cursor: contactSpring,
      });
      expect(idsOf(next)).toStrictEqual(['a-3']);
    });

    it('refuses a tampered campaign cursor', async () => {
      await seedCampaigns();
      const cursor = (await page({ campaignId: 'spring', size: '2' })).nextCursor as string;
      const flipped = `${cursor.slice(0, 4)}${cursor[4] === 'A' ? 'B' : 'A'}${cursor.slice(5)}`;
      expectProblem(
        await messages({ campaignId: 'spring', size: '2', cursor: flipped }),
        400,
        'invalid_request',
      );
      const other = await h().createAccount({ name: 'Other' });
      expectProblem(
        await messages({ campaignId: 'spring', size: '2', cursor }, other),
        400,
        'invalid_request',
      );
    });

    it('accepts a v1 cursor on /messages for the same query, and the other way round', async () => {
      await seedCampaigns();
      const v1 = await get('/api/v1/contacts/messages', { channel: 'SMS', channelUserId: ALICE, size: '2' });
      expect(v1.statusCode, v1.body).toBe(200);
      const cursor = (v1.json() as Page).nextCursor as string;
      expect(idsOf(await page({ channel: 'SMS', channelUserId: ALICE, size: '2', cursor }))).toStrictEqual([
        'a-2',
        'a-3',
      ]);
      const contactId = await contactOf('SMS', ALICE);
      const ours = (await page({ channel: 'SMS', contactId, size: '3' })).nextCursor as string;
      const back = await get('/api/v1/contacts/messages', {
        channel: 'SMS',
        contactId,
        size: '3',
        cursor: ours,
      });
      expect(back.statusCode, back.body).toBe(200);
      expect(idsOf(back.json() as Page)).toStrictEqual(['a-1', 'a-2']);
    });
  });

  describe('campaignId format', () => {
    it.each(['', 'has space', 'x'.repeat(65), 'semi;colon', 'ünï'])(
      'refuses campaignId=%j',
      async (campaignId) => {
        expectProblem(await messages({ campaignId }), 400, 'invalid_request');
        expectProblem(await messages({ messageIds: 'm-1', campaignId }), 400, 'invalid_request');
        expectProblem(
          await messages({ channel: 'SMS', channelUserId: ALICE, campaignId }),
          400,
          'invalid_request',
        );
      },
    );

    it('accepts 64 characters of the campaign alphabet', async () => {
      expect((await messages({ campaignId: `Ab0._:-${'x'.repeat(57)}` })).statusCode).toBe(200);
    });

    it('refuses campaignId given twice', async () => {
      const res = await h().inject({
        url: '/messages?campaignId=a&campaignId=b',
        headers: { authorization: basic(acct.key, acct.secret) },
      });
      expectProblem(res, 400, 'invalid_request');
    });

    it('is ignored on the v1 endpoint, which has no campaign filter', async () => {
      await seedCampaigns();
      const res = await get('/api/v1/contacts/messages', { messageIds: 'a-1,a-2', campaignId: 'spring' });
      expect(res.statusCode).toBe(200);
      expect((res.json() as Page['messages']).map((m) => m.id)).toStrictEqual(['a-1', 'a-2']);
    });
  });
});
