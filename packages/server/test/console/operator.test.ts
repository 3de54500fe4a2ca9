import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { engines } from '../support/engines.js';
import { ADMIN_TOKEN } from '../support/http.js';
import { Browser, useListening } from './browser.js';

/** A real HTTP receiver that records what it was sent and answers `status`. */
async function receiver(
  status: number,
): Promise<{ url: string; seen: IncomingHttpHeaders[]; server: Server }> {
  const seen: IncomingHttpHeaders[] = [];
  const server = createServer((req, res) => {
    seen.push(req.headers);
    req.resume();
    req.on('end', () => res.writeHead(status).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, seen, server };
}

const secretOn = (text: string, label: string) =>
  new RegExp(`<dt>${label}</dt><dd class="secret">([^<]+)</dd>`).exec(text)?.[1];

describe.each(engines())('$name console: operator pages and settings', (engine) => {
  const served = useListening(engine, {
    WAYBILL_CALLBACK_RELAY: 'off',
    WAYBILL_CALLBACK_ALLOW_PRIVATE: 'true',
  });
  const servers: Server[] = [];
  afterEach(async () => {
    for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
  });

  it('creates an account and shows its secrets once; searches; edits with the API’s checks', async () => {
    const { h, base } = served();
    const operator = new Browser(base);
    await operator.signInOperator(ADMIN_TOKEN);
    await operator.get('/console/operator/accounts');
    const created = await operator.post('/console/operator/accounts', {
      name: 'Zeta Shipping',
      ipWhitelist: '',
    });
    expect(created.status).toBe(201);
    const key = secretOn(created.text, 'Key') ?? '';
    const secret = secretOn(created.text, 'Secret') ?? '';
    expect(key).toMatch(/^[A-Za-z0-9]{8}$/);
    expect(secret).toMatch(/^[A-Za-z0-9]{8}$/);
    // The new key and secret sign in; the page that lists the account never shows the secret again.
    expect((await new Browser(base).signIn(key, secret)).status).toBe(303);
    await h.createAccount({ name: 'Alpha' });
    const found = await operator.get('/console/operator/accounts?q=zeta');
    expect(found.text).toContain('Zeta Shipping');
    expect(found.text).not.toContain('Alpha');
    expect(found.text).not.toContain(secret);
    const id = /href="\/console\/operator\/accounts\/([0-9a-f-]{36})"/.exec(found.text)?.[1] ?? '';
    const edit = await operator.get(`/console/operator/accounts/${id}`);
    expect(edit.text).not.toContain(secret);
    const bad = await operator.post(`/console/operator/accounts/${id}`, {
      name: 'Zeta Shipping',
      balance: '1',
      creditLimit: '0',
      ipWhitelist: '10.0.0.1/8',
      callbackUrl: '',
    });
    expect(bad.status).toBe(400);
    const saved = await operator.post(`/console/operator/accounts/${id}`, {
      name: 'Zeta Freight',
      balance: '12.5',
      creditLimit: '3',
      ipWhitelist: '10.0.0.0/8\n192.0.2.7',
      callbackUrl: 'https://hooks.example.com/zeta',
      callbackEnabled: 'on',
    });
    expect(saved.status).toBe(303);
    const api = (await h.admin('GET', `/admin/v1/accounts/${id}`)).json();
    expect(api).toMatchObject({
      name: 'Zeta Freight',
      balance: 12.5,
      creditLimit: 3,
      dlrQueryEnabled: false,
      ipWhitelist: ['10.0.0.0/8', '192.0.2.7'],
      callbackUrl: 'https://hooks.example.com/zeta',
      callbackEnabled: true,
    });
  });

  it('rotates an account’s secret (its sessions end) and deletes it only after its name is typed', async () => {
    const { h, base } = served();
    const account = await h.createAccount({ name: 'Doomed' });
    const staff = new Browser(base);
    await staff.signIn(account.key, account.secret);
    const operator = new Browser(base);
    await operator.signInOperator(ADMIN_TOKEN);
    await operator.get(`/console/operator/accounts/${account.id}`);
    const rotated = await operator.post(`/console/operator/accounts/${account.id}/secret`);
    expect(rotated.status).toBe(200);
    const secret = secretOn(rotated.text, 'Secret') ?? '';
    expect(secret).toMatch(/^[A-Za-z0-9]{8}$/);
    expect((await staff.get('/console')).location).toBe('/console/sign-in');
    expect((await h.inject(`/dlr?key=${account.key}&secret=${secret}&messageid=m-1`)).statusCode).toBe(200);

    await staff.signIn(account.key, secret);
    const refused = await operator.post(`/console/operator/accounts/${account.id}/delete`, {
      confirm: 'doomed',
    });
    expect(refused.status).toBe(400);
    expect((await h.admin('GET', `/admin/v1/accounts/${account.id}`)).statusCode).toBe(200);
    const deleted = await operator.post(`/console/operator/accounts/${account.id}/delete`, {
      confirm: 'Doomed',
    });
    expect(deleted.status).toBe(303);
    expect((await h.admin('GET', `/admin/v1/accounts/${account.id}`)).statusCode).toBe(404);
    expect((await staff.get('/console')).location).toBe('/console/sign-in');
  });

  it('escapes what accounts and people typed: a name is text, never markup', async () => {
    const { h, base } = served();
    await h.createAccount({ name: '<img src=x onerror=alert(1)>' });
    const operator = new Browser(base);
    await operator.signInOperator(ADMIN_TOKEN);
    const page = await operator.get('/console/operator/accounts?q=%3Cimg');
    expect(page.text).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(page.text).not.toContain('<img');
    expect(page.text).toContain('value="&lt;img"');
  });

  it('shows routes and health to the operator', async () => {
    const { h, base } = served();
    const route = await h.admin('POST', '/admin/v1/routes', { name: 'kannel-1', kind: 'kannel' });
    expect(route.statusCode).toBe(201);
    const smpp = {
      host: 'smsc.example.net',
      port: 2775,
      systemId: 'waybill',
      password: 'pw',
      bindType: 'receiver',
    };
    for (const [name, enabled] of [
      ['smsc-on', true],
      ['smsc-off', false],
    ] as const) {
      const res = await h.admin('POST', '/admin/v1/routes', { name, kind: 'smpp', enabled, smpp });
      expect(res.statusCode, res.body).toBe(201);
    }
    const operator = new Browser(base);
    await operator.signInOperator(ADMIN_TOKEN);
    const routes = await operator.get('/console/operator/routes');
    expect(routes.status).toBe(200);
    expect(routes.text).toContain('kannel-1');
    // Each SMPP route with the live state of its bind (no process holds these: connecting, or disabled).
    const row = (name: string) =>
      new RegExp(`<td class="mono">${name}</td>[\\s\\S]*?</tr>`).exec(routes.text)?.[0];
    expect(row('smsc-on')).toContain('<span class="state connecting">connecting</span>');
    expect(row('smsc-off')).toContain('<span class="state disabled">disabled</span>');
    expect(row('kannel-1')).toContain('matched 0 · parked 0 · garbled 0 · ignored 0');
    expect(routes.text).not.toContain('>pw<');

    // Health: one pending delivery (the relay is off), one parked receipt, the database up.
    const account = await h.createAccount({ callbackUrl: 'https://hooks.example.com/dlr' });
    await h.ingest(account.id, [{ id: 'm-1', channel: 'SMS', channelUserId: '447700900123' }]);
    await h.receipts(account.id, [
      { messageId: 'm-1', drStatuscode: 'delivered' },
      { messageId: 'not-yet', to: '447700900124', drStatuscode: 'delivered' },
    ]);
    h.advance(90_000);
    const health = await operator.get('/console/operator/health');
    expect(health.status).toBe(200);
    const fact = (label: string) => new RegExp(`<dt>${label}</dt><dd>([^<]*)`).exec(health.text)?.[1]?.trim();
    expect(fact('Callbacks pending')).toBe('1');
    expect(fact('Callbacks dead')).toBe('0');
    expect(fact('Parked receipts')).toBe('1');
    // The pending delivery was due when queued: the relay is 90 s behind.
    expect(fact('Relay lag')).toBe('90 s');
    expect(health.text).toContain('(this instance runs no relay)');
    expect(health.text).toContain('<span class="state ok">up</span>');
    expect(health.text).toContain(engine.name === 'postgres' ? 'postgres' : 'sqlite');
  });

  it('settings: callback URL and flag, whitelist, callback secret shown once, a signed test delivery recorded nowhere', async () => {
    const { h, base } = served();
    const hook = await receiver(204);
    servers.push(hook.server);
    const account = await h.createAccount();
    const browser = new Browser(base);
    await browser.signIn(account.key, account.secret);
    await browser.get('/console/settings');
    const saved = await browser.post('/console/settings', {
      callbackUrl: hook.url,
      callbackEnabled: 'on',
      ipWhitelist: '',
    });
    expect(saved.status).toBe(303);
    expect((await h.admin('GET', `/admin/v1/accounts/${account.id}`)).json()).toMatchObject({
      callbackUrl: hook.url,
      callbackEnabled: true,
    });
    const test = await browser.post('/console/settings/test-delivery');
    expect(test.status).toBe(200);
    expect(test.text).toContain('HTTP 204');
    expect(hook.seen).toHaveLength(1);
    expect(hook.seen[0]?.['webhook-id']).toMatch(/^evt_test/);
    expect(hook.seen[0]?.['webhook-signature']).toMatch(/^v1,/);
    const deliveries = await h.admin('GET', `/admin/v1/accounts/${account.id}/deliveries`);
    expect((deliveries.json() as { deliveries: unknown[] }).deliveries).toHaveLength(0);

    const rotated = await browser.post('/console/settings/callback-secret');
    const callbackSecret = secretOn(rotated.text, 'Callback secret') ?? '';
    expect(callbackSecret).toMatch(/^whsec_/);
    expect((await browser.get('/console/settings')).text).not.toContain(callbackSecret);
  });
});
