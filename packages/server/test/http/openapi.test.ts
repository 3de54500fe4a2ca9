import { describe, expect, it } from 'vitest';
import { engines } from '../support/engines.js';
import { basic, useHarness } from '../support/http.js';
import { type OpenApiDocument as Document, operationsOf, resolve } from '../support/openapi.js';

interface Operation {
  deprecated?: boolean;
  security?: Record<string, string[]>[];
  parameters?: { name: string; in: string }[];
  responses?: Record<string, unknown>;
  requestBody?: unknown;
}
interface OpenApiDocument {
  openapi: string;
  info: { title: string; version: string };
  paths: Record<string, Record<string, Operation>>;
  components?: {
    securitySchemes?: Record<string, { type: string; scheme?: string; in?: string; name?: string }>;
  };
}

const PUBLIC: [string, string][] = [
  ['get', '/dlr'],
  ['get', '/api/v1/contacts/messages'],
  ['get', '/messages'],
  ['get', '/receipts'],
  ['get', '/metrics'],
  ['get', '/healthz'],
  ['get', '/readyz'],
  ['get', '/intake/v1/kannel'],
  ['post', '/intake/v1/kannel'],
  ['get', '/intake/v1/jasmin'],
  ['post', '/intake/v1/jasmin'],
];
const OPERATOR: [string, string][] = [
  ['post', '/admin/v1/accounts'],
  ['get', '/admin/v1/accounts/{id}'],
  ['patch', '/admin/v1/accounts/{id}'],
  ['delete', '/admin/v1/accounts/{id}'],
  ['post', '/admin/v1/accounts/{id}/secret'],
  ['post', '/admin/v1/accounts/{id}/messages'],
  ['post', '/admin/v1/accounts/{id}/receipts'],
  ['post', '/admin/v1/accounts/{id}/callback-secret'],
  ['get', '/admin/v1/accounts/{id}/deliveries'],
  ['get', '/admin/v1/accounts/{id}/deliveries/{deliveryId}'],
  ['post', '/admin/v1/accounts/{id}/deliveries/{deliveryId}/redeliver'],
  ['post', '/admin/v1/accounts/{id}/deliveries/backfill'],
  ['post', '/admin/v1/accounts/{id}/deliveries/redeliver'],
  ['post', '/admin/v1/routes'],
  ['get', '/admin/v1/routes'],
  ['get', '/admin/v1/routes/{name}'],
  ['patch', '/admin/v1/routes/{name}'],
  ['delete', '/admin/v1/routes/{name}'],
  ['post', '/admin/v1/routes/{name}/token'],
  ['get', '/admin/v1/routes/{name}/garbled'],
];
const QUERY_PARAMETERS = ['messageIds', 'channel', 'channelUserId', 'contactId', 'size', 'cursor'];

