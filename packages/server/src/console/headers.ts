import type { FastifyReply } from 'fastify';

/** CONTRACT §13: no inline script or style, no framing, nothing from another origin. */
export const CONSOLE_CSP = "default-src 'self'; frame-ancestors 'none'";

/** Whether a request's path is the console's (`/console`, anything under it, or `/console` with a query). */
export const isConsolePath = (url: string): boolean =>
  url === '/console' || url.startsWith('/console/') || url.startsWith('/console?');

/**
 * The headers every answer under /console carries (CONTRACT §13; Cache-Control: no-store comes with every answer
 * of the server, http/protocol.ts). Called from the console's onSend hook, and by the router's own refusals
 * (the frameworkErrors app.ts gives Fastify), which run no hook.
 */
export function setConsoleHeaders(url: string, reply: FastifyReply): void {
  if (!isConsolePath(url)) return;
  reply.header('content-security-policy', CONSOLE_CSP);
  reply.header('referrer-policy', 'same-origin');
  reply.header('x-content-type-options', 'nosniff');
}
