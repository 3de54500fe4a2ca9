import type { LightMyRequestResponse } from 'fastify';
import { beforeEach, describe, expect, it } from 'vitest';
import { engines } from '../support/engines.js';
import { ADMIN_TOKEN, basic, type CreatedAccount, START, useHarness } from '../support/http.js';
import { expectProblem } from '../support/problems.js';

const ALICE = '447700900001';
const BOB = '447700900002';
const CAROL = '15551234567';
const MISSING = '0190a5d4-7e2b-7c3d-8e4f-5a6b7c8d9e0f';

const at = (minutes: number) => new Date(START + minutes * 60_000).toISOString();
/** `START + minutes` in the spec's drTime format. */
const drAt = (minutes: number) => at(minutes).replace('T', ' ').slice(0, 23);

interface WireRecord {
  id: string;
  channelUserId: string;
  contactId: string;
  [field: string]: unknown;
}

/**
 * Asserts a 400 whose `errors` name exactly these indexes, each with a detail (and `param` when one field of
 * the item is at fault); returns the details.
 */
function expectItemErrors(res: LightMyRequestResponse, indexes: number[]): string[] {
  const body = expectProblem(res, 400, 'invalid_request');
  const errors = body.errors as { index: number; detail: string; param?: string }[];
  expect(errors.map((e) => e.index)).toStrictEqual(indexes);
  for (const e of errors) {
    expect(
      Object.keys(e)
        .filter((k) => k !== 'param')
        .sort(),
    ).toStrictEqual(['detail', 'index']);
    expect(e.detail).toEqual(expect.any(String));
    expect(e.detail).not.toBe('');
    if (e.param !== undefined) expect(e.param).toMatch(/^[A-Za-z.[\]0-9]+$/);
  }
  return errors.map((e) => e.detail);
}

