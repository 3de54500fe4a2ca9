import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Relay } from '../../src/callbacks/relay.js';
import { loadConfig } from '../../src/config.js';
import { type Receiver, startReceiver, waitFor } from '../callbacks/receiver.js';
import { engines } from '../support/engines.js';
import { type CreatedAccount, PEPPER, START } from '../support/http.js';
import { BROWSER_TEST_TIMEOUT, browserTestsEnabled, useChromium, useConsoleBrowser } from './support.js';

/**
 * An account's staff in Chromium (CONTRACT §13 pages 1–3 and 5): look a message up and read its timeline, page
 * through a contact's history, redeliver a dead delivery to a real receiver on 127.0.0.1 and see it arrive
 * there, rotate the callback secret (shown once) and check a test delivery with it, sign out. A real relay runs
 * beside the app, as in `waybill serve`.
 */

const TO = '447700900123';
const TO_DEAD = '447700900666';
const CONTACT = '447700900777';
const HISTORY_SIZE = 25;

const ENV = {
  WAYBILL_CALLBACK_ALLOW_PRIVATE: 'true',
  // One retry: a refused delivery is dead after two attempts.
  WAYBILL_CALLBACK_RETRY_SCHEDULE: '0.05',
  WAYBILL_CALLBACK_TIMEOUT_MS: '2000',
  WAYBILL_CALLBACK_SECRET_GRACE_SECONDS: '3600',
  WAYBILL_RATE_PER_SECOND: '0',
};

const chromium = useChromium();

