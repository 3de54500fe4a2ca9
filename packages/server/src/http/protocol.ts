import { METHODS } from 'node:http';
import type { FastifyContextConfig, FastifyInstance } from 'fastify';
import { ApiError } from '../domain/errors.js';

/** Request lines longer than this are refused with 414 (Node itself answers 431 past 16 KiB of headers). */
export const MAX_REQUEST_LINE = 8 * 1024;

/**
 * Rules every response obeys: an `X-Request-Id`, `Cache-Control: no-store` (answers carry account data and
 * change as receipts arrive) and the 414 refusal of overlong request lines.
 */
export function registerProtocol(app: FastifyInstance): void {
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    reply.header('cache-control', 'no-store');
    // HTTP/1.1 requires Host (RFC 9112 §3.2); Node's own refusal would have no body, so it is ours.
    if (request.raw.httpVersion === '1.1' && request.headers.host === undefined) {
      done(new ApiError('invalid_request', 'the Host header is required'));
      return;
    }
    // "<METHOD> <url> HTTP/1.1" as it arrived on the wire.
    if (request.method.length + request.url.length + 10 > MAX_REQUEST_LINE) {
      done(new ApiError('uri_too_long', `the request line is longer than ${MAX_REQUEST_LINE} bytes`));
      return;
    }
    done();
  });
}

const SANE_REQUEST_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

/** Keeps the caller's `X-Request-Id` when it is sane (printable, bounded), else mints one. */
export function requestIdFrom(header: string | string[] | undefined): string | null {
  return typeof header === 'string' && SANE_REQUEST_ID.test(header) ? header : null;
}

/**
 * Every method Node's parser accepts but CONNECT (a tunnel, never routed): a known path answers 405 to all of
 * them, not 404 or 400 to the unusual ones (TRACE, PROPFIND, QUERY…).
 */
export const ALL_METHODS = METHODS.filter((m) => m !== 'CONNECT');

/** Makes Fastify route every method of {@link ALL_METHODS}; its own set has only the common ones. */
export function acceptAllMethods(app: FastifyInstance): void {
  for (const method of ALL_METHODS) {
    if (!app.supportedMethods.includes(method)) app.addHttpMethod(method);
  }
}

/** Registers a 405 with `Allow` for every method a path does not serve (GET also serves HEAD). */
export function methodNotAllowed(
  app: FastifyInstance,
  url: string,
  allowed: readonly string[],
  config: FastifyContextConfig = {},
): void {
  const allow = allowed.includes('GET') ? [...new Set([...allowed, 'HEAD'])] : [...allowed];
  const refused = ALL_METHODS.filter((m) => !allow.includes(m));
  app.route({
    method: refused,
    url,
    config,
    schema: { hide: true },
    // Refused in onRequest, before any body is read or parsed: a malformed body must not turn a 405 into a 400.
    onRequest: async (request, reply) => {
      reply.header('allow', allow.join(', '));
      throw new ApiError(
        'method_not_allowed',
        `${request.method} is not allowed here; use ${allow.join(' or ')}`,
      );
    },
    handler: async () => {
      throw new Error('unreachable: onRequest refuses every request of this route');
    },
  });
}