describe.each(engines())('$name operator API: ingest', (engine) => {
  const h = useHarness(engine);
  let acct: CreatedAccount;
  beforeEach(async () => {
    acct = await h().createAccount();
  });

  const ingest = (messages: unknown[], account: CreatedAccount = acct) => h().ingest(account.id, messages);
  const ingestOk = async (messages: unknown[], account: CreatedAccount = acct) => {
    const res = await ingest(messages, account);
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as { accepted: number };
  };
  const receipts = (items: unknown[]) => h().receipts(acct.id, items);
  const receiptsOk = async (items: unknown[]) => {
    const res = await receipts(items);
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as {
      applied: number;
      ignored: number;
      unknown: { messageId: string; to: string | null }[];
    };
  };
  /** Mode 1 of /messages: the stored records of these ids. */
  const records = async (ids: string[], account: CreatedAccount = acct): Promise<WireRecord[]> => {
    const res = await h().inject({
      url: `/messages?messageIds=${encodeURIComponent(ids.join(','))}`,
      headers: { authorization: basic(account.key, account.secret) },
    });
    expect(res.statusCode, res.body).toBe(200);
    return (res.json() as { messages: WireRecord[] }).messages;
  };
  /** The /dlr items of one message id. */
  const dlr = async (id: string): Promise<Record<string, unknown>[]> => {
    const res = await h().inject(`/dlr?key=${acct.key}&secret=${acct.secret}&messageid=${id}`);
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as Record<string, unknown>[];
  };
  const history = async (params: Record<string, string>) => {
    const res = await h().inject({
      url: `/messages?${new URLSearchParams({ size: '100', ...params })}`,
      headers: { authorization: basic(acct.key, acct.secret) },
    });
    expect(res.statusCode, res.body).toBe(200);
    return (res.json() as { messages: WireRecord[] }).messages;
  };

  describe('POST /admin/v1/accounts/{id}/messages', () => {
    it('accepts a batch and answers with the accepted count', async () => {
      expect(
        await ingestOk([
          { id: 'm-1', channel: 'SMS', channelUserId: ALICE, text: 'hello' },
          { id: 'm-2', channel: 'whatsapp', channelUserId: 'wa-alice', direction: 'inbound', text: 'hi' },
          { id: 'm-3', channel: 'RBM', channelUserId: 'rbm:alice@example', status: 'delivered' },
        ]),
      ).toStrictEqual({ accepted: 3 });
      expect((await records(['m-1', 'm-2', 'm-3'])).map((m) => [m.id, m.channel, m.status])).toStrictEqual([
        ['m-1', 'SMS', 'pending'],
        ['m-2', 'WHATSAPP', 'received'],
        ['m-3', 'RBM', 'delivered'],
      ]);
    });

    it('accepts 1 and 1000 items, and refuses 0 and 1001', async () => {
      const batch = (n: number) =>
        Array.from({ length: n }, (_, i) => ({
          id: `b-${i}`,
          channel: 'TELEGRAM',
          channelUserId: `tg-${i % 7}`,
        }));
      expect(await ingestOk(batch(1))).toStrictEqual({ accepted: 1 });
      expectProblem(await ingest([]), 400, 'invalid_request');
      expectProblem(await ingest(batch(1001)), 400, 'invalid_request');
      expect(await records(['b-1000'])).toStrictEqual([]);
      expect(await ingestOk(batch(1000))).toStrictEqual({ accepted: 1000 });
      expect(await records(['b-999'])).toHaveLength(1);
    });

    it.each<[string, unknown]>([
      ['an array', [{ id: 'm-1', channel: 'SMS', channelUserId: ALICE }]],
      ['an object without messages', { items: [] }],
      ['messages that is not an array', { messages: { id: 'm-1' } }],
      [
        'an unknown top-level field',
        { messages: [{ id: 'm-1', channel: 'SMS', channelUserId: ALICE }], dryRun: true },
      ],
      ['null', null],
    ])('refuses a body that is %s', async (_name, body) => {
      expectProblem(
        await h().admin('POST', `/admin/v1/accounts/${acct.id}/messages`, body),
        400,
        'invalid_request',
      );
      expect(await records(['m-1'])).toStrictEqual([]);
    });

    it('answers 404 for an unknown account', async () => {
      const item = { id: 'm-1', channel: 'SMS', channelUserId: ALICE };
      expectProblem(
        await h().admin('POST', `/admin/v1/accounts/${MISSING}/messages`, { messages: [item] }),
        404,
        'not_found',
      );
      expectProblem(
        await h().admin('POST', '/admin/v1/accounts/nope/messages', { messages: [item] }),
        404,
        'not_found',
      );
    });

    const badItems: [string, unknown][] = [
      ['an unknown field', { id: 'x', channel: 'SMS', channelUserId: ALICE, txt: 'typo' }],
      ['no id', { channel: 'SMS', channelUserId: ALICE }],
      ['no channel', { id: 'x', channelUserId: ALICE }],
      ['no channelUserId', { id: 'x', channel: 'SMS' }],
      ['a malformed id', { id: 'has space', channel: 'SMS', channelUserId: ALICE }],
      ['a 65-character id', { id: 'x'.repeat(65), channel: 'SMS', channelUserId: ALICE }],
      ['an unknown channel', { id: 'x', channel: 'FAX', channelUserId: ALICE }],
      ['an SMS channelUserId with +', { id: 'x', channel: 'SMS', channelUserId: '+447700900001' }],
      ['an SMS channelUserId with a leading 0', { id: 'x', channel: 'SMS', channelUserId: '07700900001' }],
      ['a channelUserId with white space', { id: 'x', channel: 'VIBER', channelUserId: 'a b' }],
      ['a channelUserId with a control character', { id: 'x', channel: 'VIBER', channelUserId: 'a\u0007b' }],
      ['a 129-character channelUserId', { id: 'x', channel: 'VIBER', channelUserId: 'v'.repeat(129) }],
      ['a malformed contactId', { id: 'x', channel: 'SMS', channelUserId: ALICE, contactId: 'abc' }],
      ['an unknown direction', { id: 'x', channel: 'SMS', channelUserId: ALICE, direction: 'sideways' }],
      ['a malformed campaignId', { id: 'x', channel: 'SMS', channelUserId: ALICE, campaignId: 'a b' }],
      [
        'a createdAt that is not RFC 3339',
        { id: 'x', channel: 'SMS', channelUserId: ALICE, createdAt: '2026-11-22 10:00:00' },
      ],
      [
        'an impossible createdAt',
        { id: 'x', channel: 'SMS', channelUserId: ALICE, createdAt: '2026-02-30T00:00:00Z' },
      ],
      ['a numeric text', { id: 'x', channel: 'SMS', channelUserId: ALICE, text: 5 }],
      ['content that is not an object', { id: 'x', channel: 'WHATSAPP', channelUserId: 'wa', content: 'hi' }],
      ['content that is an array', { id: 'x', channel: 'WHATSAPP', channelUserId: 'wa', content: [1] }],
      [
        'sms on a non-SMS channel',
        { id: 'x', channel: 'WHATSAPP', channelUserId: 'wa', sms: { status: '0' } },
      ],
      [
        'sms on an inbound SMS',
        { id: 'x', channel: 'SMS', channelUserId: ALICE, direction: 'inbound', sms: {} },
      ],
      ['status on an SMS', { id: 'x', channel: 'SMS', channelUserId: ALICE, status: 'delivered' }],
      [
        'status on an inbound message',
        { id: 'x', channel: 'VIBER', channelUserId: 'v', direction: 'inbound', status: 'read' },
      ],
      ['status received', { id: 'x', channel: 'VIBER', channelUserId: 'v', status: 'received' }],
      ['an unknown sms.status', { id: 'x', channel: 'SMS', channelUserId: ALICE, sms: { status: '2' } }],
      ['a numeric sms.status', { id: 'x', channel: 'SMS', channelUserId: ALICE, sms: { status: 0 } }],
      [
        'a malformed sms.network',
        { id: 'x', channel: 'SMS', channelUserId: ALICE, sms: { network: '2341' } },
      ],
      ['a negative sms.price', { id: 'x', channel: 'SMS', channelUserId: ALICE, sms: { price: -1 } }],
      ['sms.counts 0', { id: 'x', channel: 'SMS', channelUserId: ALICE, sms: { counts: 0 } }],
      ['an unknown field in sms', { id: 'x', channel: 'SMS', channelUserId: ALICE, sms: { statu: '0' } }],
      [
        'an upper-case sms.carrier.route',
        {
          id: 'x',
          channel: 'SMS',
          channelUserId: ALICE,
          sms: { carrier: { route: 'SMSC', messageId: 'c' } },
        },
      ],
      [
        'a 33-character sms.carrier.route',
        {
          id: 'x',
          channel: 'SMS',
          channelUserId: ALICE,
          sms: { carrier: { route: 'r'.repeat(33), messageId: 'c' } },
        },
      ],
      [
        'an empty sms.carrier.messageId',
        { id: 'x', channel: 'SMS', channelUserId: ALICE, sms: { carrier: { route: 'smsc', messageId: '' } } },
      ],
      [
        'a 65-character sms.carrier.messageId',
        {
          id: 'x',
          channel: 'SMS',
          channelUserId: ALICE,
          sms: { carrier: { route: 'smsc', messageId: 'c'.repeat(65) } },
        },
      ],
      [
        'a non-ASCII sms.carrier.messageId',
        {
          id: 'x',
          channel: 'SMS',
          channelUserId: ALICE,
          sms: { carrier: { route: 'smsc', messageId: 'é' } },
        },
      ],
      [
        'an sms.carrier without its route',
        { id: 'x', channel: 'SMS', channelUserId: ALICE, sms: { carrier: { messageId: 'c' } } },
      ],
      [
        'an unknown field in sms.carrier',
        {
          id: 'x',
          channel: 'SMS',
          channelUserId: ALICE,
          sms: { carrier: { route: 'smsc', messageId: 'c', account: 'a' } },
        },
      ],
      ['an item that is not an object', 'x'],
      ['a null item', null],
    ];
    it.each(badItems)('refuses an item with %s, writing nothing', async (_name, item) => {
      const res = await ingest([{ id: 'good-1', channel: 'SMS', channelUserId: BOB }, item]);
      expectItemErrors(res, [1]);
      expect(await records(['good-1', 'x'])).toStrictEqual([]);
    });

    it('names every bad item of a batch and writes nothing', async () => {
      const res = await ingest([
        { id: 'g-0', channel: 'SMS', channelUserId: ALICE },
        { id: 'b-1', channel: 'SMS', channelUserId: ALICE, colour: 'red' },
        { id: 'g-2', channel: 'WHATSAPP', channelUserId: 'wa-1' },
        { id: 'b-3', channel: 'WHATSAPP', channelUserId: 'wa-1', sms: { status: '0' } },
        { id: 'b-4', channel: 'SMS', channelUserId: BOB, status: 'sent' },
        { id: 'g-5', channel: 'SMS', channelUserId: BOB },
      ]);
      const details = expectItemErrors(res, [1, 3, 4]);
      expect(details[0]).toContain('colour');
      expect(await records(['g-0', 'b-1', 'g-2', 'b-3', 'b-4', 'g-5'])).toStrictEqual([]);
      expect(await history({ channel: 'SMS', channelUserId: ALICE })).toStrictEqual([]);
    });

    describe('carrier ids (sms.carrier)', () => {
      const carried = (id: string, to: string, messageId: string) => ({
        id,
        channel: 'SMS',
        channelUserId: to,
        sms: { status: '0', carrier: { route: 'smsc-1', messageId } },
      });

      it('takes the pair the route gave a recipient, and a receipt from the route finds it', async () => {
        // Printable ASCII, spaces included, as an SMSC may mint it.
        await ingestOk([carried('m-1', ALICE, 'A1 b/2'), carried('m-1', BOB, 'A1 b/3')]);
        await ingestOk([carried('m-1', ALICE, 'A1 b/2')]);
        const results = await h().store.ingestCarrierReceipts(
          'smsc-1',
          [{ carrierId: 'A1 b/3', drStatuscode: 'delivered', drErrcode: '0', drTime: new Date(at(2)) }],
          new Date(START),
        );
        expect(results).toStrictEqual([
          { outcome: 'applied', accountId: acct.id, messageId: 'm-1', to: BOB },
        ]);
        const items = await dlr('m-1');
        expect(items.map((i) => [i.to, i.drStatuscode ?? null, i.drTime ?? null])).toStrictEqual([
          [ALICE, null, null],
          [BOB, 'delivered', drAt(2)],
        ]);
      });

      it('refuses a pair another recipient holds, naming the pair, and writes nothing', async () => {
        await ingestOk([carried('m-1', ALICE, 'c-1')]);
        const res = await ingest([
          { id: 'g-0', channel: 'SMS', channelUserId: BOB },
          carried('m-2', BOB, 'c-1'),
        ]);
        const [detail] = expectItemErrors(res, [1]);
        expect(detail).toBe(`carrier id "c-1" on route smsc-1 already belongs to message m-1 to ${ALICE}`);
        expect((res.json() as { errors: { param?: string }[] }).errors[0]?.param).toBe('sms.carrier');
        expect(await records(['g-0', 'm-2'])).toStrictEqual([]);
      });

      it('names a taken pair beside malformed items in one answer', async () => {
        await ingestOk([carried('m-1', ALICE, 'c-1')]);
        const res = await ingest([carried('m-2', BOB, 'c-1'), { id: 'b', channel: 'SMS' }]);
        expectItemErrors(res, [0, 1]);
      });
    });

    describe('contacts and identities', () => {
      it('finds or creates the contact of an identity', async () => {
        await ingestOk([
          { id: 'm-1', channel: 'SMS', channelUserId: ALICE },
          { id: 'm-2', channel: 'SMS', channelUserId: ALICE },
          { id: 'm-3', channel: 'SMS', channelUserId: BOB },
        ]);
        const [m1, m2, m3] = await records(['m-1', 'm-2', 'm-3']);
        expect(m1?.contactId).toBe(m2?.contactId);
        expect(m1?.conversationId).toBe(m2?.conversationId);
        expect(m3?.contactId).not.toBe(m1?.contactId);
      });

      it('links an identity to the given contact, creating the contact if new', async () => {
        const fresh = '0190A5D4-7E2B-7C3D-8E4F-5A6B7C8D9E0F';
        await ingestOk([
          { id: 'm-1', channel: 'SMS', channelUserId: ALICE, contactId: fresh },
          { id: 'm-2', channel: 'WHATSAPP', channelUserId: 'wa-alice', contactId: fresh.toLowerCase() },
          // The identity is now linked: later items find the contact without naming it.
          { id: 'm-3', channel: 'WHATSAPP', channelUserId: 'wa-alice' },
        ]);
        const found = await records(['m-1', 'm-2', 'm-3']);
        expect(found.map((m) => m.contactId)).toStrictEqual([
          fresh.toLowerCase(),
          fresh.toLowerCase(),
          fresh.toLowerCase(),
        ]);
        expect(found[0]?.conversationId).not.toBe(found[1]?.conversationId);
        expect((await history({ channel: 'WHATSAPP', contactId: fresh })).map((m) => m.id)).toStrictEqual([
          'm-2',
          'm-3',
        ]);
      });

      it('refuses an identity owned by another contact, and a second identity on one channel', async () => {
        await ingestOk([
          { id: 'm-1', channel: 'SMS', channelUserId: ALICE },
          { id: 'm-2', channel: 'SMS', channelUserId: BOB },
        ]);
        const [alice, bob] = await records(['m-1', 'm-2']);
        const res = await ingest([
          { id: 'ok', channel: 'WHATSAPP', channelUserId: 'wa-alice', contactId: alice?.contactId },
          { id: 'stolen', channel: 'SMS', channelUserId: ALICE, contactId: bob?.contactId },
          { id: 'second', channel: 'SMS', channelUserId: CAROL, contactId: alice?.contactId },
        ]);
        const [stolen, second] = expectItemErrors(res, [1, 2]);
        expect(stolen).toContain(ALICE);
        expect(second).toContain(ALICE);
        expect(await records(['ok', 'stolen', 'second'])).toStrictEqual([]);
        // The identity claimed by the refused batch is still free.
        await ingestOk([
          { id: 'wa', channel: 'WHATSAPP', channelUserId: 'wa-alice', contactId: bob?.contactId },
        ]);
      });

      it('names the bad items of both kinds in one answer', async () => {
        await ingestOk([
          { id: 'm-1', channel: 'SMS', channelUserId: ALICE },
          { id: 'm-2', channel: 'SMS', channelUserId: BOB },
        ]);
        const [, bob] = await records(['m-1', 'm-2']);
        const res = await ingest([
          { id: 'typo', channel: 'SMS', channelUserId: ALICE, txt: 'x' },
          { id: 'fine', channel: 'TELEGRAM', channelUserId: 'tg-bob', contactId: bob?.contactId },
          { id: 'stolen', channel: 'SMS', channelUserId: ALICE, contactId: bob?.contactId },
          { id: 'bad-channel', channel: 'FAX', channelUserId: ALICE },
        ]);
        const [typo, stolen] = expectItemErrors(res, [0, 2, 3]);
        expect(typo).toContain('txt');
        expect(stolen).toContain(ALICE);
        // The well-formed items were only checked: nothing of them was written.
        expect(await records(['typo', 'fine', 'stolen'])).toStrictEqual([]);
        await ingestOk([{ id: 'tg', channel: 'TELEGRAM', channelUserId: 'tg-bob' }]);
        expect((await records(['tg']))[0]?.contactId).not.toBe(bob?.contactId);
      });

      it('keeps the contacts of accounts apart', async () => {
        const other = await h().createAccount({ name: 'Other' });
        await ingestOk([{ id: 'm-1', channel: 'SMS', channelUserId: ALICE }]);
        await ingestOk([{ id: 'm-1', channel: 'SMS', channelUserId: ALICE, text: 'theirs' }], other);
        const [mine] = await records(['m-1']);
        const [theirs] = await records(['m-1'], other);
        expect(mine?.contactId).not.toBe(theirs?.contactId);
        expect(mine?.text).toBeNull();
        expect(theirs?.text).toBe('theirs');
      });
    });

    describe('re-sending', () => {
      const batch = [
        {
          id: 'm-1',
          channel: 'SMS',
          channelUserId: ALICE,
          text: 'a',
          campaignId: 'c',
          createdAt: at(1),
          sms: { status: '0', network: '23410', price: 0.05, counts: 2 },
        },
        { id: 'm-1', channel: 'SMS', channelUserId: BOB, text: 'a', createdAt: at(1) },
        {
          id: 'w-1',
          channel: 'WHATSAPP',
          channelUserId: 'wa-1',
          content: { k: [1, 2] },
          status: 'delivered',
          createdAt: at(2),
        },
        {
          id: 'i-1',
          channel: 'SMS',
          channelUserId: ALICE,
          direction: 'inbound',
          text: 'reply',
          createdAt: at(3),
        },
      ];

      it('is idempotent: the same batch twice gives the same state', async () => {
        expect(await ingestOk(batch)).toStrictEqual({ accepted: 4 });
        const once = await records(['m-1', 'w-1', 'i-1']);
        const dlrOnce = await dlr('m-1');
        h().advance(3600_000);
        expect(await ingestOk(batch)).toStrictEqual({ accepted: 4 });
        expect(await records(['m-1', 'w-1', 'i-1'])).toStrictEqual(once);
        expect(await dlr('m-1')).toStrictEqual(dlrOnce);
        expect(once).toHaveLength(4);
        expect(dlrOnce).toStrictEqual([
          { type: 'dlr', messageid: 'm-1', to: ALICE, status: '0', price: 0.05, counts: 2, network: '23410' },
          { type: 'dlr', messageid: 'm-1', to: BOB, status: '1', price: 0, counts: 1 },
        ]);
      });

      it('replaces given fields, keeps absent ones and never changes createdAt', async () => {
        await ingestOk(batch);
        h().advance(3600_000);
        await ingestOk([
          {
            id: 'm-1',
            channel: 'SMS',
            channelUserId: ALICE,
            text: 'b',
            createdAt: at(50),
            sms: { price: 0.07 },
          },
          { id: 'w-1', channel: 'WHATSAPP', channelUserId: 'wa-1', status: 'read' },
        ]);
        const [m1, w1] = await records(['m-1', 'w-1']).then((r) => [
          r.find((m) => m.channelUserId === ALICE),
          r.find((m) => m.id === 'w-1'),
        ]);
        expect(m1).toMatchObject({ text: 'b', campaignId: 'c', createdAt: at(1), status: 'sent' });
        expect(w1).toMatchObject({ content: { k: [1, 2] }, status: 'read', createdAt: at(2) });
        expect((await dlr('m-1'))[0]).toStrictEqual({
          type: 'dlr',
          messageid: 'm-1',
          to: ALICE,
          status: '0',
          price: 0.07,
          counts: 2,
          network: '23410',
        });
      });

      it('clears text, content and campaignId with null', async () => {
        await ingestOk(batch);
        await ingestOk([
          { id: 'm-1', channel: 'SMS', channelUserId: ALICE, text: null, campaignId: null },
          { id: 'w-1', channel: 'WHATSAPP', channelUserId: 'wa-1', content: null },
        ]);
        const found = await records(['m-1', 'w-1']);
        expect(found.find((m) => m.channelUserId === ALICE)).toMatchObject({ text: null, campaignId: null });
        expect(found.find((m) => m.id === 'w-1')).toMatchObject({ content: null, status: 'delivered' });
      });

      it('never moves a send status back from "0" or "400" to "1"', async () => {
        await ingestOk([
          { id: 's-0', channel: 'SMS', channelUserId: ALICE, sms: { status: '0' } },
          { id: 's-400', channel: 'SMS', channelUserId: ALICE, sms: { status: '400' } },
          { id: 's-1', channel: 'SMS', channelUserId: ALICE },
        ]);
        await ingestOk([
          { id: 's-0', channel: 'SMS', channelUserId: ALICE, sms: { status: '1' } },
          { id: 's-400', channel: 'SMS', channelUserId: ALICE, sms: { status: '1' } },
          { id: 's-1', channel: 'SMS', channelUserId: ALICE, sms: { status: '0' } },
        ]);
        expect((await dlr('s-0'))[0]?.status).toBe('0');
        expect((await dlr('s-400'))[0]?.status).toBe('400');
        expect((await dlr('s-1'))[0]?.status).toBe('0');
        expect((await records(['s-0', 's-400', 's-1'])).map((m) => [m.id, m.status])).toStrictEqual([
          ['s-0', 'sent'],
          ['s-1', 'sent'],
          ['s-400', 'failed'],
        ]);
      });

      it('lets the later of two items for one record win, keeping the first createdAt', async () => {
        expect(
          await ingestOk([
            {
              id: 'm-1',
              channel: 'VIBER',
              channelUserId: 'v-1',
              text: 'first',
              status: 'sent',
              createdAt: at(1),
            },
            {
              id: 'm-1',
              channel: 'VIBER',
              channelUserId: 'v-1',
              text: 'second',
              status: 'read',
              createdAt: at(9),
            },
          ]),
        ).toStrictEqual({ accepted: 2 });
        expect(await records(['m-1'])).toMatchObject([{ text: 'second', status: 'read', createdAt: at(1) }]);
      });

      it('refuses a re-send on another channel', async () => {
        await ingestOk([{ id: 'm-1', channel: 'VIBER', channelUserId: 'same-user' }]);
        expectItemErrors(await ingest([{ id: 'm-1', channel: 'TELEGRAM', channelUserId: 'same-user' }]), [0]);
      });
    });
  });

  describe('POST /admin/v1/accounts/{id}/receipts', () => {
    beforeEach(async () => {
      await ingestOk([
        { id: 'one', channel: 'SMS', channelUserId: ALICE, sms: { status: '0' } },
        { id: 'pending', channel: 'SMS', channelUserId: ALICE },
        { id: 'multi', channel: 'SMS', channelUserId: ALICE },
        { id: 'multi', channel: 'SMS', channelUserId: BOB },
        { id: 'chat', channel: 'WHATSAPP', channelUserId: 'wa-1' },
        { id: 'in', channel: 'SMS', channelUserId: ALICE, direction: 'inbound' },
      ]);
    });
    const receiptOf = async (id: string, to = ALICE) => {
      const item = (await dlr(id)).find((i) => i.to === to);
      if (!item) throw new Error(`no dlr item ${id} ${to}`);
      return item;
    };

    it('applies a receipt, defaulting drErrcode to "0" and drTime to now, and sets the send status to "0"', async () => {
      h().advance(1234);
      expect(await receiptsOk([{ messageId: 'pending', drStatuscode: 'delivered' }])).toStrictEqual({
        applied: 1,
        ignored: 0,
        unknown: [],
      });
      expect(await receiptOf('pending')).toStrictEqual({
        type: 'dlr',
        messageid: 'pending',
        to: ALICE,
        status: '0',
        price: 0,
        counts: 1,
        drStatus: 0,
        drStatuscode: 'delivered',
        drErrcode: '0',
        drTime: '2026-11-22 10:00:01.234',
      });
      expect((await records(['pending']))[0]?.status).toBe('delivered');
    });

    it('takes network, price and counts from a receipt', async () => {
      await receiptsOk([
        { messageId: 'one', drStatuscode: 'accepted', network: '310260', price: 0.2, counts: 3 },
      ]);
      expect(await receiptOf('one')).toMatchObject({ network: '310260', price: 0.2, counts: 3, drStatus: 0 });
    });

    it('applies a higher rank and ignores a lower one', async () => {
      expect(
        await receiptsOk([{ messageId: 'one', drStatuscode: 'accepted', drTime: drAt(1) }]),
      ).toMatchObject({ applied: 1 });
      expect(
        await receiptsOk([{ messageId: 'one', drStatuscode: 'delivered', drTime: drAt(2) }]),
      ).toMatchObject({ applied: 1, ignored: 0 });
      // Lower rank, however late, changes nothing.
      expect(
        await receiptsOk([
          { messageId: 'one', drStatuscode: 'accepted', drTime: drAt(9), network: '23415', price: 9 },
        ]),
      ).toStrictEqual({ applied: 0, ignored: 1, unknown: [] });
      expect(await receiptOf('one')).toMatchObject({ drStatuscode: 'delivered', drTime: drAt(2), price: 0 });
      expect(await receiptOf('one')).not.toHaveProperty('network');
      // A higher rank applies even when its drTime is earlier.
      await ingestOk([{ id: 'late', channel: 'SMS', channelUserId: ALICE }]);
      await receiptsOk([{ messageId: 'late', drStatuscode: 'accepted', drTime: drAt(5) }]);
      expect(
        await receiptsOk([{ messageId: 'late', drStatuscode: 'expired', drTime: drAt(4) }]),
      ).toMatchObject({ applied: 1 });
      expect(await receiptOf('late')).toMatchObject({ drStatuscode: 'expired', drStatus: 400 });
    });

    it('applies an equal rank only when strictly later and different', async () => {
      await receiptsOk([{ messageId: 'one', drStatuscode: 'delivered', drTime: drAt(2) }]);
      const outcome = await receiptsOk([
        { messageId: 'one', drStatuscode: 'delivered', drTime: drAt(3) }, // same code and errcode
        { messageId: 'one', drStatuscode: 'rejected', drErrcode: '5', drTime: drAt(2) }, // not later
        { messageId: 'one', drStatuscode: 'failed', drTime: drAt(1) }, // earlier
      ]);
      expect(outcome).toStrictEqual({ applied: 0, ignored: 3, unknown: [] });
      expect(await receiptOf('one')).toMatchObject({ drStatuscode: 'delivered', drTime: drAt(2) });

      expect(
        await receiptsOk([{ messageId: 'one', drStatuscode: 'rejected', drErrcode: '5', drTime: drAt(3) }]),
      ).toMatchObject({
        applied: 1,
      });
      // Same code, different error code, later: applies.
      expect(
        await receiptsOk([{ messageId: 'one', drStatuscode: 'rejected', drErrcode: '4', drTime: drAt(4) }]),
      ).toMatchObject({
        applied: 1,
      });
      expect(await receiptOf('one')).toMatchObject({
        drStatuscode: 'rejected',
        drErrcode: '4',
        drStatus: 400,
        drTime: drAt(4),
      });
      // accepted is an equal rank to accepted as well.
      await receiptsOk([{ messageId: 'pending', drStatuscode: 'accepted', drTime: drAt(1) }]);
      expect(
        await receiptsOk([{ messageId: 'pending', drStatuscode: 'accepted', drErrcode: 0, drTime: drAt(2) }]),
      ).toMatchObject({
        ignored: 1,
      });
    });

    it('applies receipts of one batch in order', async () => {
      const outcome = await receiptsOk([
        { messageId: 'one', drStatuscode: 'accepted', drTime: drAt(1) },
        { messageId: 'one', drStatuscode: 'delivered', drTime: drAt(2) },
        { messageId: 'one', drStatuscode: 'accepted', drTime: drAt(3) },
      ]);
      expect(outcome).toStrictEqual({ applied: 2, ignored: 1, unknown: [] });
      expect(await receiptOf('one')).toMatchObject({ drStatuscode: 'delivered' });
    });

    it('accepts drErrcode as a JSON number', async () => {
      await receiptsOk([{ messageId: 'one', drStatuscode: 'rejected', drErrcode: 5 }]);
      expect(await receiptOf('one')).toMatchObject({ drErrcode: '5' });
    });

    it('reads drTime in the spec format and in RFC 3339, storing UTC', async () => {
      await receiptsOk([
        { messageId: 'one', drStatuscode: 'delivered', drTime: '2026-11-22 09:30:00.123' },
        { messageId: 'multi', to: ALICE, drStatuscode: 'delivered', drTime: '2026-11-22T11:30:00.456+02:00' },
        { messageId: 'multi', to: BOB, drStatuscode: 'delivered', drTime: '2026-11-22T09:31:00Z' },
      ]);
      expect((await receiptOf('one')).drTime).toBe('2026-11-22 09:30:00.123');
      expect((await receiptOf('multi', ALICE)).drTime).toBe('2026-11-22 09:30:00.456');
      expect((await receiptOf('multi', BOB)).drTime).toBe('2026-11-22 09:31:00.000');
    });

    it('requires to for a message with several recipients', async () => {
      const res = await receipts([
        { messageId: 'one', drStatuscode: 'delivered' },
        { messageId: 'multi', drStatuscode: 'delivered' },
      ]);
      expect(expectItemErrors(res, [1])[0]).toContain('to');
      expect(await receiptOf('one')).not.toHaveProperty('drStatuscode');
      expect(
        await receiptsOk([{ messageId: 'multi', to: BOB, drStatuscode: 'failed', drErrcode: '2' }]),
      ).toMatchObject({
        applied: 1,
      });
      expect(await receiptOf('multi', BOB)).toMatchObject({ drStatuscode: 'failed', status: '0' });
      expect(await receiptOf('multi', ALICE)).not.toHaveProperty('drStatuscode');
    });

    it('lists receipts it cannot place under unknown, in order', async () => {
      const outcome = await receiptsOk([
        { messageId: 'nope', drStatuscode: 'delivered' },
        { messageId: 'one', drStatuscode: 'delivered' },
        { messageId: 'chat', drStatuscode: 'delivered' },
        { messageId: 'one', to: CAROL, drStatuscode: 'delivered' },
        { messageId: 'in', drStatuscode: 'delivered' },
        { messageId: 'nope', to: BOB, drStatuscode: 'accepted' },
      ]);
      expect(outcome).toStrictEqual({
        applied: 1,
        ignored: 0,
        unknown: [
          { messageId: 'nope', to: null },
          { messageId: 'chat', to: null },
          { messageId: 'one', to: CAROL },
          { messageId: 'in', to: null },
          { messageId: 'nope', to: BOB },
        ],
      });
      expect((await records(['chat']))[0]?.status).toBe('sent');
    });

    it('does not place receipts on the messages of another account', async () => {
      const other = await h().createAccount({ name: 'Other' });
      const res = await h().receipts(other.id, [{ messageId: 'one', drStatuscode: 'delivered' }]);
      expect(res.json()).toStrictEqual({ applied: 0, ignored: 0, unknown: [{ messageId: 'one', to: null }] });
      expect(await receiptOf('one')).not.toHaveProperty('drStatuscode');
    });

    const badReceipts: [string, unknown][] = [
      ['no messageId', { drStatuscode: 'delivered' }],
      ['no drStatuscode', { messageId: 'one' }],
      ['an unknown drStatuscode', { messageId: 'one', drStatuscode: 'DELIVRD' }],
      ['an unknown drErrcode', { messageId: 'one', drStatuscode: 'failed', drErrcode: '9' }],
      ['an unknown numeric drErrcode', { messageId: 'one', drStatuscode: 'failed', drErrcode: 13 }],
      ['a padded drErrcode', { messageId: 'one', drStatuscode: 'failed', drErrcode: '05' }],
      ['a fractional drErrcode', { messageId: 'one', drStatuscode: 'failed', drErrcode: 5.5 }],
      ['a boolean drErrcode', { messageId: 'one', drStatuscode: 'failed', drErrcode: true }],
      ['a malformed drTime', { messageId: 'one', drStatuscode: 'delivered', drTime: '22/11/2026 10:00' }],
      [
        'a drTime without milliseconds',
        { messageId: 'one', drStatuscode: 'delivered', drTime: '2026-11-22 10:00:00' },
      ],
      [
        'an impossible drTime',
        { messageId: 'one', drStatuscode: 'delivered', drTime: '2026-02-30 10:00:00.000' },
      ],
      ['a malformed to', { messageId: 'one', to: '+447700900001', drStatuscode: 'delivered' }],
      ['a malformed network', { messageId: 'one', drStatuscode: 'delivered', network: 'abc' }],
      ['a negative price', { messageId: 'one', drStatuscode: 'delivered', price: -0.1 }],
      ['counts 0', { messageId: 'one', drStatuscode: 'delivered', counts: 0 }],
      ['a malformed messageId', { messageId: 'o n e', drStatuscode: 'delivered' }],
      ['an unknown field', { messageId: 'one', drStatuscode: 'delivered', drStatus: 0 }],
    ];
    it.each(badReceipts)('refuses a receipt with %s, applying nothing', async (_name, item) => {
      const res = await receipts([{ messageId: 'pending', drStatuscode: 'delivered' }, item]);
      expectItemErrors(res, [1]);
      expect(await receiptOf('pending')).not.toHaveProperty('drStatuscode');
      expect(await receiptOf('one')).not.toHaveProperty('drStatuscode');
    });

    it('names every bad receipt', async () => {
      const res = await receipts([
        { messageId: 'one', drStatuscode: 'nope' },
        { messageId: 'pending', drStatuscode: 'delivered' },
        { messageId: 'one', drStatuscode: 'failed', drErrcode: 'x' },
        // Well-formed, but the message has two recipients: found by checking against the store.
        { messageId: 'multi', drStatuscode: 'failed' },
      ]);
      expect(expectItemErrors(res, [0, 2, 3])[2]).toContain('to');
      expect(await receiptOf('pending')).not.toHaveProperty('drStatuscode');
    });

    it('accepts 1 to 1000 receipts', async () => {
      expectProblem(await receipts([]), 400, 'invalid_request');
      const many = Array.from({ length: 1001 }, () => ({ messageId: 'nope', drStatuscode: 'delivered' }));
      expectProblem(await receipts(many), 400, 'invalid_request');
      const outcome = await receiptsOk(many.slice(1));
      expect(outcome.unknown).toHaveLength(1000);
    });

    it('answers 404 for an unknown account', async () => {
      expectProblem(
        await h().admin('POST', `/admin/v1/accounts/${MISSING}/receipts`, {
          receipts: [{ messageId: 'one', drStatuscode: 'delivered' }],
        }),
        404,
        'not_found',
      );
    });
  });

  describe('protocol', () => {
    it('refuses a body over 5 MiB with 413', async () => {
      const text = 'x'.repeat(5 * 1024 * 1024);
      const res = await h().inject({
        method: 'POST',
        url: `/admin/v1/accounts/${acct.id}/messages`,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        payload: JSON.stringify({ messages: [{ id: 'big', channel: 'SMS', channelUserId: ALICE, text }] }),
      });
      const body = expectProblem(res, 413, 'payload_too_large');
      expect(body.title).toBe('Content Too Large');
      expect(await records(['big'])).toStrictEqual([]);
    });

    it('accepts a body just under 5 MiB', async () => {
      const text = 'x'.repeat(60_000);
      const messages = Array.from({ length: 80 }, (_, i) => ({
        id: `m-${i}`,
        channel: 'SMS',
        channelUserId: ALICE,
        text,
      }));
      const payload = JSON.stringify({ messages });
      expect(payload.length).toBeLessThan(5 * 1024 * 1024);
      const res = await h().inject({
        method: 'POST',
        url: `/admin/v1/accounts/${acct.id}/messages`,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        payload,
      });
      expect(res.statusCode, res.body.slice(0, 200)).toBe(200);
    });

    it('refuses a body that is not JSON with 400', async () => {
      for (const url of [
        `/admin/v1/accounts/${acct.id}/messages`,
        `/admin/v1/accounts/${acct.id}/receipts`,
      ]) {
        const res = await h().inject({
          method: 'POST',
          url,
          headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
          payload: '{"messages": [',
        });
        expectProblem(res, 400, 'invalid_request');
      }
    });

    it('checks the bearer token before reading the body', async () => {
      const res = await h().inject({
        method: 'POST',
        url: `/admin/v1/accounts/${acct.id}/messages`,
        headers: { 'content-type': 'application/json' },
        payload: '{"messages": [',
      });
      expectProblem(res, 401, 'unauthorized');
    });

    it.each([
      ['GET', 'messages'],
      ['PUT', 'messages'],
      ['GET', 'receipts'],
      ['DELETE', 'receipts'],
    ])('answers %s on /%s with 405 and Allow: POST', async (method, path) => {
      const res = await h().inject({
        method: method as 'GET',
        url: `/admin/v1/accounts/${acct.id}/${path}`,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      });
      expectProblem(res, 405, 'method_not_allowed');
      expect(res.headers.allow).toBe('POST');
    });
  });
});