describe.runIf(browserTestsEnabled()).each(engines())(
  '$name console in a browser: an account’s pages',
  (engine) => {
    const served = useConsoleBrowser(chromium, engine, ENV);
    let receiver: Receiver;
    let relay: Relay;
    let account: CreatedAccount;
    /** While true the receiver refuses (500) every delivery of message `dead-1`. */
    let refuseDead = true;

    const deliveries = async (query: string) => {
      const res = await served().h.admin('GET', `/admin/v1/accounts/${account.id}/deliveries${query}`);
      expect(res.statusCode, res.body).toBe(200);
      return (res.json() as { deliveries: { id: string; state: string; to: string }[] }).deliveries;
    };

    beforeAll(async () => {
      const { h } = served();
      // The app's clock stands still; put it at the real time, which the relay and signatures run on.
      h.advance(Date.now() - START);
      const now = Date.now();
      receiver = await startReceiver((request) => ({
        status: refuseDead && request.body.includes('"messageid":"dead-1"') ? 500 : 200,
      }));
      relay = new Relay({
        store: h.store,
        config: loadConfig({ DATABASE_URL: 'sqlite::memory:', ...ENV }),
        pepper: PEPPER,
        logger: { debug() {}, info() {}, warn() {}, error() {} },
      });
      relay.start();
      account = await h.createAccount({ name: 'Acme Deliveries', callbackUrl: receiver.url });

      const history = Array.from({ length: HISTORY_SIZE }, (_, i) => ({
        id: `h-${String(i + 1).padStart(2, '0')}`,
        channel: 'SMS',
        channelUserId: CONTACT,
        campaignId: i % 2 === 0 ? 'spring' : 'autumn',
        text: `Message number ${i + 1}`,
        createdAt: new Date(now - (HISTORY_SIZE - i) * 60_000).toISOString(),
      }));
      const ingested = await h.ingest(account.id, [
        { id: 'm-1', channel: 'SMS', channelUserId: TO, sms: { status: '0', network: '23410' } },
        { id: 'dead-1', channel: 'SMS', channelUserId: TO_DEAD },
        ...history,
      ]);
      expect(ingested.statusCode, ingested.body).toBe(200);
      const receipts = await h.receipts(account.id, [
        { messageId: 'm-1', to: TO, drStatuscode: 'accepted', drTime: new Date(now - 60_000).toISOString() },
        { messageId: 'dead-1', to: TO_DEAD, drStatuscode: 'failed', drErrcode: '3' },
      ]);
      expect(receipts.statusCode, receipts.body).toBe(200);
      const delivered = await h.receipts(account.id, [
        { messageId: 'm-1', to: TO, drStatuscode: 'delivered', drTime: new Date(now - 30_000).toISOString() },
      ]);
      expect(delivered.statusCode, delivered.body).toBe(200);
      relay.poke();
      await waitFor(
        async () => (await deliveries('?state=dead')).some((d) => d.to === TO_DEAD),
        15_000,
        'the refused delivery to die',
      );
    });
    afterAll(async () => {
      await relay?.stop(1000);
      await receiver?.close();
    });

    it('signs in and lands on message lookup, with the keyboard alone', async () => {
      const { console: c } = served();
      await c.goto('/console/sign-in');
      await c.typeInto('form[action="/console/sign-in"] input[name="key"]', account.key);
      await c.typeInto('form[action="/console/sign-in"] input[name="secret"]', account.secret);
      await c.enter();
      expect(c.path()).toBe('/console/messages');
      await c.check('messages-empty');
    });

    it('looks a message up with the keyboard and shows its /dlr item, meanings and timeline, oldest first', async () => {
      const { console: c } = served();
      await c.goto('/console/messages');
      await c.typeInto('input[name="id"]', 'm-1');
      await c.enter();
      expect(c.path()).toBe('/console/messages?id=m-1');
      const section = c.page.locator('section.recipient');
      expect(await section.count()).toBe(1);
      const text = (await section.textContent()) ?? '';
      expect(text).toContain(TO);
      expect(text).toContain('delivered');
      const timeline = await c.page
        .locator('section.recipient table')
        .first()
        .locator('tbody tr')
        .allTextContents();
      expect(timeline).toHaveLength(2);
      expect(timeline[0]).toContain('accepted');
      expect(timeline[1]).toContain('delivered');
      await waitFor(
        async () => {
          await c.page.reload();
          return (await c.page.locator('.delivery .state.delivered').count()) > 0;
        },
        10_000,
        'the delivery of m-1 to show delivered',
      );
      await c.check('messages');
      await c.docsShot('messages');
    });

    it('pages through a contact’s history with the keyboard, newest first, and filters by campaign', async () => {
      const { console: c } = served();
      await c.goto('/console/contacts');
      await c.check('contacts-empty');
      // The channel by typing its name on the focused select, the contact, then Enter in the field: no mouse.
      await c.typeInto('select[name="channel"]', 'SMS');
      expect(await c.page.locator('select[name="channel"]').inputValue()).toBe('SMS');
      await c.typeInto('input[name="channelUserId"]', CONTACT);
      await c.enter();
      expect(c.path()).toBe(`/console/contacts?channel=SMS&channelUserId=${CONTACT}&contactId=&campaignId=`);
      const ids = () => c.page.locator('tbody tr td:nth-child(2)').allTextContents();
      const first = await ids();
      expect(first).toHaveLength(20);
      expect(first[0]?.trim()).toBe('h-25');
      expect(first[19]?.trim()).toBe('h-06');
      await c.check('contacts');
      await c.docsShot('contacts');
      await c.click('text=Older messages');
      const second = (await ids()).map((id) => id.trim());
      expect(second).toEqual(['h-05', 'h-04', 'h-03', 'h-02', 'h-01']);
      expect(await c.page.locator('text=Older messages').count()).toBe(0);
      await c.check('contacts-older');

      // The campaign filter, typed into the form the page comes back with, and sent with Space on its button.
      await c.goto(`/console/contacts?channel=SMS&channelUserId=${CONTACT}`);
      await c.typeInto('input[name="campaignId"]', 'spring');
      await c.tabTo('form[action="/console/contacts"] button[type="submit"]');
      await c.space();
      expect(c.path()).toBe(
        `/console/contacts?channel=SMS&channelUserId=${CONTACT}&contactId=&campaignId=spring`,
      );
      const spring = (await ids()).map((id) => id.trim());
      expect(spring).toHaveLength(13);
      expect(spring.every((id) => Number(id.slice(2)) % 2 === 1)).toBe(true);
      // A message id links to its lookup.
      await c.click('tbody tr:first-child a');
      expect(c.path()).toBe('/console/messages?id=h-25');
    });

    it('redelivers a dead delivery with the keyboard, from the deliveries page and the lookup; the receiver gets it', async () => {
      const { console: c } = served();
      const deadId = (await deliveries('?state=dead')).find((d) => d.to === TO_DEAD)?.id ?? '';
      expect(deadId).toMatch(/^evt_/);
      const redeliverButton = (form: string) =>
        `form[action="${form}"]:has(input[name="delivery"][value="${deadId}"]) button[type="submit"]`;
      await c.goto('/console/deliveries?state=dead');
      const rows = c.page.locator('tbody tr', { hasText: TO_DEAD });
      expect(await rows.count()).toBe(1);
      expect(await rows.locator('.state').textContent()).toBe('dead');
      await c.check('deliveries-dead');
      await c.docsShot('deliveries');

      const before = receiver.received.filter((r) => r.body.includes('"messageid":"dead-1"')).length;
      expect(before).toBe(2);
      refuseDead = false;
      await c.tabTo(redeliverButton('/console/deliveries/redeliver'));
      await c.space();
      expect(await c.page.getByRole('status').textContent()).toContain('pending again');
      await c.check('deliveries-redelivered');
      await waitFor(
        () => receiver.received.filter((r) => r.body.includes('"messageid":"dead-1"')).length === before + 1,
        10_000,
        'the redelivery to arrive',
      );
      const arrived = receiver.received.filter((r) => r.body.includes('"messageid":"dead-1"')).at(-1);
      expect(() =>
        new Webhook(account.callbackSecret).verify(
          arrived?.body ?? '',
          arrived?.headers as Record<string, string>,
        ),
      ).not.toThrow();
      await waitFor(
        async () => (await deliveries('')).find((d) => d.to === TO_DEAD)?.state === 'delivered',
        10_000,
        'the redelivered delivery to settle',
      );
      await c.goto('/console/deliveries?state=delivered');
      expect(await c.page.locator('tbody tr', { hasText: TO_DEAD }).count()).toBe(1);
      c.expectClean('deliveries');

      // Again from the lookup, with Enter on its Redeliver: a delivered delivery may be sent again.
      await c.goto('/console/messages?id=dead-1');
      await c.tabTo(redeliverButton('/console/messages/redeliver'));
      await c.enter();
      expect(c.path()).toBe('/console/messages?id=dead-1&notice=redelivered');
      await waitFor(
        () => receiver.received.filter((r) => r.body.includes('"messageid":"dead-1"')).length === before + 2,
        10_000,
        'the second redelivery to arrive',
      );
      await waitFor(
        async () => {
          await c.page.reload();
          return (await c.page.locator('.delivery .state.delivered').count()) > 0;
        },
        10_000,
        'the lookup to show the delivery delivered',
      );
      // Its card counts every attempt its table lists, and those since the last redelivery apart.
      expect(await c.page.locator('.delivery tbody tr').count()).toBe(4);
      expect(await c.page.locator('.delivery > p').textContent()).toContain(
        '4 attempts (1 since redelivery)',
      );
      await c.check('messages-redelivered');
    });

    it('rotates the callback secret with the keyboard: shown once, and a test delivery verifies with it', async () => {
      const { console: c } = served();
      await c.goto('/console/settings');
      await c.check('settings');
      await c.docsShot('settings');
      const dialogs: string[] = [];
      c.page.once('dialog', (dialog) => {
        dialogs.push(dialog.message());
        void dialog.accept();
      });
      await c.tabTo('form[action="/console/settings/callback-secret"] button[type="submit"]');
      await c.enter();
      // console.js asked first (data-confirm); the server answered with the secret, once.
      expect(dialogs).toEqual(['Rotate the callback secret?']);
      const secret = ((await c.page.locator('dd.secret').textContent()) ?? '').trim();
      expect(secret).not.toBe('');
      expect(secret).not.toBe(account.callbackSecret);
      await c.check('secret-shown');
      await c.docsShot('secret');

      await c.click('main a:text-is("Back")');
      expect(c.path()).toMatch(/^\/console\/settings/);
      expect(await c.page.content()).not.toContain(secret);
      await c.goto('/console/settings');
      expect(await c.page.content()).not.toContain(secret);

      const received = receiver.received.length;
      await c.click('form[action="/console/settings/test-delivery"] button[type="submit"]');
      expect(await c.page.getByRole('status').textContent()).toContain('HTTP 200');
      await c.check('settings-test-delivery');
      const test = receiver.received
        .slice(received)
        .find((r) => String(r.headers['webhook-id']).startsWith('evt_test'));
      expect(test).toBeDefined();
      expect(() =>
        new Webhook(secret).verify(test?.body ?? '', test?.headers as Record<string, string>),
      ).not.toThrow();
    });

    it('saves the settings form with the keyboard alone: a whitelist typed, the callbacks switched off with Space', async () => {
      const { h, console: c } = served();
      await c.goto('/console/settings');
      await c.typeInto('form[action="/console/settings"] textarea[name="ipWhitelist"]', '127.0.0.0/8');
      await c.tabTo('form[action="/console/settings"] input[name="callbackEnabled"]');
      await c.page.keyboard.press('Space');
      expect(await c.page.locator('input[name="callbackEnabled"]').isChecked()).toBe(false);
      await c.tabTo('form[action="/console/settings"] button[type="submit"]');
      await c.enter();
      expect(await c.page.getByRole('status').textContent()).toBe('Saved.');
      const saved = await h.admin('GET', `/admin/v1/accounts/${account.id}`);
      expect(saved.json()).toMatchObject({
        callbackUrl: receiver.url,
        callbackEnabled: false,
        ipWhitelist: ['127.0.0.0/8'],
      });
      await c.check('settings-saved');
      // As it was, for what follows.
      const restored = await h.admin('PATCH', `/admin/v1/accounts/${account.id}`, {
        callbackEnabled: true,
        ipWhitelist: [],
      });
      expect(restored.statusCode, restored.body).toBe(200);
    });

    it('signs out', async () => {
      const { console: c } = served();
      await c.goto('/console/messages');
      await c.signOut();
      expect(c.path()).toBe('/console/sign-in');
      await c.goto('/console/deliveries');
      expect(c.path()).toBe('/console/sign-in');
      c.expectClean('sign-out');
    });
  },
  BROWSER_TEST_TIMEOUT,
);
