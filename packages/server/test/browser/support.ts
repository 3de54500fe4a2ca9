import { existsSync, mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import AxeBuilder from '@axe-core/playwright';
import { type Browser, type BrowserContext, chromium, type Page, type Response } from 'playwright-core';
import { afterAll, beforeAll, expect } from 'vitest';
import type { EngineFixture } from '../support/engines.js';
import { type Harness, startHarness } from '../support/http.js';

/**
 * The browser suite's fixtures: Waybill on a real port, Debian's Chromium driven by playwright-core, a page
 * helper that fails on CSP violations and on serious or critical axe findings, and screenshots kept as test
 * artifacts (git-ignored). One Chromium per file, one page per engine's block, reused from test to test.
 */

const BINARIES = [process.env.WAYBILL_TEST_CHROMIUM ?? '', '/usr/bin/chromium', '/usr/bin/chromium-browser'];

/** The Chromium binary, or null. */
export const CHROMIUM_BIN: string | null = BINARIES.find((bin) => bin !== '' && existsSync(bin)) ?? null;

/**
 * Whether the browser tests run: skipped, with a message, when Chromium is missing, except under CI=true where a
 * missing browser must fail the run rather than quietly skip it (.ci/run installs it).
 */
export function browserTestsEnabled(): boolean {
  if (CHROMIUM_BIN !== null || process.env.CI === 'true') return true;
  console.warn(
    `skipping the browser tests: Chromium not found at ${BINARIES.filter(Boolean).join(', ')} (apt-get install chromium, or set WAYBILL_TEST_CHROMIUM)`,
  );
  return false;
}

/**
 * Flags for running as root on a closed network: without the background-networking ones Chromium keeps trying
 * to reach Google's services and misbehaves; playwright gives every launch a fresh profile directory.
 */
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Where screenshots go (git-ignored); docs/images/ gets its own copies through `docsShot`. */
export const ARTIFACTS_DIR = fileURLToPath(new URL('./artifacts/', import.meta.url));
const DOCS_IMAGES_DIR = fileURLToPath(new URL('../../../../docs/images/', import.meta.url));

/** A browser step waits on Chromium, which shares the machine's cores with everything else: room, not a deadline. */
export const BROWSER_TEST_TIMEOUT = 90_000;

export const WIDE = { width: 1280, height: 800 };
export const NARROW = { width: 390, height: 844 };

/** axe findings that fail a page (CONTRACT §13's pages must have none). */
const BLOCKING_IMPACTS = new Set(['serious', 'critical']);

/** Chromium's console line for a blocked load or script (the only trace a CSP violation leaves there). */
const CSP_MESSAGE = /Content Security Policy/i;

/** A console page in the browser, with the checks every page gets. */
export class ConsolePage {
  /** Console lines and page errors that speak of a CSP violation, since the page was opened. */
  readonly cspViolations: string[] = [];
  /** Page errors (uncaught exceptions in the console's script). */
  readonly pageErrors: string[] = [];

  constructor(
    readonly page: Page,
    readonly base: string,
    readonly engine: string,
  ) {
    page.on('console', (message) => {
      if (CSP_MESSAGE.test(message.text())) this.cspViolations.push(message.text());
    });
    page.on('pageerror', (error) => {
      this.pageErrors.push(error.message);
      if (CSP_MESSAGE.test(error.message)) this.cspViolations.push(error.message);
    });
  }

  /** Opens a console path and returns the answer of the main document. */
  async goto(path: string): Promise<Response> {
    const response = await this.page.goto(new URL(path, this.base).href);
    if (response === null) throw new Error(`no answer for ${path}`);
    return response;
  }

  /** The path (and query) the page shows now. */
  path(): string {
    const url = new URL(this.page.url());
    return url.pathname + url.search;
  }

  /**
   * Every page's checks: no CSP violation and no script error so far, no serious or critical axe finding, every
   * control reachable with Tab, no sideways scrolling of the page at 390 px; screenshots at 1280 px and 390 px under `name`. Leaves the
   * viewport at 1280 px.
   */
  async check(name: string): Promise<void> {
    await this.page.setViewportSize(WIDE);
    await this.axe(name);
    await this.shot(`${name}-1280`);
    await this.expectAllTabbable(name);
    // The Tab walk leaves a focus ring somewhere; the narrow screenshot shows the page as it loads.
    await this.page.evaluate('document.activeElement?.blur()');
    await this.page.setViewportSize(NARROW);
    const overflow = await this.page.evaluate<number>(
      'document.documentElement.scrollWidth - document.documentElement.clientWidth',
    );
    await this.shot(`${name}-390`);
    await this.page.setViewportSize(WIDE);
    expect(overflow, `${name}: the page scrolls sideways at 390 px`).toBeLessThanOrEqual(0);
    this.expectClean(name);
  }

  /**
   * Every visible form control and link of the page takes the focus from Tab alone (nothing a mouse is needed
   * for): Tab is pressed until each has had the focus once, or fails naming those that never did.
   */
  async expectAllTabbable(name: string): Promise<void> {
    const total = await this.page.evaluate<number>(`(() => {
      const all = [...document.querySelectorAll('input:not([type=hidden]), select, textarea, button, a[href]')]
        .filter((element) => element.getClientRects().length > 0 && !element.disabled);
      all.forEach((element, i) => element.setAttribute('data-tab-check', String(i)));
      return all.length;
    })()`);
    const seen = new Set<string>();
    for (let i = 0; i < 2 * total + 4 && seen.size < total; i++) {
      await this.page.keyboard.press('Tab');
      const at = await this.page.evaluate<string | null>(
        "document.activeElement?.getAttribute('data-tab-check') ?? null",
      );
      if (at !== null) seen.add(at);
    }
    const missed = await this.page.evaluate<string[]>(
      `[...document.querySelectorAll('[data-tab-check]')]
        .filter((element) => !${JSON.stringify([...seen])}.includes(element.getAttribute('data-tab-check')))
        .map((element) => element.outerHTML.slice(0, 120))`,
    );
    expect(missed, `${name}: not reachable with Tab`).toEqual([]);
  }

  /** No CSP violation and no uncaught script error since the page was opened. */
  expectClean(name: string): void {
    expect(this.cspViolations, `${name}: CSP violations`).toEqual([]);
    expect(this.pageErrors, `${name}: script errors`).toEqual([]);
  }

  /** Runs axe on the page as it is and fails on any serious or critical violation, naming each. */
  async axe(name: string): Promise<void> {
    const results = await new AxeBuilder({ page: this.page }).analyze();
    const blocking = results.violations
      .filter((violation) => BLOCKING_IMPACTS.has(violation.impact ?? ''))
      .map(
        (violation) =>
          `${violation.impact} ${violation.id}: ${violation.help} — ${violation.nodes
            .map((node) => node.target.join(' '))
            .join(', ')}`,
      );
    expect(blocking, `${name}: axe violations`).toEqual([]);
  }

  /** A full-page screenshot into the artifacts folder, one file per engine, name and width. */
  async shot(name: string): Promise<void> {
    await this.page.screenshot({ path: `${ARTIFACTS_DIR}${this.engine}-${name}.png`, fullPage: true });
  }

  /**
   * A screenshot at 1280 px for docs/console.md (docs/images/console-<name>.png), taken only when
   * WAYBILL_DOCS_SCREENSHOTS=1 (and from the SQLite run only) so an ordinary run never rewrites tracked files.
   */
  async docsShot(name: string): Promise<void> {
    if (process.env.WAYBILL_DOCS_SCREENSHOTS !== '1' || this.engine !== 'sqlite') return;
    await this.page.setViewportSize(WIDE);
    mkdirSync(DOCS_IMAGES_DIR, { recursive: true });
    // The first screen only (1280 × 800): what a reader needs to recognise the page, at a modest size. A Tab
    // walk (check) may have scrolled the page down; the first screen is its top.
    await this.page.evaluate('window.scrollTo(0, 0)');
    await this.page.screenshot({ path: `${DOCS_IMAGES_DIR}console-${name}.png` });
  }

  /**
   * Moves the keyboard focus with Tab alone until `selector` has it; fails when it is not reached within
   * `limit` presses (not reachable by keyboard). Keyboard focus must be visible (`:focus-visible`).
   */
  async tabTo(selector: string, limit = 40): Promise<void> {
    for (let i = 0; i < limit; i++) {
      await this.page.keyboard.press('Tab');
      const there = await this.page.evaluate<boolean>(
        `document.activeElement?.matches(${JSON.stringify(selector)}) === true`,
      );
      if (there) {
        expect(
          await this.page.evaluate<boolean>("document.activeElement?.matches(':focus-visible') === true"),
          `${selector}: keyboard focus is not visible`,
        ).toBe(true);
        return;
      }
    }
    throw new Error(`${selector} cannot be reached with Tab (${limit} presses)`);
  }

  /** Focuses `selector` with Tab and types `text` into it with the keyboard. */
  async typeInto(selector: string, text: string): Promise<void> {
    await this.tabTo(selector);
    await this.page.keyboard.type(text);
  }

  /** Presses Enter on what has the focus and waits for the page it leads to. */
  async enter(): Promise<void> {
    await this.#pressToNavigate('Enter');
  }

  /** Presses Space on what has the focus (a button: activates it) and waits for the page it leads to. */
  async space(): Promise<void> {
    await this.#pressToNavigate('Space');
  }

  async #pressToNavigate(key: 'Enter' | 'Space'): Promise<void> {
    await Promise.all([this.page.waitForNavigation({ waitUntil: 'load' }), this.page.keyboard.press(key)]);
  }

  /** Follows a link or submits a form by clicking `selector`, and waits for the page it leads to. */
  async click(selector: string): Promise<void> {
    await Promise.all([this.page.waitForNavigation({ waitUntil: 'load' }), this.page.click(selector)]);
  }

  /** Signs an account in through the form, with the mouse. */
  async signIn(key: string, secret: string): Promise<void> {
    await this.goto('/console/sign-in');
    await this.page.fill('form[action="/console/sign-in"] input[name="key"]', key);
    await this.page.fill('form[action="/console/sign-in"] input[name="secret"]', secret);
    await this.click('form[action="/console/sign-in"] button[type="submit"]');
  }

  async signInOperator(token: string): Promise<void> {
    await this.goto('/console/sign-in');
    await this.page.fill('form[action="/console/sign-in/operator"] input[name="token"]', token);
    await this.click('form[action="/console/sign-in/operator"] button[type="submit"]');
  }

  async signOut(): Promise<void> {
    await this.click('form.sign-out button[type="submit"]');
  }
}

