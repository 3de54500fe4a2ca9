import type { FastifyContextConfig, FastifyInstance } from 'fastify';
import { ApiError } from '../domain/errors.js';

/** Request lines longer than this are refused with 414 (Node itself answers 431 past 16 KiB of headers). */
export const MAX_REQUEST_LINE = 8 * 1024;

/**
 * Rules every response obeys: an `X-Request-Id`, `Cache-Control: no-store` (answers carry account data and
 * change as receipts arrive) and the 414 refusal of overlong request lines.
 */
export function registerProtocol(app: FastifyInstance): void {
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
    reply.header('cache-control', 'no-store');
    // "<METHOD> <url> HTTP/1.1" as it arrived on the wire.
    if (request.method.length + request.url.length + 10 > MAX_REQUEST_LINE) {
      throw new ApiError('uri_too_long', `the request line is longer than ${MAX_REQUEST_LINE} bytes`);
    }
  });
}

const SANE_REQUEST_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

/** Keeps the caller's `X-Request-Id` when it is sane (printable, bounded), else mints one. */
export function requestIdFrom(header: string | string[] | undefined): string | null {
  return typeof header === 'string' && SANE_REQUEST_ID.test(header) ? header : null;
}

const ALL_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

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
    handler: async (request, reply) => {
      reply.header('allow', allow.join(', '));
      throw new ApiError(
        'method_not_allowed',
        `${request.method} is not allowed here; use ${allow.join(' or ')}`,
      );
    },
  });
}
