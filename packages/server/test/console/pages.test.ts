import { describe, expect, it } from 'vitest';
import { engines } from '../support/engines.js';
import { ADMIN_TOKEN, basic, type CreatedAccount, type Harness, START } from '../support/http.js';
import { Browser, useListening } from './browser.js';

const TO = '447700900123';
const TO_2 = '447700900999';
const HOOK = 'https://hooks.example.com/dlr';

/** An account with callbacks on, message m-1 to two numbers, and two receipts of the first recipient. */
async function accountWithReceipts(h: Harness): Promise<CreatedAccount> {
  const account = await h.createAccount({ callbackUrl: HOOK });
  expect(
    (
      await h.ingest(account.id, [
        { id: 'm-1', channel: 'SMS', channelUserId: TO, sms: { status: '0', network: '23410' } },
        { id: 'm-1', channel: 'SMS', channelUserId: TO_2 },
      ])
    ).statusCode,
  ).toBe(200);
  for (const [drStatuscode, s] of [
    ['accepted', 1],
    ['failed', 2],
  ] as const) {
    const res = await h.receipts(account.id, [
      {
        messageId: 'm-1',
        to: TO,
        drStatuscode,
        drErrcode: '3',
        drTime: new Date(START + s * 1000).toISOString(),
      },
    ]);
    expect(res.statusCode).toBe(200);
  }
  return account;
}

/** Makes every pending delivery of the store dead after one attempt, as a relay would after a 410. */
async function killPending(h: Harness): Promise<void> {
  const claims = await h.store.claimDeliveries({
    now: new Date(START + 3_600_000),
    limit: 100,
    perAccount: 100,
    inFlight: new Map(),
    leaseUntil: new Date(START + 7_200_000),
    lease: 'test-lease',
  });
  for (const claim of claims) {
    await h.store.finishAttempts([
      {
        claim: claim,
        outcome: {
          attempt: { at: new Date(START + 3_600_000), httpStatus: 500, error: 'HTTP 500', durationMs: 12 },
          next: { state: 'dead', disableAccount: false },
        },
      },
    ]);
  }
}

