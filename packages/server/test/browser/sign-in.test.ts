import { describe, expect, it } from 'vitest';
import { engines } from '../support/engines.js';
import { ADMIN_TOKEN } from '../support/http.js';
import { BROWSER_TEST_TIMEOUT, browserTestsEnabled, useChromium, useConsoleBrowser } from './support.js';

/** Sign-in and sign-out in Chromium, for an account and for the operator, by mouse and by keyboard alone. */
const chromium = useChromium();

describe.runIf(browserTestsEnabled()).each(engines())(
  '$name console in a browser: sign-in',
  (engine) => {
    const served = useConsoleBrowser(chromium, engine);

    it('shows the sign-in page: both forms, no CSP violation, no serious axe finding, tidy at 1280 and 390 px', async () => {
      const { console: c } = served();
      const response = await c.goto('/console');
      expect(response.status()).toBe(200);
      expect(c.path()).toBe('/console/sign-in');
      expect(response.headers()['content-security-policy']).toBe(
        "default-src 'self'; frame-ancestors 'none'",
      );
      expect((await c.page.locator('h1').textContent())?.trim()).toBe('Sign in');
      expect(await c.page.locator('form[action="/console/sign-in/operator"]').count()).toBe(1);
      await c.check('sign-in');
      await c.docsShot('sign-in');
    });

    it('hears a CSP violation when there is one (so the suite’s “none” means something)', async () => {
      const c = await served.fresh();
      await c.goto('/console/sign-in');
      // The page's own code cannot add an inline script; this one is added from outside, as an injection would be.
      await c.page.evaluate(
        `const script = document.createElement('script');
       script.textContent = 'document.title = "inline ran"';
       document.body.append(script);`,
      );
      expect(await c.page.title()).not.toBe('inline ran');
      await expect.poll(() => c.cspViolations.length).toBeGreaterThan(0);
    });

    it('notices a control Tab cannot reach (so the suite’s keyboard check means something)', async () => {
      const c = await served.fresh();
      await c.goto('/console/sign-in');
      await c.expectAllTabbable('sign-in');
      await c.page.evaluate(
        `const button = document.createElement('button');
       button.textContent = 'Mouse only';
       button.tabIndex = -1;
       document.querySelector('main').append(button);`,
      );
      await expect(c.expectAllTabbable('sign-in with a mouse-only button')).rejects.toThrow(
        /not reachable with Tab/,
      );
    });

    it('shows a wrong secret as a refusal on the same page, readable and checked by axe', async () => {
      const { h } = served();
      const c = await served.fresh();
      const account = await h.createAccount({ name: 'Refused Ltd' });
      await c.signIn(account.key, account.secret === 'Wrong000' ? 'Wrong001' : 'Wrong000');
      expect(c.path()).toBe('/console/sign-in');
      expect((await c.page.getByRole('alert').textContent())?.trim()).toBe('Wrong key or secret.');
      expect(await c.page.locator('input[name="key"]').inputValue()).toBe(account.key);
      await c.check('sign-in-refused');
    });

    it('signs an account in with the keyboard alone and out again with the keyboard', async () => {
      const { h } = served();
      const c = await served.fresh();
      const account = await h.createAccount({ name: 'Keyboard Co' });
      await c.goto('/console/sign-in');
      await c.typeInto('form[action="/console/sign-in"] input[name="key"]', account.key);
      await c.typeInto('form[action="/console/sign-in"] input[name="secret"]', account.secret);
      await c.enter();
      expect(c.path()).toMatch(/^\/console\/messages/);
      expect((await c.page.locator('header .who').textContent())?.trim()).toBe('Keyboard Co');
      await c.check('account-home');

      await c.tabTo('form.sign-out button[type="submit"]');
      await c.enter();
      expect(c.path()).toBe('/console/sign-in');
      // The session is gone for the browser too: the console sends it back to the sign-in page.
      expect((await c.page.context().cookies()).map((cookie) => cookie.name)).not.toContain(
        'waybill_session',
      );
      await c.goto('/console');
      expect(c.path()).toBe('/console/sign-in');
      c.expectClean('after sign-out');
    });

    it('signs the operator in with the mouse and out again', async () => {
      const c = await served.fresh();
      await c.signInOperator(ADMIN_TOKEN);
      expect(c.path()).toMatch(/^\/console\/operator\/accounts/);
      expect(await c.page.locator('header .who').textContent()).toContain('Operator');
      await c.check('operator-home');
      await c.signOut();
      expect(c.path()).toBe('/console/sign-in');
      expect((await c.page.context().cookies()).map((cookie) => cookie.name)).not.toContain(
        'waybill_session',
      );
      await c.goto('/console');
      expect(c.path()).toBe('/console/sign-in');
      c.expectClean('after operator sign-out');
    });

    it('works with JavaScript off: sign in, look a message up, save the settings, sign out', async () => {
      const { h } = served();
      const c = await served.fresh({ javaScript: false });
      const account = await h.createAccount({ name: 'No Script Ltd' });
      await c.signIn(account.key, account.secret);
      expect(c.path()).toBe('/console/messages');
      await c.page.fill('input[name="id"]', 'm-404');
      await c.click('form[action="/console/messages"] button[type="submit"]');
      expect(c.path()).toBe('/console/messages?id=m-404');
      expect(await c.page.locator('main').textContent()).toContain('No SMS recipient has message id');
      await c.click('nav a:text-is("Settings")');
      await c.page.fill('input[name="callbackUrl"]', 'https://hooks.example.com/dlr');
      await c.click('form[action="/console/settings"] button[type="submit"]');
      expect(await c.page.getByRole('status').textContent()).toBe('Saved.');
      expect(await c.page.locator('input[name="callbackUrl"]').inputValue()).toBe(
        'https://hooks.example.com/dlr',
      );
      await c.signOut();
      expect(c.path()).toBe('/console/sign-in');
    });

    it('shows the error pages clean too: a 404 signed out and in, an account’s 403 on an operator page', async () => {
      const { h } = served();
      const c = await served.fresh();
      const missing = await c.goto('/console/no/such/page');
      expect(missing.status()).toBe(404);
      expect((await c.page.locator('h1').textContent())?.trim()).toBe('Not Found');
      await c.check('error-404');
      const account = await h.createAccount({ name: 'Error Pages Ltd' });
      await c.signIn(account.key, account.secret);
      expect((await c.goto('/console/no/such/page')).status()).toBe(404);
      await c.check('error-404-signed-in');
      const forbidden = await c.goto('/console/operator/health');
      expect(forbidden.status()).toBe(403);
      expect(await c.page.locator('main').textContent()).toContain('This page is the operator’s.');
      await c.check('error-403');
    });

    it('signs the operator in with the keyboard alone', async () => {
      const c = await served.fresh();
      await c.goto('/console/sign-in');
      await c.typeInto('form[action="/console/sign-in/operator"] input[name="token"]', ADMIN_TOKEN);
      await c.enter();
      expect(c.path()).toMatch(/^\/console\/operator\/accounts/);
      c.expectClean('operator keyboard sign-in');
    });
  },
  BROWSER_TEST_TIMEOUT,
);
