import type { IncomingMessage } from 'node:http';
import proxyAddr from '@fastify/proxy-addr';

/** Fastify's `trustProxy` as app.ts gives it (a hop count is already a function there). */
export type TrustProxy = boolean | string[] | ((address: string, hop: number) => boolean);

/**
 * The caller's address exactly as Fastify's `request.ip` gives it under the same `trustProxy` (its
 * lib/request.js, with the same proxy-addr): the socket's peer when no proxy is trusted, else the nearest
 * `X-Forwarded-For` address that is not a trusted proxy. The prepared /dlr path (http/prepared-dlr.ts) reads
 * it here, so that a whitelist judges the same address on both paths; a test compares them.
 */
export function callerAddress(trust: TrustProxy): (request: IncomingMessage) => string | undefined {
  if (trust === false) return (request) => request.socket.remoteAddress;
  const trusted =
    trust === true ? () => true : typeof trust === 'function' ? trust : proxyAddr.compile(trust);
  return (request) => {
    const addresses = proxyAddr.all(request, trusted);
    return addresses[addresses.length - 1];
  };
}
