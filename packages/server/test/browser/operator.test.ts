import { beforeAll, describe, expect, it } from 'vitest';
import { engines } from '../support/engines.js';
import { ADMIN_TOKEN } from '../support/http.js';
import {
  BROWSER_TEST_TIMEOUT,
  browserTestsEnabled,
  type ConsolePage,
  useChromium,
  useConsoleBrowser,
} from './support.js';

/**
 * The operator in Chromium (CONTRACT §13 page 6): accounts (search, create with the keyboard alone, secrets
 * shown once, edit, rotate, delete after typing the name), an account's pages seen as the operator, routes and
 * health.
 */
const dlrUrl = (key: string, secret: string) => `/dlr?key=${key}&secret=${secret}&messageid=m-1`;

const chromium = useChromium();

describe.runIf(browserTestsEnabled()).each(engines())(
  '$name console in a browser: the operator’s pages',
  (engine) => {
    const served = useConsoleBrowser(chromium, engine);
    /** What the operator's console showed once for the account it created. */
    let created: { id: string; key: string; secret: string };

    /** Accepts the next confirm() of console.js and returns its question. */
    const acceptNextDialog = (c: ConsolePage): string[] => {
      const asked: string[] = [];
      c.page.once('dialog', (dialog) => {
        asked.push(dialog.message());
        void dialog.accept();
      });
      return asked;
    };

    beforeAll(async () => {
      const { h, console: c } = served();
      await h.createAccount({ name: 'Globex' });
      await h.createAccount({ name: 'Initech' });
      expect(
        (await h.admin('POST', '/admin/v1/routes', { name: 'kannel-eu', kind: 'kannel' })).statusCode,
      ).toBe(201);
      await c.signInOperator(ADMIN_TOKEN);
    });

    it('lists and searches the accounts', async () => {
      const { console: c } = served();
      expect(c.path()).toBe('/console/operator/accounts');
      const names = () => c.page.locator('tbody tr td:first-child').allTextContents();
      expect((await names()).map((name) => name.trim()).sort()).toEqual(['Globex', 'Initech']);
      await c.check('operator-accounts');
      await c.docsShot('operator-accounts');
      await c.page.fill('input[name="q"]', 'glob');
      await c.click('form[action="/console/operator/accounts"][method="get"] button[type="submit"]');
      expect((await names()).map((name) => name.trim())).toEqual(['Globex']);
    });

    it('creates an account with the keyboard alone and shows its secrets once', async () => {
      const { h, console: c } = served();
      await c.goto('/console/operator/accounts');
      await c.typeInto('form[method="post"] input[name="name"]', 'Keyboard Corp');
      await c.tabTo('form[method="post"] button[type="submit"]');
      await c.enter();
      expect(await c.page.locator('h1').textContent()).toBe('Account created');
      const shown = await c.page.locator('dd.secret').allTextContents();
      expect(shown).toHaveLength(3);
      const [key = '', secret = ''] = shown.map((value) => value.trim());
      const dlr = await h.inject(dlrUrl(key, secret));
      expect(dlr.statusCode, dlr.body).toBe(200);
      await c.check('operator-account-created');
      await c.click('main a:text-is("Back")');
      const id = c.path().split('/').at(-1) ?? '';
      created = { id, key, secret };
      expect(await c.page.content()).not.toContain(secret);
      await c.check('operator-account');
      await c.docsShot('operator-account');
    });

    it('edits the account, then opens its pages as the operator', async () => {
      const { console: c } = served();
      await c.goto(`/console/operator/accounts/${created.id}`);
      await c.page.fill('form.card input[name="name"]', 'Keyboard Corporation');
      await c.click(`form[action="/console/operator/accounts/${created.id}"] button[type="submit"]`);
      expect(await c.page.getByRole('status').textContent()).toBe('Saved.');
      expect(await c.page.locator('h1').textContent()).toBe('Keyboard Corporation');
      await c.click('dd a:text-is("deliveries")');
      expect(c.path()).toBe(`/console/deliveries?account=${created.id}`);
      expect(await c.page.locator('header .who').textContent()).toContain('Keyboard Corporation');
      await c.check('operator-account-deliveries');
    });

    it('rotates the account’s secret after a confirm: shown once, the old one refused', async () => {
      const { h, console: c } = served();
      await c.goto(`/console/operator/accounts/${created.id}`);
      const asked = acceptNextDialog(c);
      await c.click(`form[action="/console/operator/accounts/${created.id}/secret"] button[type="submit"]`);
      expect(asked).toHaveLength(1);
      expect(await c.page.locator('h1').textContent()).toBe('New secret');
      const secret = ((await c.page.locator('dd.secret').textContent()) ?? '').trim();
      expect(secret).not.toBe(created.secret);
      const old = await h.inject(dlrUrl(created.key, created.secret));
      expect(old.statusCode).toBe(401);
      const fresh = await h.inject(dlrUrl(created.key, secret));
      expect(fresh.statusCode, fresh.body).toBe(200);
      await c.check('operator-secret');
    });

    it('deletes an account only once its name is typed, with the keyboard alone', async () => {
      const { h, console: c } = served();
      await c.goto(`/console/operator/accounts/${created.id}`);
      const form = `form[action="/console/operator/accounts/${created.id}/delete"]`;
      // A name that is not the account's, sent with Enter in the confirmation field: refused, nothing deleted.
      await c.typeInto(`${form} input[name="confirm"]`, 'Keyboard');
      await c.enter();
      expect(await c.page.getByRole('alert').textContent()).toContain('Type the account’s name exactly');
      expect((await h.admin('GET', `/admin/v1/accounts/${created.id}`)).statusCode).toBe(200);
      await c.check('operator-delete-refused');
      // The name typed in full, then Tab to the button and Space.
      await c.typeInto(`${form} input[name="confirm"]`, 'Keyboard Corporation');
      await c.tabTo(`${form} button[type="submit"]`);
      await c.space();
      expect(c.path()).toBe('/console/operator/accounts?notice=deleted');
      expect((await h.admin('GET', `/admin/v1/accounts/${created.id}`)).statusCode).toBe(404);
      expect(await c.page.getByRole('status').textContent()).toContain('deleted');
      expect(await c.page.locator('tbody').textContent()).not.toContain('Keyboard Corporation');
    });

    it('shows the routes and the health pages', async () => {
      const { console: c } = served();
      await c.click('nav a:text-is("Routes")');
      expect(c.path()).toBe('/console/operator/routes');
      expect(await c.page.locator('tbody').textContent()).toContain('kannel-eu');
      await c.check('operator-routes');
      await c.docsShot('operator-routes');
      await c.click('nav a:text-is("Health")');
      expect(c.path()).toBe('/console/operator/health');
      expect(await c.page.locator('main').textContent()).toContain(
        engine.name === 'sqlite' ? 'sqlite' : 'postgres',
      );
      await c.check('operator-health');
      await c.docsShot('operator-health');
      await c.signOut();
      expect(c.path()).toBe('/console/sign-in');
    });
  },
  BROWSER_TEST_TIMEOUT,
);
