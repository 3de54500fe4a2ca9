import type { FastifyInstance } from 'fastify';

/** What a browser may send and read on a cross-origin call of the query endpoints. */
const ALLOW_METHODS = 'GET, HEAD';
const ALLOW_HEADERS = 'Authorization, X-Request-Id';
const EXPOSE_HEADERS = 'X-Request-Id, RateLimit, RateLimit-Policy, Retry-After, Deprecation, Sunset, Link';
/** How long a browser may reuse a preflight answer, in seconds. */
const PREFLIGHT_MAX_AGE = 600;

/**
 * Opt-in CORS (`WAYBILL_CORS_ORIGINS`) for the read-only query endpoints the SDK calls, so that a web page of
 * one of the listed origins can use the SDK. Only exact origins are allowed, never `*`, and never the operator
 * API or /metrics. No cookie is involved (credentials travel in the Authorization header or the query), so
 * `Access-Control-Allow-Credentials` is not sent. With no origin listed nothing changes: a preflight gets the
 * 405 of any other method.
 */
export function registerCors(
  app: FastifyInstance,
  origins: readonly string[],
  paths: readonly string[],
): void {
  if (origins.length === 0) return;
  const allowed = new Set(origins);
  const corsPaths = new Set(paths);
  app.addHook('onRequest', async (request, reply) => {
    // Registered only when origins are configured, so async costs nothing by default.
    if (!corsPaths.has(request.routeOptions.url ?? '')) return;
    reply.header('vary', 'Origin');
    const origin = request.headers.origin;
    if (origin === undefined || !allowed.has(origin)) return;
    reply.header('access-control-allow-origin', origin);
    const preflight = request.method === 'OPTIONS' && request.headers['access-control-request-method'];
    if (!preflight) {
      reply.header('access-control-expose-headers', EXPOSE_HEADERS);
      return;
    }
    reply.header('vary', 'Origin, Access-Control-Request-Method, Access-Control-Request-Headers');
    reply.header('access-control-allow-methods', ALLOW_METHODS);
    reply.header('access-control-allow-headers', ALLOW_HEADERS);
    reply.header('access-control-max-age', String(PREFLIGHT_MAX_AGE));
    return reply.code(204).send();
  });
}
