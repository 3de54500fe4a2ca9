/**
 * What the operator API makes of a JSON body a person may send: an empty one on an operation that takes none is
 * accepted, a `__proto__` key is refused by name (not as "not valid JSON"), and a value outside a closed list is
 * answered with the values it allows.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { describeValidation } from '../../src/http/error-handling.js';
import { engines } from '../support/engines.js';
import { ADMIN_TOKEN, type CreatedAccount, useHarness } from '../support/http.js';
import { expectProblem } from '../support/problems.js';

const JSON_HEADERS = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' };

describe.each(engines())('$name operator request bodies', (engine) => {
  const h = useHarness(engine);
  let acct: CreatedAccount;
  beforeEach(async () => {
    acct = await h().createAccount();
  });
  const post = (url: string, payload: string, headers: Record<string, string> = JSON_HEADERS) =>
    h().inject({ method: 'POST', url, headers, payload });

  describe('an empty body sent as application/json', () => {
    it.each([
      ['secret', 200],
      ['callback-secret', 200],
      ['deliveries/redeliver', 202],
    ])('is accepted by POST …/%s, which takes no fields', async (path, status) => {
      const res = await post(`/admin/v1/accounts/${acct.id}/${path}`, '');
      expect(res.statusCode, res.body).toBe(status);
    });

    it('reads as {} on the bulk redelivery', async () => {
      const res = await post(`/admin/v1/accounts/${acct.id}/deliveries/redeliver`, '');
      expect(res.json()).toStrictEqual({ redelivered: 0 });
    });

    it('is accepted with a charset and with white space only', async () => {
      const res = await post(`/admin/v1/accounts/${acct.id}/secret`, ' \n', {
        ...JSON_HEADERS,
        'content-type': 'application/json; charset=utf-8',
      });
      expect(res.statusCode, res.body).toBe(200);
    });

    it.each([
      ['POST', '/admin/v1/accounts'],
      ['PATCH', '/admin/v1/accounts/{id}'],
      ['POST', '/admin/v1/accounts/{id}/messages'],
      ['POST', '/admin/v1/accounts/{id}/receipts'],
    ] as const)('is still refused by %s %s, which needs fields', async (method, path) => {
      const res = await h().inject({
        method,
        url: path.replace('{id}', acct.id),
        headers: JSON_HEADERS,
        payload: '',
      });
      expect(expectProblem(res, 400, 'invalid_request').detail).toMatch(/body is empty/);
    });
  });

  describe('a __proto__ key', () => {
    it.each([
      ['at the top level', '{"name":"Acme","__proto__":{"admin":true}}', 'the top level'],
      ['nested', '{"name":"Acme","ipWhitelist":[],"x":{"y":[{"__proto__":{}}]}}', 'x.y[0]'],
      ['spelled with escapes', '{"name":"Acme","\\u005f_proto__":{}}', 'the top level'],
    ])('is refused %s, naming the key and where it is', async (_where, payload, path) => {
      const res = await post('/admin/v1/accounts', payload);
      const body = expectProblem(res, 400, 'invalid_request');
      expect(body.detail).toContain('"__proto__"');
      expect(body.detail).toContain(path);
      expect(body.detail).not.toMatch(/not valid JSON/);
    });

    it('is refused in a batch item, and nothing is written', async () => {
      const res = await post(
        `/admin/v1/accounts/${acct.id}/messages`,
        '{"messages":[{"id":"m-1","channel":"SMS","channelUserId":"447700900123","content":{"__proto__":{"x":1}}}]}',
      );
      expect(expectProblem(res, 400, 'invalid_request').detail).toContain('messages[0].content');
      const read = await h().inject({
        url: `/dlr?key=${acct.key}&secret=${acct.secret}&messageid=m-1`,
      });
      expect(read.json()).toStrictEqual([]);
    });

    it('refuses constructor.prototype by name too', async () => {
      const res = await post('/admin/v1/accounts', '{"name":"Acme","constructor":{"prototype":{"x":1}}}');
      expect(expectProblem(res, 400, 'invalid_request').detail).toContain('constructor.prototype');
    });

    it('lets a plain "constructor" or "prototype" field reach the usual checks', async () => {
      const res = await post('/admin/v1/accounts', '{"name":"Acme","constructor":"x"}');
      expect(expectProblem(res, 400, 'invalid_request')).toMatchObject({ param: 'constructor' });
    });

    it('still calls broken JSON not valid JSON', async () => {
      const res = await post('/admin/v1/accounts', '{"name":');
      expect(expectProblem(res, 400, 'invalid_request').detail).toMatch(/not valid JSON/);
    });
  });

  describe('a value outside a closed list', () => {
    it.each([
      [{ direction: 'sideways' }, 'direction', 'outbound, inbound'],
      [
        { channel: 'WHATSAPP', channelUserId: 'x', status: 'lost' },
        'status',
        'pending, sent, delivered, read, failed',
      ],
      [{ sms: { status: '7' } }, 'sms.status', '1, 0, 400'],
    ])('names the allowed values in a message item: %j', async (fields, param, allowed) => {
      const res = await h().ingest(acct.id, [
        { id: 'm-1', channel: 'SMS', channelUserId: '447700900123', ...fields },
      ]);
      const body = expectProblem(res, 400, 'invalid_request');
      expect(body.errors).toStrictEqual([{ index: 0, param, detail: `${param} must be one of ${allowed}` }]);
    });

    it('names the allowed values in a receipt item', async () => {
      const res = await h().receipts(acct.id, [{ messageId: 'm-1', drStatuscode: 'gone' }]);
      const body = expectProblem(res, 400, 'invalid_request');
      expect(body.errors).toStrictEqual([
        {
          index: 0,
          param: 'drStatuscode',
          detail:
            'drStatuscode must be one of delivered, accepted, rejected, failed, expired, deleted, unknown',
        },
      ]);
    });

    it('names the allowed states of the delivery list', async () => {
      const res = await h().admin('GET', `/admin/v1/accounts/${acct.id}/deliveries?state=lost`);
      const body = expectProblem(res, 400, 'invalid_request');
      expect(body).toMatchObject({ param: 'state' });
      expect(body.detail).toContain('pending, delivered, dead, superseded');
    });
  });
});

describe('a schema-validated body field outside its closed list', () => {
  it('is described with the values it allows', () => {
    // What Fastify's Ajv reports for an enum, as describeValidation receives it.
    const described = describeValidation('body', [
      {
        keyword: 'enum',
        instancePath: '/direction',
        schemaPath: '#/properties/direction/enum',
        params: { allowedValues: ['outbound', 'inbound'] },
        message: 'must be equal to one of the allowed values',
      },
    ]);
    expect(described).toStrictEqual({
      detail: 'body field "direction" must be one of outbound, inbound',
      param: 'direction',
    });
  });
});
