import type { FastifySwaggerUiOptions } from '@fastify/swagger-ui';

/**
 * Waybill's face on the API reference at /docs (swagger-ui through @fastify/swagger-ui): its name where the
 * Fastify logo was, no "Explore" box (it would load any URL's document into a page that carries this server's
 * name), its own favicon. Every asset is served from /docs/static/theme, since the page's Content-Security-Policy
 * allows no other origin (app.ts); the logo is a data: image, which that policy allows.
 */

/** The wordmark in the top bar: the name, in the bar's white, on any system's sans-serif. */
const LOGO_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="260" height="40" viewBox="0 0 260 40">
<title>Waybill API reference</title>
<text x="0" y="29" fill="#ffffff" font-family="Helvetica, Arial, sans-serif" font-size="26" font-weight="700">Waybill</text>
<text x="112" y="29" fill="#c8d3df" font-family="Helvetica, Arial, sans-serif" font-size="17">API reference</text>
</svg>
`;

/** A "W" on the top bar's blue, for the browser tab. */
const FAVICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="32" height="32" viewBox="0 0 32 32">
<rect width="32" height="32" rx="6" fill="#1f3a5f"/>
<text x="16" y="23" fill="#ffffff" font-family="Helvetica, Arial, sans-serif" font-size="20" font-weight="700" text-anchor="middle">W</text>
</svg>
`;

/** Hides the "Explore" box (the URL field and its button) and gives the bar Waybill's blue. */
const THEME_CSS = `.swagger-ui .topbar { background-color: #1f3a5f; }
.swagger-ui .topbar .download-url-wrapper { display: none !important; }
.swagger-ui .topbar a { max-width: none; }
`;

/** The `logo` and `theme` options of @fastify/swagger-ui. */
export const DOCS_BRANDING: Pick<FastifySwaggerUiOptions, 'logo' | 'theme'> = {
  logo: { type: 'image/svg+xml', content: Buffer.from(LOGO_SVG), href: '/docs', target: '_self' },
  theme: {
    title: 'Waybill API reference',
    css: [{ filename: 'waybill.css', content: THEME_CSS }],
    favicon: [
      {
        filename: 'favicon.svg',
        rel: 'icon',
        sizes: 'any',
        type: 'image/svg+xml',
        content: Buffer.from(FAVICON_SVG),
      },
    ],
  },
};
