/**
 * `callbackUrl` is stored and shown in its normalized form, the WHATWG URL serialization the relay connects to
 * (CONTRACT §9), never as typed: what an operator reads back is what will be called.
 */
import { describe, expect, it } from 'vitest';
import { engines } from '../support/engines.js';
import { useHarness } from '../support/http.js';
import { expectProblem } from '../support/problems.js';

const NORMALIZED: [string, string][] = [
  ['HTTPS://Hooks.Example.COM:443/a/./b/../dlr', 'https://hooks.example.com/a/dlr'],
  ['https:\\\\hooks.example.com\\waybill\\dlr', 'https://hooks.example.com/waybill/dlr'],
  ['http://hooks.example.com:80', 'http://hooks.example.com/'],
  ['https://hooks.example.com/a b?q=ü', 'https://hooks.example.com/a%20b?q=%C3%BC'],
  ['https://bücher.example/dlr', 'https://xn--bcher-kva.example/dlr'],
  // Empty credentials serialize away: nothing is left that could leak, so the URL is accepted without them.
  ['http://:@127.0.0.1', 'http://127.0.0.1/'],
  ['http://@hooks.example.com/dlr', 'http://hooks.example.com/dlr'],
];

describe.each(engines())('$name callbackUrl normalization', (engine) => {
  const h = useHarness(engine);

  it.each(NORMALIZED)('stores %s as %s on create, and shows it so', async (typed, normalized) => {
    const created = await h().createAccount({ callbackUrl: typed });
    expect(created.callbackUrl).toBe(normalized);
    const read = await h().admin('GET', `/admin/v1/accounts/${created.id}`);
    expect(read.json()).toMatchObject({ callbackUrl: normalized });
  });

  it.each(NORMALIZED)('stores %s as %s on update', async (typed, normalized) => {
    const created = await h().createAccount();
    const res = await h().admin('PATCH', `/admin/v1/accounts/${created.id}`, { callbackUrl: typed });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ callbackUrl: normalized });
    const read = await h().admin('GET', `/admin/v1/accounts/${created.id}`);
    expect(read.json()).toMatchObject({ callbackUrl: normalized });
  });

  it.each([
    ['a user', 'https://user@hooks.example.com/dlr'],
    ['a password', 'https://:pw@hooks.example.com/dlr'],
    ['both', 'https://user:pw@hooks.example.com/dlr'],
  ])('still refuses credentials: %s', async (_what, callbackUrl) => {
    const res = await h().admin('POST', '/admin/v1/accounts', { name: 'Acme', callbackUrl });
    const body = expectProblem(res, 400, 'invalid_request');
    expect(body).toMatchObject({ param: 'callbackUrl' });
    expect(body.detail).toMatch(/credentials/);
    expect(res.body).not.toContain('pw@');
  });

  it('refuses a URL longer than 2048 characters once normalized', async () => {
    // 1526 characters as typed, 2526 once each space is percent-encoded.
    const callbackUrl = `https://hooks.example.com/${'a b'.repeat(500)}`;
    const res = await h().admin('POST', '/admin/v1/accounts', { name: 'Acme', callbackUrl });
    expect(expectProblem(res, 400, 'invalid_request')).toMatchObject({ param: 'callbackUrl' });
  });
});
