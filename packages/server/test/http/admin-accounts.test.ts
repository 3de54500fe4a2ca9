import { describe, expect, it } from 'vitest';
import { engines } from '../support/engines.js';
import { ADMIN_TOKEN, basic, START, useHarness } from '../support/http.js';
import { expectProblem } from '../support/problems.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ACCOUNT_FIELDS = [
  'balance',
  'callbackEnabled',
  'callbackUrl',
  'createdAt',
  'creditLimit',
  'dlrQueryEnabled',
  'id',
  'ipWhitelist',
  'key',
  'name',
];
const MISSING = '0190a5d4-7e2b-7c3d-8e4f-5a6b7c8d9e0f';

const ADMIN_PATHS: ['GET' | 'POST' | 'PATCH' | 'DELETE', string][] = [
  ['POST', '/admin/v1/accounts'],
  ['GET', `/admin/v1/accounts/${MISSING}`],
  ['PATCH', `/admin/v1/accounts/${MISSING}`],
  ['DELETE', `/admin/v1/accounts/${MISSING}`],
  ['POST', `/admin/v1/accounts/${MISSING}/secret`],
  ['POST', `/admin/v1/accounts/${MISSING}/messages`],
  ['POST', `/admin/v1/accounts/${MISSING}/receipts`],
  ['GET', '/admin/v1/accounts'],
  ['GET', '/admin'],
  ['GET', '/admin/v1'],
  ['GET', '/admin/anything/else'],
];

