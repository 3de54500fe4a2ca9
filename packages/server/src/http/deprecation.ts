import type { FastifyInstance } from 'fastify';
import { isCredentialPair } from './access-log.js';

/**
 * Deprecation (RFC 9745), Sunset (RFC 8594) and the successor link on every response of the v1 endpoint,
 * errors included, so that any client on the old path learns where to go.
 */
export function registerDeprecationHeaders(app: FastifyInstance, deprecated: Date, sunset: Date): void {
  const deprecation = `@${Math.floor(deprecated.getTime() / 1000)}`;
  const sunsetHeader = sunset.toUTCString();
  app.addHook('onSend', (request, reply, payload, done) => {
    if (request.routeOptions.config.deprecatedV1) {
      reply.header('deprecation', deprecation);
      reply.header('sunset', sunsetHeader);
      reply.header('link', `<${successorUrl(request.url)}>; rel="successor-version"`);
    }
    done(null, payload);
  });
}

/** `/messages` with the same query, minus the credentials. */
export function successorUrl(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return '/messages';
  const kept = url
    .slice(q + 1)
    .split('&')
    .filter((pair) => pair !== '' && !isCredentialPair(pair));
  return kept.length > 0 ? `/messages?${kept.join('&')}` : '/messages';
}
