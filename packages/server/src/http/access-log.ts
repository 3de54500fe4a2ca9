import type { FastifyInstance } from 'fastify';

// `token`: the intake token of a gateway route (CONTRACT §12).
const CREDENTIAL_PARAMS = new Set(['key', 'secret', 'token']);

/** True when a raw `name=value` query pair is `key`, `secret` or `token`, however its name was percent-encoded. */
export function isCredentialPair(pair: string): boolean {
  const eq = pair.indexOf('=');
  const rawName = eq < 0 ? pair : pair.slice(0, eq);
  try {
    return CREDENTIAL_PARAMS.has(decodeURIComponent(rawName.replace(/\+/g, ' ')));
  } catch {
    // An undecodable name cannot be one of ours.
    return false;
  }
}

/** The URL with the values of `key`, `secret` and `token` replaced, for logs. */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  const pairs = url
    .slice(q + 1)
    .split('&')
    .map((pair) => (isCredentialPair(pair) ? `${pair.split('=')[0]}=[redacted]` : pair));
  return `${url.slice(0, q)}?${pairs.join('&')}`;
}

/** One line per request, written when the response is done (Fastify's own two lines are turned off). */
export function registerAccessLog(app: FastifyInstance): void {
  app.addHook('onResponse', async (request, reply) => {
    request.log.info(
      {
        method: request.method,
        url: redactUrl(request.url),
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime * 100) / 100,
        ip: request.ip,
      },
      'request',
    );
  });
}
