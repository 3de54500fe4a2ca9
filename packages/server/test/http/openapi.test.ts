import { describe, expect, it } from 'vitest';
import { engines } from '../support/engines.js';
import { useHarness } from '../support/http.js';

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