// The relay stays off so that deliveries stay where the test puts them.
describe.each(engines())('$name console pages', (engine) => {
  const served = useListening(engine, { WAYBILL_CALLBACK_RELAY: 'off' });

  it('message lookup: each recipient’s /dlr item with meanings, its timeline oldest first, its deliveries', async () => {
    const { h, base } = served();
    const account = await accountWithReceipts(h);
    const browser = new Browser(base);
    await browser.signIn(account.key, account.secret);
    const page = await browser.get('/console/messages?id=m-1');
    expect(page.status).toBe(200);
    expect(page.text).toContain(TO);
    expect(page.text).toContain(TO_2);
    expect(page.text).toContain('Submitted to carrier successfully');
    expect(page.text).toContain('Send failed');
    expect(page.text).toContain('Number deactivated or invalid');
    expect(page.text).toContain('Abnormal');
    const accepted = page.text.indexOf('Accepted by operator');
    const failed = page.text.indexOf('Send failed</span>');
    expect(accepted).toBeGreaterThan(0);
    expect(failed).toBeGreaterThan(accepted);
    // Two events queued two deliveries; the older is superseded by the newer.
    expect(page.text).toContain('superseded');
    expect(page.text).toContain('pending');
    // No redelivery yet: the count is the table's, and says nothing of redeliveries.
    expect(page.text).toMatch(/<span class="mono">evt_[^<]+<\/span> · 0 attempts · next /);
    expect(page.text).not.toContain('since redelivery');
    const unknown = await browser.get('/console/messages?id=nope');
    expect(unknown.text).toContain('No SMS recipient');
    expect((await browser.get('/console/messages?id=bad%20id')).status).toBe(400);
  });

  it('redelivers a dead delivery from the lookup and the deliveries page, and every dead one', async () => {
    const { h, base } = served();
    const account = await accountWithReceipts(h);
    await killPending(h);
    const browser = new Browser(base);
    await browser.signIn(account.key, account.secret);
    const dead = await browser.get('/console/deliveries?state=dead');
    expect(dead.status).toBe(200);
    expect(dead.text).toContain('HTTP 500');
    const id = /name="delivery" value="(evt_[^"]+)"/.exec(dead.text)?.[1] ?? '';
    expect(id).not.toBe('');
    const one = await browser.post('/console/deliveries/redeliver', { delivery: id });
    expect(one.status).toBe(303);
    const after = await browser.get(one.location ?? '');
    expect(after.text).toContain('pending again');
    const api = await h.admin('GET', `/admin/v1/accounts/${account.id}/deliveries/${id}`);
    expect(api.json()).toMatchObject({ state: 'pending' });

    await killPending(h);
    const all = await browser.post('/console/deliveries/redeliver-dead');
    expect(all.status).toBe(303);
    expect((await browser.get(all.location ?? '')).text).toContain('1 dead delivery is pending again');

    await killPending(h);
    // The lookup lists every attempt of the delivery, those before each redelivery too: three, each an HTTP 500.
    const lookup = await browser.get('/console/messages?id=m-1');
    const card = new RegExp(`<span class="mono">${id}</span>[\\s\\S]*?</table>`).exec(lookup.text)?.[0] ?? '';
    const attempts = [
      ...card.matchAll(/<tr><td class="num">(\d+)<\/td><td>[^<]+<\/td><td>500<\/td><td>HTTP 500<\/td>/g),
    ];
    expect(attempts.map((m) => m[1])).toEqual(['1', '2', '3']);
    // The card's count agrees with its table: every attempt, and those since the last redelivery apart.
    expect(card).toContain(`<span class="mono">${id}</span> · 3 attempts (1 since redelivery)</p>`);
    const fromLookup = await browser.post('/console/messages/redeliver', { delivery: id });
    expect(fromLookup.location).toBe('/console/messages?id=m-1&notice=redelivered');
    const redelivered = await browser.get('/console/messages?id=m-1');
    expect(redelivered.text).toContain(
      `<span class="mono">${id}</span> · 3 attempts (none since redelivery)`,
    );
    // A superseded delivery is refused as the API refuses it.
    const superseded = /superseded<\/span> <span class="mono">(evt_[^<]+)/.exec(
      (await browser.get('/console/messages?id=m-1')).text,
    );
    expect(superseded?.[1]).toMatch(/^evt_/);
    const refused = await browser.post('/console/deliveries/redeliver', { delivery: superseded?.[1] ?? '' });
    expect(refused.status).toBe(409);
    expect(refused.text).toContain('superseded');
  });

  it('contact history: newest first, paged with the API’s cursors, campaign filter', async () => {
    const { h, base } = served();
    const account = await h.createAccount();
    await h.ingest(
      account.id,
      Array.from({ length: 5 }, (_, i) => ({
        id: `c-${i}`,
        channel: 'WHATSAPP',
        channelUserId: 'wa-user-1',
        createdAt: new Date(START + i * 1000).toISOString(),
        campaignId: i % 2 === 0 ? 'even' : 'odd',
        text: `hello ${i}`,
      })),
    );
    const browser = new Browser(base);
    await browser.signIn(account.key, account.secret);
    const first = await browser.get('/console/contacts?channel=WHATSAPP&channelUserId=wa-user-1&size=2');
    expect(first.status).toBe(200);
    expect(first.text.indexOf('hello 4')).toBeLessThan(first.text.indexOf('hello 3'));
    expect(first.text).not.toContain('hello 2');
    const older = /href="(\/console\/contacts\?[^"]+)">Older/.exec(first.text)?.[1]?.replaceAll('&amp;', '&');
    expect(older).toContain('cursor=');
    const second = await browser.get(older ?? '');
    expect(second.text).toContain('hello 2');
    expect(second.text).not.toContain('hello 4');
    const even = await browser.get(
      '/console/contacts?channel=WHATSAPP&channelUserId=wa-user-1&campaignId=even',
    );
    expect(even.text).toContain('hello 4');
    expect(even.text).not.toContain('hello 3');
    const bad = await browser.get('/console/contacts?channel=WHATSAPP&channelUserId=wa-user-1&cursor=forged');
    expect(bad.status).toBe(400);
  });

  it('contact history by contact id, and with a cursor the API gave (CONTRACT §4)', async () => {
    const { h, base } = served();
    const account = await h.createAccount();
    await h.ingest(
      account.id,
      Array.from({ length: 3 }, (_, i) => ({
        id: `k-${i}`,
        channel: 'VIBER',
        channelUserId: 'viber-user-1',
        createdAt: new Date(START + i * 1000).toISOString(),
        text: `viber ${i}`,
      })),
    );
    const api = await h.inject({
      url: '/messages?channel=VIBER&channelUserId=viber-user-1&size=1',
      headers: { authorization: basic(account.key, account.secret) },
    });
    expect(api.statusCode, api.body).toBe(200);
    const first = api.json() as { messages: { contactId: string }[]; nextCursor: string };
    const contactId = first.messages[0]?.contactId ?? '';
    const browser = new Browser(base);
    await browser.signIn(account.key, account.secret);
    const byContact = await browser.get(`/console/contacts?channel=VIBER&contactId=${contactId}`);
    expect(byContact.status).toBe(200);
    expect(byContact.text.indexOf('viber 2')).toBeGreaterThan(0);
    expect(byContact.text.indexOf('viber 2')).toBeLessThan(byContact.text.indexOf('viber 0'));
    // The API's cursor for the page after its first (viber 2) gives the console the older ones.
    const older = await browser.get(
      `/console/contacts?channel=VIBER&channelUserId=viber-user-1&size=1&cursor=${encodeURIComponent(first.nextCursor)}`,
    );
    expect(older.status).toBe(200);
    expect(older.text).toContain('viber 1');
    expect(older.text).not.toContain('viber 2');
    expect(older.text).not.toContain('viber 0');
  });

  it('keeps an account’s session to its own data, whatever the request names, and off the operator pages', async () => {
    const { h, base } = served();
    const mine = await h.createAccount({ name: 'Mine' });
    const theirs = await accountWithReceipts(h);
    const browser = new Browser(base);
    await browser.signIn(mine.key, mine.secret);
    const lookup = await browser.get(`/console/messages?id=m-1&account=${theirs.id}`);
    expect(lookup.text).toContain('No SMS recipient');
    expect(lookup.text).not.toContain(TO);
    await killPending(h);
    const dead = await h.admin('GET', `/admin/v1/accounts/${theirs.id}/deliveries?state=dead`);
    const [delivery] = (dead.json() as { deliveries: { id: string }[] }).deliveries;
    await browser.get('/console/deliveries');
    const redeliver = await browser.post('/console/deliveries/redeliver', {
      delivery: delivery?.id ?? '',
      account: theirs.id,
    });
    expect(redeliver.status).toBe(404);
    for (const path of [
      '/console/operator/accounts',
      '/console/operator/routes',
      '/console/operator/health',
    ]) {
      expect((await browser.get(path)).status).toBe(403);
    }
  });

  it('lets the operator see any account’s pages by naming it', async () => {
    const { h, base } = served();
    const account = await accountWithReceipts(h);
    const browser = new Browser(base);
    await browser.signInOperator(ADMIN_TOKEN);
    expect((await browser.get('/console/messages?id=m-1')).status).toBe(404);
    const page = await browser.get(`/console/messages?id=m-1&account=${account.id}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain(TO_2);
  });

  it('sends a person without a session to sign in', async () => {
    const { base } = served();
    const browser = new Browser(base);
    for (const path of ['/console/messages', '/console/contacts', '/console/deliveries']) {
      const page = await browser.get(path);
      expect(page.status).toBe(303);
      expect(page.location).toBe('/console/sign-in');
    }
  });
});