describe.each(engines())('$name GET /openapi.json', (engine) => {
  describe('with the operator API on', () => {
    const h = useHarness(engine);
    const load = async (): Promise<OpenApiDocument> => {
      const res = await h().inject('/openapi.json');
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      return res.json() as OpenApiDocument;
    };

    it('is an OpenAPI 3.1 document', async () => {
      const doc = await load();
      expect(doc.openapi).toMatch(/^3\.1\.\d+$/);
      expect(doc.info).toMatchObject({ title: 'Waybill', version: expect.any(String) });
    });

    it.each([...PUBLIC, ...OPERATOR])('lists %s %s', async (method, path) => {
      const doc = await load();
      expect(doc.paths[path], `${path} is missing`).toBeDefined();
      expect(doc.paths[path]?.[method], `${method} ${path} is missing`).toBeDefined();
    });

    it('lists no method a route does not serve', async () => {
      const doc = await load();
      const listed = Object.entries(doc.paths).flatMap(([path, ops]) =>
        Object.keys(ops)
          .filter((m) => m !== 'parameters')
          .map((m) => `${m} ${path}`),
      );
      expect(listed.sort()).toStrictEqual([...PUBLIC, ...OPERATOR].map(([m, p]) => `${m} ${p}`).sort());
    });

    it('marks the v1 operation deprecated, and /messages not', async () => {
      const doc = await load();
      expect(doc.paths['/api/v1/contacts/messages']?.get?.deprecated).toBe(true);
      expect(doc.paths['/messages']?.get?.deprecated).not.toBe(true);
      expect(doc.paths['/dlr']?.get?.deprecated).not.toBe(true);
    });

    it('documents the query parameters of both message endpoints', async () => {
      const doc = await load();
      const names = (path: string) =>
        (doc.paths[path]?.get?.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name);
      expect(names('/api/v1/contacts/messages')).toEqual(expect.arrayContaining(QUERY_PARAMETERS));
      expect(names('/api/v1/contacts/messages')).not.toContain('campaignId');
      expect(names('/messages')).toEqual(expect.arrayContaining([...QUERY_PARAMETERS, 'campaignId']));
      // /dlr's key and secret are its security scheme (two API keys in the query), not plain parameters.
      expect(names('/dlr')).toStrictEqual(['messageid']);
    });

    it('declares HTTP Basic on the message endpoints and the bearer token on the operator API', async () => {
      const doc = await load();
      const schemes = doc.components?.securitySchemes;
      expect(schemes?.basic).toMatchObject({ type: 'http', scheme: 'basic' });
      expect(schemes?.adminToken).toMatchObject({ type: 'http', scheme: 'bearer' });
      expect(schemes?.queryKey).toStrictEqual(
        expect.objectContaining({ type: 'apiKey', in: 'query', name: 'key' }),
      );
      expect(schemes?.querySecret).toStrictEqual(
        expect.objectContaining({ type: 'apiKey', in: 'query', name: 'secret' }),
      );
      // Basic, or the key and secret query parameters together (Basic wins when both are given).
      const basicOrQuery = [{ basic: [] }, { queryKey: [], querySecret: [] }];
      expect(doc.paths['/api/v1/contacts/messages']?.get?.security).toStrictEqual(basicOrQuery);
      expect(doc.paths['/messages']?.get?.security).toStrictEqual(basicOrQuery);
      expect(doc.paths['/receipts']?.get?.security).toStrictEqual(basicOrQuery);
      expect(doc.paths['/dlr']?.get?.security).toStrictEqual([{ queryKey: [], querySecret: [] }]);
      for (const [method, path] of OPERATOR) {
        expect(doc.paths[path]?.[method]?.security, `${method} ${path}`).toStrictEqual([{ adminToken: [] }]);
      }
    });

    it('documents the success and problem responses', async () => {
      const doc = await load();
      const v1 = doc.paths['/api/v1/contacts/messages']?.get?.responses ?? {};
      expect(Object.keys(v1)).toEqual(expect.arrayContaining(['200', '400', '401', '410']));
      const messages = doc.paths['/messages']?.get?.responses ?? {};
      expect(Object.keys(messages)).toEqual(expect.arrayContaining(['200', '400', '401']));
      expect(Object.keys(messages)).not.toContain('410');
      expect(Object.keys(doc.paths['/admin/v1/accounts']?.post?.responses ?? {})).toContain('201');
      expect(doc.paths['/admin/v1/accounts']?.post?.requestBody).toBeDefined();
    });

    it('marks the headers that are always sent as required', async () => {
      const doc = (await load()) as unknown as Document;
      for (const { path, method, operation } of operationsOf(doc)) {
        for (const [status, response] of Object.entries(operation.responses)) {
          const where = `${method} ${path} ${status}`;
          const required = Object.entries(response.headers ?? {})
            .filter(([, h]) => h.required === true)
            .map(([name]) => name);
          const expected = ['X-Request-Id'];
          if (path === '/api/v1/contacts/messages') expected.push('Deprecation', 'Sunset', 'Link');
          if (status === '405') expected.push('Allow');
          // /dlr and the intake adapters take their credentials as query parameters (the spec's key and secret, a
          // route's token) and answer in their own shapes: no HTTP authentication scheme is there to challenge.
          if (status === '401' && path !== '/dlr' && !path.startsWith('/intake/')) {
            expected.push('WWW-Authenticate');
          }
          // /readyz's 503 is a probe's answer ({"status":"unavailable"}), not a problem asking to retry.
          if (status === '429' || (status === '503' && path !== '/readyz')) expected.push('Retry-After');
          expect(required.sort(), where).toStrictEqual(expected.sort());
          // A header object carries `required`, its schema does not.
          for (const header of Object.values(response.headers ?? {})) {
            expect(header.schema, where).not.toHaveProperty('required');
          }
        }
      }
    });

    it('states the formats of CONTRACT §1 on parameters and bodies', async () => {
      const doc = (await load()) as unknown as Document;
      const parameter = (path: string, method: string, name: string) => {
        const found = doc.paths[path]?.[method]?.parameters?.find((p) => p.name === name);
        if (!found) throw new Error(`${method} ${path} has no ${name}`);
        return found.schema;
      };
      const matches = (schema: Record<string, unknown>, value: string) =>
        new RegExp(String(schema.pattern), 'u').test(value);
      const messageid = parameter('/dlr', 'get', 'messageid');
      expect(matches(messageid, 'demo-sms-0001')).toBe(true);
      expect(matches(messageid, 'a b')).toBe(false);
      expect(matches(messageid, 'x'.repeat(65))).toBe(false);
      for (const path of ['/messages', '/api/v1/contacts/messages']) {
        const channel = parameter(path, 'get', 'channel');
        for (const ok of ['SMS', 'sms', 'WhatsApp', 'rbm']) expect(matches(channel, ok), ok).toBe(true);
        for (const bad of ['FAX', 'SMSX', '']) expect(matches(channel, bad), bad).toBe(false);
        const ids = parameter(path, 'get', 'messageIds');
        expect(matches(ids, 'm-1, m-2,,m-3')).toBe(true);
        expect(matches(ids, 'm 1')).toBe(false);
        expect(matches(ids, Array.from({ length: 21 }, (_, i) => `m${i}`).join(','))).toBe(false);
        expect(parameter(path, 'get', 'contactId')).toMatchObject({ format: 'uuid' });
        expect(parameter(path, 'get', 'cursor')).toMatchObject({ minLength: 1 });
      }
      expect(parameter('/messages', 'get', 'campaignId')).toHaveProperty('pattern');
      expect(parameter('/receipts', 'get', 'after')).toMatchObject({ minLength: 1 });
      const deliveries = '/admin/v1/accounts/{id}/deliveries';
      expect(parameter(deliveries, 'get', 'cursor')).toMatchObject({ minLength: 1 });
      expect(parameter(deliveries, 'get', 'state')).toMatchObject({
        enum: ['pending', 'delivered', 'dead', 'superseded'],
      });
      // The account id is a UUID in the document, and a malformed one is documented as the 404 it gets.
      for (const { path, method, operation } of operationsOf(doc).filter((o) => o.path.includes('{id}'))) {
        expect(parameter(path, method, 'id'), `${method} ${path}`).toMatchObject({ format: 'uuid' });
        expect(Object.keys(operation.responses), `${method} ${path}`).toContain('404');
      }
      const schema = (name: string) => resolve(doc, { $ref: `#/components/schemas/${name}` });
      const property = (name: string, field: string) =>
        (schema(name).properties as Record<string, Record<string, unknown>>)[field] ?? {};
      expect(property('MessageItem', 'id')).toHaveProperty('pattern');
      expect(property('MessageItem', 'contactId')).toMatchObject({ format: 'uuid' });
      expect(property('MessageItem', 'createdAt')).toMatchObject({ format: 'date-time' });
      expect(property('ReceiptItem', 'messageId')).toHaveProperty('pattern');
      expect(property('ReceiptItem', 'to')).toMatchObject({ pattern: '^[1-9][0-9]{5,14}$' });
      expect(property('ReceiptItem', 'network')).toMatchObject({ pattern: '^[0-9]{5,6}$' });
      expect(JSON.stringify(property('ReceiptItem', 'drErrcode'))).toContain('"enum"');
      const callbackUrl = JSON.stringify(property('AccountCreate', 'callbackUrl'));
      expect(callbackUrl).toContain('"format":"uri"');
      expect(callbackUrl).toContain('"pattern":"^[Hh][Tt][Tt][Pp][Ss]?://"');
      // Document-only constraints leave no trace of how they were declared.
      expect(JSON.stringify(doc)).not.toContain('x-documented');
    });

    it('still validates as the contract says, not by the documented constraints', async () => {
      const acct = await h().createAccount();
      const auth = { authorization: basic(acct.key, acct.secret) };
      // A malformed account id is an account that does not exist.
      expect((await h().admin('GET', '/admin/v1/accounts/not-a-uuid')).statusCode).toBe(404);
      expect((await h().admin('POST', '/admin/v1/accounts/not-a-uuid/secret')).statusCode).toBe(404);
      expect(
        (await h().admin('GET', `/admin/v1/accounts/${acct.id}/deliveries/not-an-event`)).statusCode,
      ).toBe(404);
      // /dlr answers the spec's code 3, in its own shape.
      const dlr = await h().inject(`/dlr?key=${acct.key}&secret=${acct.secret}&messageid=a%20b`);
      expect({ status: dlr.statusCode, body: dlr.json() }).toStrictEqual({
        status: 400,
        body: { code: 3, descr: 'Invalid parameters' },
      });
      // Channels in any case; a callbackUrl the URL parser reads, stored normalized.
      const page = await h().inject({
        url: '/messages?channel=sms&channelUserId=447700900123',
        headers: auth,
      });
      expect(page.statusCode).toBe(200);
      const patched = await h().admin('PATCH', `/admin/v1/accounts/${acct.id}`, {
        callbackUrl: 'HTTPS://Hooks.Example.com/dlr',
      });
      expect(patched.json()).toMatchObject({ callbackUrl: 'https://hooks.example.com/dlr' });
    });

    it('tells, in the /dlr description, that HTTP Basic is not read there', async () => {
      const doc = (await load()) as unknown as {
        paths: Record<string, Record<string, { description?: string }>>;
      };
      const description = doc.paths['/dlr']?.get?.description ?? '';
      expect(description).toMatch(/curl -u/);
      expect(description).toMatch(/code 2/);
      // …while the wire keeps the spec's exact body.
      const acct = await h().createAccount();
      const res = await h().inject({
        url: '/dlr?messageid=m-1',
        headers: { authorization: basic(acct.key, acct.secret) },
      });
      expect(res.json()).toStrictEqual({ code: 2, descr: 'Missing parameters' });
    });

    it('does not list itself among the routes', async () => {
      expect((await load()).paths['/openapi.json']).toBeUndefined();
    });
  });

  describe('with the operator API off', () => {
    const h = useHarness(engine, { WAYBILL_ADMIN_TOKEN: '' });

    it('lists only the public routes', async () => {
      const doc = (await h().inject('/openapi.json')).json() as OpenApiDocument;
      expect(Object.keys(doc.paths).sort()).toStrictEqual([...new Set(PUBLIC.map(([, p]) => p))].sort());
    });
  });
});