describe.each(engines())('$name operator API: accounts', (engine) => {
  describe('without WAYBILL_ADMIN_TOKEN', () => {
    const h = useHarness(engine, { WAYBILL_ADMIN_TOKEN: '' });

    it.each(ADMIN_PATHS)('answers %s %s with 404', async (method, url) => {
      for (const authorization of [undefined, `Bearer ${ADMIN_TOKEN}`, 'Bearer ']) {
        const res = await h().inject({
          method,
          url,
          ...(authorization ? { headers: { authorization } } : {}),
          ...(method === 'GET' || method === 'DELETE' ? {} : { payload: { name: 'Acme' } }),
        });
        expectProblem(res, 404, 'not_found');
      }
    });
  });

  describe('with WAYBILL_ADMIN_TOKEN', () => {
    const h = useHarness(engine);

    describe('the bearer token', () => {
      const wrong: [string, Record<string, string>][] = [
        ['no Authorization', {}],
        ['a wrong token', { authorization: 'Bearer not-the-token' }],
        ['the token with a suffix', { authorization: `Bearer ${ADMIN_TOKEN}x` }],
        ['a token prefix', { authorization: `Bearer ${ADMIN_TOKEN.slice(0, -1)}` }],
        ['an empty bearer', { authorization: 'Bearer ' }],
        [
          'the token as Basic',
          { authorization: `Basic ${Buffer.from(`admin:${ADMIN_TOKEN}`).toString('base64')}` },
        ],
        ['the bare token', { authorization: ADMIN_TOKEN }],
      ];
      it.each(wrong)('answers 401 to %s', async (_name, headers) => {
        for (const [method, url] of ADMIN_PATHS.slice(0, 6)) {
          const res = await h().inject({
            method,
            url,
            headers,
            ...(method === 'GET' || method === 'DELETE' ? {} : { payload: { name: 'Acme' } }),
          });
          const body = expectProblem(res, 401, 'unauthorized');
          expect(JSON.stringify(body)).not.toContain(ADMIN_TOKEN);
        }
      });

      it('accepts the scheme in any case', async () => {
        const res = await h().inject({
          method: 'POST',
          url: '/admin/v1/accounts',
          headers: { authorization: `bearer ${ADMIN_TOKEN}` },
          payload: { name: 'Acme' },
        });
        expect(res.statusCode).toBe(201);
      });

      it('never writes the token into the log', async () => {
        await h().createAccount();
        await h().inject({ url: '/admin/v1/accounts', headers: { authorization: 'Bearer guess-123' } });
        expect(h().logs.join('\n')).not.toContain(ADMIN_TOKEN);
        expect(h().logs.join('\n')).not.toContain('guess-123');
      });
    });

    describe('POST /admin/v1/accounts', () => {
      it('creates an account with fresh credentials and the defaults', async () => {
        h().advance(123);
        const res = await h().admin('POST', '/admin/v1/accounts', { name: 'Acme' });
        expect(res.statusCode, res.body).toBe(201);
        const body = res.json() as Record<string, unknown>;
        expect(Object.keys(body).sort()).toStrictEqual(
          [...ACCOUNT_FIELDS, 'callbackSecret', 'secret'].sort(),
        );
        expect(body).toStrictEqual({
          id: expect.stringMatching(UUID),
          name: 'Acme',
          key: expect.stringMatching(/^[A-Za-z0-9]{8}$/),
          secret: expect.stringMatching(/^[A-Za-z0-9]{8}$/),
          callbackSecret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
          ipWhitelist: [],
          dlrQueryEnabled: true,
          balance: 0,
          creditLimit: 0,
          callbackUrl: null,
          callbackEnabled: true,
          createdAt: new Date(START + 123).toISOString(),
        });
        expect(body.createdAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
        expect(Buffer.from((body.callbackSecret as string).slice(6), 'base64')).toHaveLength(32);
      });

      it('takes every settable field', async () => {
        const res = await h().admin('POST', '/admin/v1/accounts', {
          name: 'Full',
          ipWhitelist: ['10.0.0.0/8', '192.0.2.7', '2001:db8::/32', '::1'],
          dlrQueryEnabled: false,
          balance: 12.5,
          creditLimit: 100,
          callbackUrl: 'https://example.com/dlr',
        });
        expect(res.statusCode, res.body).toBe(201);
        expect(res.json()).toMatchObject({
          name: 'Full',
          ipWhitelist: ['10.0.0.0/8', '192.0.2.7', '2001:db8::/32', '::1'],
          dlrQueryEnabled: false,
          balance: 12.5,
          creditLimit: 100,
          callbackUrl: 'https://example.com/dlr',
        });
      });

      it('gives every account its own key, secret and callback secret', async () => {
        const a = await h().createAccount();
        const b = await h().createAccount();
        expect(a.id).not.toBe(b.id);
        expect(a.key).not.toBe(b.key);
        expect(a.secret).not.toBe(b.secret);
        expect(a.callbackSecret).not.toBe(b.callbackSecret);
      });

      const invalid: [string, unknown][] = [
        ['no name', {}],
        ['an empty name', { name: '' }],
        ['a null name', { name: null }],
        ['an unknown field', { name: 'Acme', colour: 'red' }],
        ['a key of its own', { name: 'Acme', key: 'ABCDEFGH' }],
        ['a secret of its own', { name: 'Acme', secret: 'ABCDEFGH' }],
        ['a whitelist range with host bits set', { name: 'Acme', ipWhitelist: ['10.0.0.1/8'] }],
        ['an IPv6 range with host bits set', { name: 'Acme', ipWhitelist: ['2001:db8::1/32'] }],
        ['a garbage whitelist entry', { name: 'Acme', ipWhitelist: ['not-an-ip'] }],
        ['an out-of-range prefix', { name: 'Acme', ipWhitelist: ['10.0.0.0/33'] }],
        ['a null whitelist', { name: 'Acme', ipWhitelist: null }],
        ['a string dlrQueryEnabled', { name: 'Acme', dlrQueryEnabled: 'yes' }],
        ['a string balance', { name: 'Acme', balance: '10' }],
        ['a null balance', { name: 'Acme', balance: null }],
        ['a callbackUrl that is not a URL', { name: 'Acme', callbackUrl: 'example.com/dlr' }],
        ['a callbackUrl of another scheme', { name: 'Acme', callbackUrl: 'ftp://example.com/dlr' }],
        ['an array body', [{ name: 'Acme' }]],
      ];
      it.each(invalid)('refuses %s with 400', async (_name, body) => {
        expectProblem(await h().admin('POST', '/admin/v1/accounts', body), 400, 'invalid_request');
      });

      it('refuses a body that is not JSON', async () => {
        const notJson = await h().inject({
          method: 'POST',
          url: '/admin/v1/accounts',
          headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
          payload: '{"name": "Acme",',
        });
        expectProblem(notJson, 400, 'invalid_request');
        const text = await h().inject({
          method: 'POST',
          url: '/admin/v1/accounts',
          headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'text/plain' },
          payload: 'name=Acme',
        });
        expect(text.statusCode).toBeGreaterThanOrEqual(400);
        expect(text.statusCode).toBeLessThan(500);
        expect(text.headers['content-type']).toMatch(/^application\/problem\+json/);
        const empty = await h().inject({
          method: 'POST',
          url: '/admin/v1/accounts',
          headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        });
        expectProblem(empty, 400, 'invalid_request');
      });
    });

    describe('GET /admin/v1/accounts/{id}', () => {
      it('shows the account without its secrets', async () => {
        const created = await h().createAccount({ ipWhitelist: ['127.0.0.1'] });
        const res = await h().admin('GET', `/admin/v1/accounts/${created.id}`);
        expect(res.statusCode).toBe(200);
        const body = res.json() as Record<string, unknown>;
        expect(Object.keys(body).sort()).toStrictEqual(ACCOUNT_FIELDS);
        const { secret: _s, callbackSecret: _c, ...shown } = created;
        expect(body).toStrictEqual(shown);
        expect(res.body).not.toContain(created.secret);
        expect(res.body).not.toContain(created.callbackSecret);
      });

      it('matches the id case-insensitively', async () => {
        const created = await h().createAccount();
        const res = await h().admin('GET', `/admin/v1/accounts/${created.id.toUpperCase()}`);
        expect(res.statusCode).toBe(200);
        expect(res.json()).toMatchObject({ id: created.id });
      });

      it.each([MISSING, 'not-a-uuid', '1'])('answers 404 to an unknown account %s', async (id) => {
        expectProblem(await h().admin('GET', `/admin/v1/accounts/${id}`), 404, 'not_found');
        expectProblem(await h().admin('PATCH', `/admin/v1/accounts/${id}`, { name: 'x' }), 404, 'not_found');
        expectProblem(await h().admin('POST', `/admin/v1/accounts/${id}/secret`), 404, 'not_found');
      });
    });

    describe('PATCH /admin/v1/accounts/{id}', () => {
      it('changes the given fields and keeps the others', async () => {
        const created = await h().createAccount({ callbackUrl: 'https://example.com/a' });
        const res = await h().admin('PATCH', `/admin/v1/accounts/${created.id}`, {
          name: 'Renamed',
          balance: -5,
          creditLimit: 10,
        });
        expect(res.statusCode, res.body).toBe(200);
        const { secret: _s, callbackSecret: _c, ...before } = created;
        const expected = { ...before, name: 'Renamed', balance: -5, creditLimit: 10 };
        expect(res.json()).toStrictEqual(expected);
        expect((await h().admin('GET', `/admin/v1/accounts/${created.id}`)).json()).toStrictEqual(expected);

        const more = await h().admin('PATCH', `/admin/v1/accounts/${created.id}`, {
          ipWhitelist: ['198.51.100.0/24'],
          dlrQueryEnabled: false,
          callbackUrl: 'http://hooks.example.net/x',
        });
        expect(more.json()).toStrictEqual({
          ...expected,
          ipWhitelist: ['198.51.100.0/24'],
          dlrQueryEnabled: false,
          callbackUrl: 'http://hooks.example.net/x',
        });
      });

      it('keeps everything on an empty patch', async () => {
        const created = await h().createAccount({ callbackUrl: 'https://example.com/a', balance: 3 });
        const res = await h().admin('PATCH', `/admin/v1/accounts/${created.id}`, {});
        expect(res.statusCode).toBe(200);
        expect(res.json()).toMatchObject({ callbackUrl: 'https://example.com/a', balance: 3, name: 'Acme' });
      });

      it('clears callbackUrl with null', async () => {
        const created = await h().createAccount({ callbackUrl: 'https://example.com/a' });
        const res = await h().admin('PATCH', `/admin/v1/accounts/${created.id}`, { callbackUrl: null });
        expect(res.statusCode, res.body).toBe(200);
        expect(res.json()).toMatchObject({ callbackUrl: null });
        expect((await h().admin('GET', `/admin/v1/accounts/${created.id}`)).json()).toMatchObject({
          callbackUrl: null,
        });
      });

      it('empties the whitelist with []', async () => {
        const created = await h().createAccount({ ipWhitelist: ['10.0.0.0/8'] });
        const res = await h().admin('PATCH', `/admin/v1/accounts/${created.id}`, { ipWhitelist: [] });
        expect(res.json()).toMatchObject({ ipWhitelist: [] });
      });

      const invalid: [string, unknown][] = [
        ['a null name', { name: null }],
        ['a null whitelist', { ipWhitelist: null }],
        ['a null dlrQueryEnabled', { dlrQueryEnabled: null }],
        ['a null balance', { balance: null }],
        ['a null creditLimit', { creditLimit: null }],
        ['an unknown field', { nmae: 'typo' }],
        ['the key', { key: 'ABCDEFGH' }],
        ['the id', { id: MISSING }],
        ['a whitelist range with host bits set', { ipWhitelist: ['192.168.1.1/24'] }],
        ['a garbage whitelist entry', { ipWhitelist: ['10.0.0.0/8', '300.1.1.1'] }],
        ['a bad callbackUrl', { callbackUrl: 'not a url' }],
        ['an empty name', { name: '' }],
      ];
      it.each(invalid)('refuses %s with 400 and changes nothing', async (_name, body) => {
        const created = await h().createAccount({
          callbackUrl: 'https://example.com/a',
          ipWhitelist: ['10.0.0.0/8'],
        });
        expectProblem(
          await h().admin('PATCH', `/admin/v1/accounts/${created.id}`, body),
          400,
          'invalid_request',
        );
        const { secret: _s, callbackSecret: _c, ...before } = created;
        expect((await h().admin('GET', `/admin/v1/accounts/${created.id}`)).json()).toStrictEqual(before);
      });
    });

    describe('POST /admin/v1/accounts/{id}/secret', () => {
      it('issues a new secret; the old one stops working', async () => {
        const created = await h().createAccount();
        const query = (secret: string) =>
          h().inject({
            url: '/messages?messageIds=x',
            headers: { authorization: basic(created.key, secret) },
          });
        expect((await query(created.secret)).statusCode).toBe(200);

        const res = await h().admin('POST', `/admin/v1/accounts/${created.id}/secret`);
        expect(res.statusCode, res.body).toBe(200);
        const body = res.json() as Record<string, unknown>;
        expect(Object.keys(body).sort()).toStrictEqual([...ACCOUNT_FIELDS, 'secret'].sort());
        const { secret: _s, callbackSecret: _c, ...account } = created;
        expect(body).toMatchObject(account);
        const secret = body.secret as string;
        expect(secret).toMatch(/^[A-Za-z0-9]{8}$/);
        expect(secret).not.toBe(created.secret);

        expect((await query(secret)).statusCode).toBe(200);
        expect((await query(created.secret)).statusCode).toBe(401);
        const dlr = await h().inject(`/dlr?key=${created.key}&secret=${created.secret}&messageid=x`);
        expect(dlr.json()).toStrictEqual({ code: 4, descr: 'Invalid credentials' });
        expect(
          (await h().inject(`/dlr?key=${created.key}&secret=${secret}&messageid=x`)).json(),
        ).toStrictEqual([]);
      });

      it('leaves the other accounts alone', async () => {
        const a = await h().createAccount();
        const b = await h().createAccount();
        await h().admin('POST', `/admin/v1/accounts/${a.id}/secret`);
        const res = await h().inject({
          url: '/messages?messageIds=x',
          headers: { authorization: basic(b.key, b.secret) },
        });
        expect(res.statusCode).toBe(200);
      });
    });

    describe('DELETE /admin/v1/accounts/{id}', () => {
      it('deletes the account and its data; its key stops working at once', async () => {
        const gone = await h().createAccount({ callbackUrl: 'https://hooks.example/dlr' });
        const kept = await h().createAccount();
        for (const account of [gone, kept]) {
          expect(
            (await h().ingest(account.id, [{ id: 'm-1', channel: 'SMS', channelUserId: '447700900001' }]))
              .statusCode,
          ).toBe(200);
          const receipts = [{ messageId: 'm-1', drStatuscode: 'delivered' }];
          expect((await h().receipts(account.id, receipts)).statusCode).toBe(200);
        }
        const dlr = (account: { key: string; secret: string }) =>
          h().inject(`/dlr?key=${account.key}&secret=${account.secret}&messageid=m-1`);
        expect((await dlr(gone)).json()).toMatchObject([{ drStatuscode: 'delivered' }]);

        const res = await h().admin('DELETE', `/admin/v1/accounts/${gone.id.toUpperCase()}`);
        expect(res.statusCode, res.body).toBe(204);
        expect(res.body).toBe('');
        expectProblem(await h().admin('GET', `/admin/v1/accounts/${gone.id}`), 404, 'not_found');
        expect((await dlr(gone)).json()).toStrictEqual({ code: 4, descr: 'Invalid credentials' });
        expectProblem(await h().admin('DELETE', `/admin/v1/accounts/${gone.id}`), 404, 'not_found');
        expect(await h().store.findDlr(gone.id, 'm-1')).toStrictEqual([]);
        expect(await h().store.listDeliveries(gone.id, { limit: 10 })).toStrictEqual([]);

        expect((await dlr(kept)).json()).toMatchObject([{ drStatuscode: 'delivered' }]);
        expect((await h().admin('GET', `/admin/v1/accounts/${kept.id}`)).statusCode).toBe(200);
      });

      it('answers 404 for an unknown or malformed id', async () => {
        expectProblem(await h().admin('DELETE', `/admin/v1/accounts/${MISSING}`), 404, 'not_found');
        expectProblem(await h().admin('DELETE', '/admin/v1/accounts/not-a-uuid'), 404, 'not_found');
      });
    });

    describe('methods', () => {
      const wrongMethods: [string, string, string][] = [
        ['GET', '/admin/v1/accounts', 'POST'],
        ['DELETE', '/admin/v1/accounts', 'POST'],
        ['PUT', `/admin/v1/accounts/${MISSING}`, 'DELETE, GET, HEAD, PATCH'],
        ['POST', `/admin/v1/accounts/${MISSING}`, 'DELETE, GET, HEAD, PATCH'],
        ['GET', `/admin/v1/accounts/${MISSING}/secret`, 'POST'],
        ['GET', `/admin/v1/accounts/${MISSING}/messages`, 'POST'],
        ['PUT', `/admin/v1/accounts/${MISSING}/receipts`, 'POST'],
      ];
      it.each(wrongMethods)('answers %s %s with 405 and Allow: %s', async (method, url, allow) => {
        const res = await h().inject({
          method: method as 'GET',
          url,
          headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
        });
        expectProblem(res, 405, 'method_not_allowed');
        const allowed = String(res.headers.allow).split(', ');
        expect(allowed.sort()).toStrictEqual(allow.split(', ').sort());
      });
    });
  });
});
