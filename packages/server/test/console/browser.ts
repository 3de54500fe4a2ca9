import type { AddressInfo } from 'node:net';
import { beforeEach } from 'vitest';
import type { EngineFixture } from '../support/engines.js';
import { type Harness, useHarness } from '../support/http.js';

export interface Page {
  status: number;
  headers: Headers;
  text: string;
  /** Every Set-Cookie line of the answer, as sent. */
  setCookies: string[];
  /** Where a redirect points, or null. */
  location: string | null;
}

/**
 * A person's browser over real HTTP: a cookie jar (name → value, no path matching: every console cookie is
 * under /console), `Origin` on every POST as a browser sends it, and the CSRF token of the last page read.
 */
export class Browser {
  readonly cookies = new Map<string, string>();
  /** The `_csrf` of the last page that had one. */
  csrf: string | null = null;

  constructor(readonly base: string) {}

  async get(path: string): Promise<Page> {
    return this.#send(path, { method: 'GET' });
  }

  /** Posts a form; `origin: null` leaves the header out, `csrf: null` the token. */
  async post(
    path: string,
    fields: Record<string, string> = {},
    options: { origin?: string | null; csrf?: string | null } = {},
  ): Promise<Page> {
    const origin = options.origin === undefined ? this.base : options.origin;
    const csrf = options.csrf === undefined ? this.csrf : options.csrf;
    const form = new URLSearchParams(fields);
    if (csrf !== null) form.set('_csrf', csrf);
    return this.#send(path, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        ...(origin === null ? {} : { origin }),
      },
      body: form.toString(),
    });
  }

  /** Signs in with an account's key and secret through the form. */
  async signIn(key: string, secret: string): Promise<Page> {
    await this.get('/console/sign-in');
    return this.post('/console/sign-in', { key, secret });
  }

  async signInOperator(token: string): Promise<Page> {
    await this.get('/console/sign-in');
    return this.post('/console/sign-in/operator', { token });
  }

  async #send(path: string, init: RequestInit): Promise<Page> {
    const cookie = [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
    const res = await fetch(new URL(path, this.base), {
      ...init,
      redirect: 'manual',
      headers: { ...(init.headers as Record<string, string>), ...(cookie ? { cookie } : {}) },
    });
    const setCookies = res.headers.getSetCookie();
    for (const line of setCookies) {
      const [pair = ''] = line.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      const expired = /max-age=0/i.test(line) || /expires=Thu, 01 Jan 1970/i.test(line);
      if (expired || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    const text = await res.text();
    const csrf = /name="_csrf" value="([^"]+)"/.exec(text)?.[1];
    if (csrf !== undefined) this.csrf = csrf;
    return {
      status: res.status,
      headers: res.headers,
      text,
      setCookies,
      location: res.headers.get('location'),
    };
  }
}

/** A harness per test that also listens on a free local port, and the URL it listens at. */
export function useListening(
  engine: EngineFixture,
  env: Record<string, string> = {},
): () => { h: Harness; base: string } {
  const harness = useHarness(engine, env);
  let base = '';
  beforeEach(async () => {
    await harness().app.listen({ host: '127.0.0.1', port: 0 });
    base = `http://127.0.0.1:${(harness().app.server.address() as AddressInfo).port}`;
  });
  return () => ({ h: harness(), base });
}