/** The file's one Chromium: launched by the first block that needs it, closed after the file's last test. */
export interface FileChromium {
  get(): Promise<Browser>;
}

/**
 * Call once at the top of a browser test file: every engine's block of the file shares this one Chromium
 * (launching it is the slow part), each with contexts of its own.
 */
export function useChromium(): FileChromium {
  let launched: Promise<Browser> | undefined;
  afterAll(async () => {
    await (await launched)?.close();
  });
  return {
    get() {
      if (CHROMIUM_BIN === null) throw new Error('CI=true and Chromium is missing: apt-get install chromium');
      launched ??= chromium.launch({ executablePath: CHROMIUM_BIN, args: CHROMIUM_ARGS });
      return launched;
    },
  };
}

export interface ConsoleFixture {
  h: Harness;
  base: string;
  context: BrowserContext;
  /** The block's page, reused from test to test. */
  console: ConsolePage;
}

/**
 * Per describe block (one engine): a harness listening on a free local port and, in the file's Chromium, one
 * context and one page for every test of the block. Tests that need a fresh cookie jar call `fresh()`.
 */
export function useConsoleBrowser(
  file: FileChromium,
  engine: EngineFixture,
  env: Record<string, string> = {},
): { (): ConsoleFixture; fresh(options?: { javaScript?: boolean }): Promise<ConsolePage> } {
  let fixture: ConsoleFixture | undefined;
  beforeAll(async () => {
    const browser = await file.get();
    mkdirSync(ARTIFACTS_DIR, { recursive: true });
    const h = await startHarness(engine, env);
    await h.app.listen({ host: '127.0.0.1', port: 0 });
    const base = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
    const context = await browser.newContext({ viewport: WIDE });
    fixture = { h, base, context, console: new ConsolePage(await context.newPage(), base, engine.name) };
  });
  afterAll(async () => {
    await fixture?.context.close();
    await fixture?.h.close();
    fixture = undefined;
  });
  const get = () => {
    if (!fixture) throw new Error('browser fixture used outside its describe block');
    return fixture;
  };
  return Object.assign(get, {
    /**
     * A new context (empty cookie jar) and page in the file's Chromium, with JavaScript off when asked; the old
     * one is closed.
     */
    async fresh(options: { javaScript?: boolean } = {}): Promise<ConsolePage> {
      const f = get();
      await f.context.close();
      f.context = await (await file.get()).newContext({
        viewport: WIDE,
        javaScriptEnabled: options.javaScript ?? true,
      });
      f.console = new ConsolePage(await f.context.newPage(), f.base, engine.name);
      return f.console;
    },
  });
}
