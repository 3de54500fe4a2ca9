/**
 * The API reference at /docs renders the served OpenAPI document with swagger-ui, entirely from this server:
 * no asset comes from a CDN, and its Content-Security-Policy forbids every other origin.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { engines } from '../support/engines.js';
import { useHarness } from '../support/http.js';

const sqlite = engines()[0];
if (!sqlite) throw new Error('no SQLite engine');

/** The `src` and `href` attributes of an HTML page. */
const assetUrls = (html: string) => [...html.matchAll(/\b(?:src|href)="([^"]+)"/g)].map((m) => m[1] ?? '');

describe('GET /docs', () => {
  const h = useHarness(sqlite);

  it.each(['/docs', '/docs/'])(
    'serves the reference page at %s, every asset from this server',
    async (path) => {
      const page = await h().inject(path);
      expect(page.statusCode).toBe(200);
      expect(page.headers['content-type']).toMatch(/^text\/html/);
      expect(page.body).toContain('swagger-ui');
      const assets = assetUrls(page.body);
      expect(assets.length).toBeGreaterThanOrEqual(4);
      for (const asset of assets) {
        expect(asset, 'an asset from another origin').not.toMatch(/^(https?:)?\/\//);
        const url = new URL(asset, `http://waybill.test${path}`).pathname;
        const res = await h().inject(url);
        expect(res.statusCode, url).toBe(200);
        expect(res.rawPayload.length, url).toBeGreaterThan(0);
      }
    },
  );

  it('points swagger-ui at the served document, with no online validator', async () => {
    const init = await h().inject('/docs/static/swagger-initializer.js');
    expect(init.statusCode).toBe(200);
    expect(init.body).toContain("resolveUrl('./json')");
    expect(init.body).toMatch(/validatorUrl:\s*null/);
    const json = await h().inject('/docs/json');
    expect(json.json()).toStrictEqual((await h().inject('/openapi.json')).json());
  });

  it('forbids every other origin in its Content-Security-Policy', async () => {
    const csp = String((await h().inject('/docs')).headers['content-security-policy']);
    const directives = new Map(
      csp.split(';').map((d) => {
        const [name = '', ...values] = d.trim().split(/\s+/);
        return [name, values];
      }),
    );
    for (const name of ['default-src', 'connect-src', 'script-src', 'img-src', 'font-src', 'style-src']) {
      const values = directives.get(name) ?? [];
      expect(values, name).toContain("'self'");
      for (const value of values) expect(value, `${name} ${value}`).toMatch(/^('[^']+'|data:)$/);
    }
  });

  it('shows Waybill’s name where the Fastify logo was, and no Explore box', async () => {
    const init = (await h().inject('/docs/static/swagger-initializer.js')).body;
    // The plugin's own logo (Fastify's) is what it shows when given none.
    const require = createRequire(import.meta.url);
    const plugin = dirname(require.resolve('@fastify/swagger-ui/package.json'));
    const fastifyLogo = (await readFile(join(plugin, 'static/logo.svg'))).toString('base64');
    expect(init).not.toContain(fastifyLogo);
    const logo = /img\.src = 'data:image\/svg\+xml;base64,([A-Za-z0-9+/=]+)'/.exec(init)?.[1];
    expect(logo, 'the top bar shows a logo').toBeDefined();
    const svg = Buffer.from(logo ?? '', 'base64').toString('utf8');
    expect(svg).toContain('>Waybill<');
    expect(svg).not.toMatch(/(https?:)?\/\/(?!www\.w3\.org\/2000\/svg)/);

    const page = (await h().inject('/docs')).body;
    expect(page).toContain('<title>Waybill API reference</title>');
    const sheets = assetUrls(page).filter((url) => url.endsWith('.css'));
    const css = await Promise.all(
      sheets.map(async (url) => (await h().inject(new URL(url, 'http://waybill.test/docs').pathname)).body),
    );
    expect(css.join('\n')).toMatch(/\.topbar \.download-url-wrapper\s*\{\s*display:\s*none/);
  });

  it('carries Waybill’s favicon, not Swagger’s', async () => {
    const page = (await h().inject('/docs')).body;
    const icons = [...page.matchAll(/<link rel="icon"[^>]*href="([^"]+)"/g)].map((m) => m[1] ?? '');
    expect(icons).toHaveLength(1);
    const icon = await h().inject(new URL(icons[0] ?? '', 'http://waybill.test/docs').pathname);
    expect(icon.statusCode).toBe(200);
    expect(icon.headers['content-type']).toMatch(/^image\/svg\+xml/);
    expect(icon.body).toContain('>W<');
  });

  it('is not an operation of the document', async () => {
    const doc = (await h().inject('/openapi.json')).json() as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths).filter((p) => p.startsWith('/docs'))).toStrictEqual([]);
  });
});
