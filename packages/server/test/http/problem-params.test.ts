/**
 * Every 400 names what is at fault: `detail` in words, and `param` (the query parameter or body field, as the
 * caller wrote it) whenever exactly one is. A body that is not JSON is a 415 naming what was sent.
 */
import type { LightMyRequestResponse } from 'fastify';
import { beforeEach, describe, expect, it } from 'vitest';
import { engines } from '../support/engines.js';
import { ADMIN_TOKEN, basic, type CreatedAccount, useHarness } from '../support/http.js';

function problem(res: LightMyRequestResponse, status: number, code: string): Record<string, unknown> {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  const body = res.json() as Record<string, unknown>;
  expect(body).toMatchObject({ status, code, requestId: res.headers['x-request-id'] });
  return body;
}

describe.each(engines())('$name problem details name what is at fault', (engine) => {
  const h = useHarness(engine);
  let acct: CreatedAccount;
  beforeEach(async () => {
    acct = await h().createAccount();
  });
  const query = (url: string) =>
    h().inject({ url, headers: { authorization: basic(acct.key, acct.secret) } });

  describe('a body that is not JSON', () => {
    it.each([
      ['text/plain', 'name=Acme'],
      ['application/x-www-form-urlencoded', 'name=Acme'],
      ['application/xml', '<account/>'],
    ])('is a 415 naming %s', async (contentType, payload) => {
      const res = await h().inject({
        method: 'POST',
        url: '/admin/v1/accounts',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': contentType },
        payload,
      });
      const body = problem(res, 415, 'unsupported_media_type');
      expect(body.detail).toContain(contentType);
      expect(body.detail).toContain('application/json');
    });

    it('is a 415 when a body comes without a Content-Type', async () => {
      const res = await h().inject({
        method: 'POST',
        url: `/admin/v1/accounts/${acct.id}/messages`,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
        payload: 'messages',
      });
      expect(problem(res, 415, 'unsupported_media_type').detail).toMatch(/no Content-Type/);
    });

    it('does not echo a huge Content-Type whole', async () => {
      const res = await h().inject({
        method: 'POST',
        url: '/admin/v1/accounts',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': `text/${'x'.repeat(2000)}` },
        payload: 'x',
      });
      expect(String(problem(res, 415, 'unsupported_media_type').detail).length).toBeLessThan(300);
    });

    it('still accepts application/json with a charset', async () => {
      const res = await h().inject({
        method: 'POST',
        url: '/admin/v1/accounts',
        headers: {
          authorization: `Bearer ${ADMIN_TOKEN}`,
          'content-type': 'application/json; charset=utf-8',
        },
        payload: JSON.stringify({ name: 'Acme' }),
      });
      expect(res.statusCode).toBe(201);
    });
  });

  describe('operator API bodies', () => {
    it.each<[string, 'POST' | 'PATCH', string, unknown, string, RegExp]>([
      [
        'an unknown field',
        'POST',
        '/admin/v1/accounts',
        { name: 'Acme', colour: 'red' },
        'colour',
        /"colour"/,
      ],
      ['a missing field', 'POST', '/admin/v1/accounts', { balance: 1 }, 'name', /"name"/],
      [
        'a wrong type',
        'POST',
        '/admin/v1/accounts',
        { name: 'Acme', balance: 'lots' },
        'balance',
        /"balance"/,
      ],
      [
        'null where not allowed',
        'PATCH',
        '',
        { dlrQueryEnabled: null },
        'dlrQueryEnabled',
        /dlrQueryEnabled/,
      ],
      ['a bad callback URL', 'PATCH', '', { callbackUrl: 'ftp://x' }, 'callbackUrl', /callbackUrl/],
      [
        'a bad whitelist entry',
        'PATCH',
        '',
        { ipWhitelist: ['::1', 'nope'] },
        'ipWhitelist[1]',
        /ipWhitelist\[1\]/,
      ],
      [
        'an array entry of the wrong type',
        'PATCH',
        '',
        { ipWhitelist: ['::1', 7] },
        'ipWhitelist[1]',
        /ipWhitelist\[1\]/,
      ],
      ['a typo in a batch', 'POST', '/messages', { mesages: [] }, 'mesages', /"mesages"/],
      ['an empty batch', 'POST', '/receipts', { receipts: [] }, 'receipts', /receipts/],
    ])('%s gets a 400 naming the field', async (_name, method, path, payload, param, detail) => {
      const url = path.startsWith('/admin') ? path : `/admin/v1/accounts/${acct.id}${path}`;
      const body = problem(await h().admin(method, url, payload), 400, 'invalid_request');
      expect(body.param).toBe(param);
      expect(body.detail).toMatch(detail);
    });

    it('says a nullable field takes a string or null once, or which rule a string breaks', async () => {
      const url = `/admin/v1/accounts/${acct.id}`;
      const wrongType = problem(await h().admin('PATCH', url, { callbackUrl: 5 }), 400, 'invalid_request');
      expect(wrongType).toMatchObject({
        param: 'callbackUrl',
        detail: 'body field "callbackUrl" must be string or null',
      });
      const tooLong = await h().admin('PATCH', url, { callbackUrl: `https://x.example/${'a'.repeat(3000)}` });
      expect(problem(tooLong, 400, 'invalid_request')).toMatchObject({
        param: 'callbackUrl',
        detail: 'body field "callbackUrl" must NOT have more than 2048 characters',
      });
    });

    it('leaves param out when several fields are at fault, naming them all in detail', async () => {
      const body = problem(
        await h().admin('POST', '/admin/v1/accounts', { colour: 'red', size: 'XL' }),
        400,
        'invalid_request',
      );
      expect(body).not.toHaveProperty('param');
      expect(body.detail).toMatch(/"colour"/);
      expect(body.detail).toMatch(/"size"/);
      expect(body.detail).toMatch(/"name"/);
    });

    it('names the field of each bad batch item', async () => {
      const res = await h().ingest(acct.id, [
        { id: 'ok', channel: 'SMS', channelUserId: '447700900123' },
        { id: 'm-2', channel: 'SMS', channelUserId: '447700900123', sms: { network: '1' } },
        { id: 'm-3', channel: 'SMS', channelUserId: '447700900123', txt: 'typo' },
        { id: 'm 4', channel: 'SMS', channelUserId: '447700900123' },
        { channel: 'SMS' },
      ]);
      const body = problem(res, 400, 'invalid_request');
      expect(body).not.toHaveProperty('param');
      expect(body.errors).toStrictEqual([
        { index: 1, detail: expect.stringMatching(/sms\.network/), param: 'sms.network' },
        { index: 2, detail: expect.stringMatching(/"txt"/), param: 'txt' },
        { index: 3, detail: expect.stringMatching(/^id /), param: 'id' },
        { index: 4, detail: expect.stringMatching(/id.*channelUserId/) },
      ]);
    });

    it('names the field of a bad receipt', async () => {
      const res = await h().receipts(acct.id, [
        { messageId: 'm-1', drStatuscode: 'delivered', drErrcode: '42' },
      ]);
      expect(problem(res, 400, 'invalid_request').errors).toStrictEqual([
        { index: 0, detail: expect.stringMatching(/drErrcode/), param: 'drErrcode' },
      ]);
    });
  });

  describe('query parameters', () => {
    it.each([
      ['/messages?channel=SMS&channelUserId=447700900123&size=0', 'size'],
      ['/messages?channel=FAX&channelUserId=447700900123', 'channel'],
      ['/messages?channel=SMS&channelUserId=+447700900123', 'channelUserId'],
      ['/messages?channel=SMS&contactId=nope', 'contactId'],
      ['/messages?channelUserId=447700900123', 'channel'],
      ['/messages?messageIds=a,b%20c', 'messageIds'],
      ['/messages?campaignId=spring%20sale', 'campaignId'],
      ['/messages?channel=SMS&channelUserId=447700900123&cursor=forged', 'cursor'],
      ['/messages?messageIds=a&messageIds=b', 'messageIds'],
      ['/api/v1/contacts/messages?channel=SMS&channelUserId=447700900123&size=500', 'size'],
      ['/receipts?limit=0', 'limit'],
      ['/receipts?after=forged', 'after'],
    ])('%s names %s', async (url, param) => {
      const body = problem(await query(url), 400, 'invalid_request');
      expect(body.param).toBe(param);
      expect(body.detail).toContain(param);
    });

    it('leaves param out when the fault is a combination', async () => {
      const body = problem(
        await query(`/messages?channel=SMS&channelUserId=447700900123&contactId=${acct.id}`),
        400,
        'invalid_request',
      );
      expect(body).not.toHaveProperty('param');
      expect(body.detail).toMatch(/channelUserId.*contactId/);
    });

    it.each([
      ['/deliveries?limit=101', 'limit'],
      ['/deliveries?state=lost', 'state'],
      ['/deliveries?cursor=forged', 'cursor'],
    ])('the operator API %s names %s', async (path, param) => {
      const body = problem(
        await h().admin('GET', `/admin/v1/accounts/${acct.id}${path}`),
        400,
        'invalid_request',
      );
      expect(body.param).toBe(param);
    });

    it('keeps /dlr failures in the spec’s shape, with no param', async () => {
      const res = await h().inject(`/dlr?key=${acct.key}&secret=${acct.secret}&messageid=bad%20id`);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toStrictEqual({ code: 3, descr: 'Invalid parameters' });
    });
  });
});
