import { createHash } from 'node:crypto';
import { createConnection } from 'node:net';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { composeService } from '../../src/service.js';
import { engines } from '../support/engines.js';
import { ADMIN_TOKEN, PEPPER, START } from '../support/http.js';
import { Browser, type Page, useListening } from './browser.js';

const CSP = "default-src 'self'; frame-ancestors 'none'";
const wrongSecret = (secret: string) => (secret === 'Wrong000' ? 'Wrong001' : 'Wrong000');

function expectConsoleHeaders(page: Page): void {
  expect(page.headers.get('content-security-policy')).toBe(CSP);
  expect(page.headers.get('referrer-policy')).toBe('same-origin');
  expect(page.headers.get('cache-control')).toBe('no-store');
}

/** The head of the answer to raw request bytes (for requests fetch cannot make, such as one without Host). */
function rawHead(base: string, request: string): Promise<string> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: hostname, port: Number(port) });
    let answer = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      answer += chunk;
    });
    socket.on('end', () => resolve(answer.split('\r\n\r\n')[0] ?? ''));
    socket.on('error', reject);
    socket.write(request);
  });
}

const sessionCookie = (page: Page) => page.setCookies.find((line) => line.startsWith('waybill_session='));

describe.each(engines())('$name console: sign-in, sessions, CSRF', (engine) => {
  const served = useListening(engine);

  it('carries CSP, Referrer-Policy and Cache-Control on every answer: pages, assets, 404s, refusals', async () => {
    const { base } = served();
    const browser = new Browser(base);
    const signIn = await browser.get('/console/sign-in');
    expect(signIn.status).toBe(200);
    expect(signIn.headers.get('content-type')).toMatch(/^text\/html/);
    expect(signIn.text).not.toMatch(/<script>|<style>|style="|onclick=/i);
    for (const page of [
      signIn,
      await browser.get('/console'),
      await browser.get('/console/assets/console.css'),
      await browser.get('/console/assets/console.js'),
      await browser.get('/console/no/such/page'),
      await browser.get('/console/assets/nothing.css'),
      await browser.post('/console/sign-out', {}, { csrf: null }),
    ]) {
      expectConsoleHeaders(page);
    }
    expect((await browser.get('/console/no/such/page')).status).toBe(404);
    expect((await browser.get('/console/assets/console.css')).headers.get('content-type')).toMatch(
      /^text\/css/,
    );
  });

  it('carries them on the refusals made before the console is reached: an overlong request line, a bad URL, no Host', async () => {
    const { base } = served();
    const browser = new Browser(base);
    const overlong = await browser.get(`/console/messages?id=${'a'.repeat(9000)}`);
    expect(overlong.status).toBe(414);
    expectConsoleHeaders(overlong);
    const badUrl = await browser.get('/console/%zz');
    expect(badUrl.status).toBe(400);
    expectConsoleHeaders(badUrl);
    // HTTP/1.1 without Host: refused by the protocol hook, before the console's.
    const noHost = await rawHead(base, 'GET /console/sign-in HTTP/1.1\r\nConnection: close\r\n\r\n');
    expect(noHost).toMatch(/^HTTP\/1\.1 400 /);
    expect(noHost).toMatch(new RegExp(`\r\ncontent-security-policy: ${CSP}\r\n`, 'i'));
    expect(noHost).toMatch(/\r\nreferrer-policy: same-origin\r\n/i);
  });

  it('signs an account in with its key and secret: a session cookie of 256 bits, stored only hashed', async () => {
    const { h, base } = served();
    const account = await h.createAccount();
    const browser = new Browser(base);
    const signedIn = await browser.signIn(account.key, account.secret);
    expect(signedIn.status).toBe(303);
    const cookie = sessionCookie(signedIn);
    expect(cookie).toBeDefined();
    expect(cookie).toMatch(/; HttpOnly/i);
    expect(cookie).toMatch(/; SameSite=Lax/i);
    expect(cookie).toMatch(/; Path=\/console(;|$)/);
    expect(cookie).not.toMatch(/; Secure/i);
    const token = browser.cookies.get('waybill_session') ?? '';
    expect(Buffer.from(token, 'base64url')).toHaveLength(32);
    const digest = createHash('sha256').update(token).digest();
    expect(await h.store.findSession(digest, new Date(START))).toMatchObject({ accountId: account.id });
    expect(await h.store.findSession(Buffer.from(token), new Date(START))).toBeNull();
    const home = await browser.get(signedIn.location ?? '');
    expect(home.status).toBe(303);
    expect(home.location).toBe('/console/messages');
  });

  it('refuses a wrong secret with the page, and ten of them lock the key for the API too', async () => {
    const { h, base } = served();
    const account = await h.createAccount();
    const browser = new Browser(base);
    for (let i = 0; i < 10; i++) {
      const refused = await browser.signIn(account.key, wrongSecret(account.secret));
      expect(refused.status).toBe(401);
      expect(refused.text).toContain('Wrong key or secret.');
      expect(sessionCookie(refused)).toBeUndefined();
    }
    const locked = await browser.signIn(account.key, account.secret);
    expect(locked.status).toBe(429);
    expect(locked.text).toContain('locked');
    const dlr = await h.inject(`/dlr?key=${account.key}&secret=${account.secret}&messageid=m-1`);
    expect(dlr.statusCode).toBe(429);
  });

  it('shares the lockout the other way: wrong secrets on the API lock the console sign-in', async () => {
    const { h, base } = served();
    const account = await h.createAccount();
    for (let i = 0; i < 10; i++) {
      await h.inject(`/dlr?key=${account.key}&secret=${wrongSecret(account.secret)}&messageid=m-1`);
    }
    const page = await new Browser(base).signIn(account.key, account.secret);
    expect(page.status).toBe(429);
  });

  it('signs the operator in with the admin token, and refuses a wrong one', async () => {
    const { base } = served();
    const browser = new Browser(base);
    expect((await browser.signInOperator('not-the-token')).status).toBe(401);
    const signedIn = await browser.signInOperator(ADMIN_TOKEN);
    expect(signedIn.status).toBe(303);
    expect(sessionCookie(signedIn)).toMatch(/HttpOnly/i);
    const home = await browser.get('/console');
    expect(home.location).toBe('/console/operator/accounts');
  });

  it('refuses a POST without the CSRF token, with a wrong one, from another origin or without Origin', async () => {
    const { h, base } = served();
    const account = await h.createAccount();
    const browser = new Browser(base);
    await browser.signIn(account.key, account.secret);
    await browser.get('/console/sign-in'); // signed in: redirects, no token on it
    const token = browser.csrf;
    const attempts = [
      await browser.post('/console/sign-out', {}, { csrf: null }),
      await browser.post('/console/sign-out', {}, { csrf: 'x'.repeat(43) }),
      await browser.post('/console/sign-out', {}, { origin: 'https://evil.example' }),
      await browser.post('/console/sign-out', {}, { origin: null }),
    ];
    for (const refused of attempts) {
      expect(refused.status).toBe(403);
      expectConsoleHeaders(refused);
    }
    // The session survived every forged attempt.
    expect((await browser.get('/console')).location).toBe('/console/messages');
    expect(token).not.toBeNull();
  });

  it('refuses a sign-in form without its token or from another origin', async () => {
    const { h, base } = served();
    const account = await h.createAccount();
    const browser = new Browser(base);
    await browser.get('/console/sign-in');
    const creds = { key: account.key, secret: account.secret };
    expect((await browser.post('/console/sign-in', creds, { csrf: null })).status).toBe(403);
    expect((await browser.post('/console/sign-in', creds, { origin: 'http://evil.example' })).status).toBe(
      403,
    );
    // A token minted for another browser's sign-in cookie is worthless here.
    const other = new Browser(base);
    await other.get('/console/sign-in');
    expect((await browser.post('/console/sign-in', creds, { csrf: other.csrf })).status).toBe(403);
    expect((await browser.post('/console/sign-in', creds)).status).toBe(303);
  });

  it('ends the session on sign-out', async () => {
    const { h, base } = served();
    const account = await h.createAccount();
    const browser = new Browser(base);
    await browser.signIn(account.key, account.secret);
    const token = browser.cookies.get('waybill_session') ?? '';
    await browser.get('/console/messages');
    const out = await browser.post('/console/sign-out');
    expect(out.status).toBe(303);
    expect(out.location).toBe('/console/sign-in');
    expect(browser.cookies.has('waybill_session')).toBe(false);
    // The old cookie, replayed, names no session any more.
    browser.cookies.set('waybill_session', token);
    expect((await browser.get('/console')).location).toBe('/console/sign-in');
  });

  it('ends the account’s sessions when its secret is rotated through the API', async () => {
    const { h, base } = served();
    const account = await h.createAccount();
    const browser = new Browser(base);
    await browser.signIn(account.key, account.secret);
    expect((await browser.get('/console')).location).toBe('/console/messages');
    expect((await h.admin('POST', `/admin/v1/accounts/${account.id}/secret`)).statusCode).toBe(200);
    expect((await browser.get('/console')).location).toBe('/console/sign-in');
  });

  it('ends the account’s sessions when the account is deleted through the API', async () => {
    const { h, base } = served();
    const account = await h.createAccount();
    const other = await h.createAccount({ name: 'Other' });
    const browser = new Browser(base);
    const stays = new Browser(base);
    await browser.signIn(account.key, account.secret);
    await stays.signIn(other.key, other.secret);
    expect((await h.admin('DELETE', `/admin/v1/accounts/${account.id}`)).statusCode).toBe(204);
    expect((await browser.get('/console')).location).toBe('/console/sign-in');
    expect((await stays.get('/console')).location).toBe('/console/messages');
  });

  it('honours an operator session only while an admin token is set (a process started without one)', async () => {
    const { h, base } = served();
    const operator = new Browser(base);
    await operator.signInOperator(ADMIN_TOKEN);
    const cookie = `waybill_session=${operator.cookies.get('waybill_session') ?? ''}`;
    // Another process on the same database, started without WAYBILL_ADMIN_TOKEN: no operator console there.
    const without = await composeService({
      config: loadConfig({ DATABASE_URL: 'sqlite::memory:', WAYBILL_LOG_LEVEL: 'silent' }),
      store: h.store,
      pepper: PEPPER,
      clock: () => START,
    });
    try {
      const refused = await without.app.inject({ url: '/console/operator/accounts', headers: { cookie } });
      expect(refused.statusCode).toBe(303);
      expect(refused.headers.location).toBe('/console/sign-in');
      expect((await without.app.inject({ url: '/console', headers: { cookie } })).headers.location).toBe(
        '/console/sign-in',
      );
    } finally {
      await without.app.close();
    }
    // Where the token is set, the session still works.
    expect((await operator.get('/console/operator/accounts')).status).toBe(200);
  });

  it('ends an operator session when the admin token changes: a restart with another token refuses it', async () => {
    const { h, base } = served();
    const operator = new Browser(base);
    await operator.signInOperator(ADMIN_TOKEN);
    const token = operator.cookies.get('waybill_session') ?? '';
    const cookie = `waybill_session=${token}`;
    const restarted = (adminToken: string) =>
      composeService({
        config: loadConfig({
          DATABASE_URL: 'sqlite::memory:',
          WAYBILL_LOG_LEVEL: 'silent',
          WAYBILL_ADMIN_TOKEN: adminToken,
        }),
        store: h.store,
        pepper: PEPPER,
        clock: () => START,
      });
    // The same database after a restart with a new WAYBILL_ADMIN_TOKEN: the old token's session is refused.
    const changed = await restarted(`${ADMIN_TOKEN}-rotated`);
    try {
      const refused = await changed.app.inject({ url: '/console/operator/accounts', headers: { cookie } });
      expect(refused.statusCode).toBe(303);
      expect(refused.headers.location).toBe('/console/sign-in');
      expect((await changed.app.inject({ url: '/console', headers: { cookie } })).headers.location).toBe(
        '/console/sign-in',
      );
      expect((await changed.app.inject({ url: '/console/sign-in', headers: { cookie } })).statusCode).toBe(
        200,
      );
    } finally {
      await changed.app.close();
    }
    // A restart with the same token keeps it.
    const same = await restarted(ADMIN_TOKEN);
    try {
      const kept = await same.app.inject({ url: '/console/operator/accounts', headers: { cookie } });
      expect(kept.statusCode).toBe(200);
    } finally {
      await same.app.close();
    }
    expect((await operator.get('/console/operator/accounts')).status).toBe(200);
    // The row is found by an HMAC keyed with the admin token's fingerprint, not by the token's plain SHA-256.
    expect(
      await h.store.findSession(createHash('sha256').update(token).digest(), new Date(START)),
    ).toBeNull();
  });

  it('applies the IP whitelist at sign-in and for the whole session', async () => {
    const { h, base } = served();
    const outside = await h.createAccount({ ipWhitelist: ['192.0.2.0/24'] });
    const refused = await new Browser(base).signIn(outside.key, outside.secret);
    expect(refused.status).toBe(403);
    expect(refused.text).toContain('whitelist');
    const account = await h.createAccount({ ipWhitelist: ['127.0.0.1'] });
    const browser = new Browser(base);
    expect((await browser.signIn(account.key, account.secret)).status).toBe(303);
    expect((await browser.get('/console')).location).toBe('/console/messages');
    await h.admin('PATCH', `/admin/v1/accounts/${account.id}`, { ipWhitelist: ['192.0.2.0/24'] });
    expect((await browser.get('/console')).location).toBe('/console/sign-in');
  });

  it('never writes a secret, a session token or the admin token to the log', async () => {
    const { h, base } = served();
    const account = await h.createAccount();
    const browser = new Browser(base);
    await browser.signIn(account.key, wrongSecret(account.secret));
    await browser.signIn(account.key, account.secret);
    await browser.get('/console/messages');
    await browser.post('/console/sign-out', {}, { csrf: null });
    await browser.post('/console/sign-out');
    const operator = new Browser(base);
    await operator.signInOperator(ADMIN_TOKEN);
    await operator.get('/console/operator/accounts');
    const log = h.logs.join('');
    expect(log).toContain('/console');
    for (const secret of [
      account.secret,
      wrongSecret(account.secret),
      ADMIN_TOKEN,
      browser.csrf ?? 'none',
      ...browser.cookies.values(),
      ...operator.cookies.values(),
    ]) {
      expect(log).not.toContain(secret);
    }
  });
});

describe.each(engines())('$name console: session expiry, request rate and HTTPS', (engine) => {
  describe('with WAYBILL_CONSOLE_SESSION_HOURS=1', () => {
    const served = useListening(engine, { WAYBILL_CONSOLE_SESSION_HOURS: '1' });

    it('slides: each request keeps the session an hour longer; an hour without one ends it', async () => {
      const { h, base } = served();
      const account = await h.createAccount();
      const browser = new Browser(base);
      await browser.signIn(account.key, account.secret);
      for (let i = 0; i < 3; i++) {
        h.advance(50 * 60_000);
        expect((await browser.get('/console')).location).toBe('/console/messages');
      }
      h.advance(60 * 60_000);
      expect((await browser.get('/console')).location).toBe('/console/sign-in');
    });
  });

  describe('with a request rate of 1/s, burst 2', () => {
    const served = useListening(engine, { WAYBILL_RATE_PER_SECOND: '1', WAYBILL_RATE_BURST: '2' });

    it('takes a sign-in from the account’s bucket, which the API shares: over the rate, it is refused', async () => {
      const { h, base } = served();
      const account = await h.createAccount();
      // The clock stands still: no token comes back during the test.
      const dlr = await h.inject(`/dlr?key=${account.key}&secret=${account.secret}&messageid=m-1`);
      expect(dlr.statusCode).toBe(200);
      expect((await new Browser(base).signIn(account.key, account.secret)).status).toBe(303);
      const refused = await new Browser(base).signIn(account.key, account.secret);
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
      expect(refused.text).toContain('Too many attempts');
      expect(sessionCookie(refused)).toBeUndefined();
      // The API sees the same empty bucket.
      const after = await h.inject(`/dlr?key=${account.key}&secret=${account.secret}&messageid=m-1`);
      expect(after.statusCode).toBe(429);
    });
  });

  describe('behind a trusted proxy', () => {
    const served = useListening(engine, { WAYBILL_TRUST_PROXY: 'true' });

    it('marks the cookies Secure when the request came over HTTPS, and checks Origin against https', async () => {
      const { h, base } = served();
      const account = await h.createAccount();
      const host = new URL(base).host;
      const browser = new Browser(base);
      const get = await fetch(`${base}/console/sign-in`, { headers: { 'x-forwarded-proto': 'https' } });
      expect(get.headers.getSetCookie().join('\n')).toMatch(/waybill_sign_in=[^;]+;.*Secure/i);
      const cookie = get.headers.getSetCookie()[0]?.split(';')[0] ?? '';
      const csrf = /name="_csrf" value="([^"]+)"/.exec(await get.text())?.[1] ?? '';
      const post = await fetch(`${base}/console/sign-in`, {
        method: 'POST',
        redirect: 'manual',
        headers: {
          'x-forwarded-proto': 'https',
          origin: `https://${host}`,
          cookie,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: new URLSearchParams({ key: account.key, secret: account.secret, _csrf: csrf }).toString(),
      });
      expect(post.status).toBe(303);
      expect(post.headers.getSetCookie().find((l) => l.startsWith('waybill_session='))).toMatch(/; Secure/i);
      expect(browser.cookies.size).toBe(0);
    });
  });
});
