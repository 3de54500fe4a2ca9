/**
 * CORS is off unless WAYBILL_CORS_ORIGINS lists origins; then pages of exactly those origins may call the
 * read-only query endpoints the SDK uses (and read their answers, errors included), and nothing else.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { engines } from '../support/engines.js';
import { ADMIN_TOKEN, basic, type CreatedAccount, useHarness } from '../support/http.js';

const sqlite = engines()[0];
if (!sqlite) throw new Error('no SQLite engine');

const APP = 'https://app.example';
const preflight = (url: string, origin: string) => ({
  method: 'OPTIONS' as const,
  url,
  headers: {
    origin,
    'access-control-request-method': 'GET',
    'access-control-request-headers': 'authorization',
  },
});

describe('CORS', () => {
  describe('by default', () => {
    const h = useHarness(sqlite);

    it('answers a preflight like any other method (405) and grants no origin', async () => {
      const res = await h().inject(preflight('/messages', APP));
      expect(res.statusCode).toBe(405);
      expect(res.headers['access-control-allow-origin']).toBeUndefined();
      const get = await h().inject({ url: '/messages', headers: { origin: APP } });
      expect(get.headers['access-control-allow-origin']).toBeUndefined();
    });
  });

  describe('with WAYBILL_CORS_ORIGINS', () => {
    const h = useHarness(sqlite, { WAYBILL_CORS_ORIGINS: `${APP}, http://localhost:5173` });
    let acct: CreatedAccount;
    beforeEach(async () => {
      acct = await h().createAccount();
    });

    it.each(['/dlr', '/messages', '/receipts', '/api/v1/contacts/messages'])(
      'answers the preflight of %s from a listed origin',
      async (path) => {
        const res = await h().inject(preflight(path, APP));
        expect(res.statusCode).toBe(204);
        expect(res.body).toBe('');
        expect(res.headers).toMatchObject({
          'access-control-allow-origin': APP,
          'access-control-allow-methods': 'GET, HEAD',
          'access-control-max-age': '600',
        });
        expect(String(res.headers['access-control-allow-headers']).toLowerCase()).toContain('authorization');
        expect(res.headers['access-control-allow-credentials']).toBeUndefined();
        expect(String(res.headers.vary)).toContain('Origin');
      },
    );

    it('lets a listed origin read answers and errors, with the headers the SDK reads', async () => {
      const ok = await h().inject({
        url: '/messages?messageIds=m-1',
        headers: { origin: 'http://localhost:5173', authorization: basic(acct.key, acct.secret) },
      });
      expect(ok.statusCode).toBe(200);
      expect(ok.headers['access-control-allow-origin']).toBe('http://localhost:5173');
      const exposed = String(ok.headers['access-control-expose-headers']);
      for (const name of ['X-Request-Id', 'RateLimit', 'Retry-After']) expect(exposed).toContain(name);
      const denied = await h().inject({
        url: '/messages?messageIds=m-1',
        headers: { origin: APP, authorization: basic(acct.key, 'WRONGSEC') },
      });
      expect(denied.statusCode).toBe(401);
      expect(denied.headers['access-control-allow-origin']).toBe(APP);
    });

    it('grants nothing to an origin that is not listed', async () => {
      for (const origin of [
        'https://evil.example',
        'https://app.example.evil',
        'null',
        'https://APP.example',
      ]) {
        const pre = await h().inject(preflight('/messages', origin));
        expect(pre.statusCode, origin).toBe(405);
        expect(pre.headers['access-control-allow-origin'], origin).toBeUndefined();
        const get = await h().inject({ url: '/dlr', headers: { origin } });
        expect(get.headers['access-control-allow-origin'], origin).toBeUndefined();
        expect(String(get.headers.vary), origin).toContain('Origin');
      }
    });

    it('never opens the operator API, /metrics or /openapi.json to a browser', async () => {
      for (const url of [
        '/admin/v1/accounts',
        `/admin/v1/accounts/${acct.id}`,
        '/metrics',
        '/openapi.json',
      ]) {
        const pre = await h().inject(preflight(url, APP));
        expect(pre.headers['access-control-allow-origin'], url).toBeUndefined();
        const get = await h().inject({
          url,
          headers: { origin: APP, authorization: `Bearer ${ADMIN_TOKEN}` },
        });
        expect(get.headers['access-control-allow-origin'], url).toBeUndefined();
      }
    });
  });
});
