import type { FastifyBaseLogger, FastifyInstance } from 'fastify';

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

/**
 * A credential pair whose name is written plainly (no escape, no `+`), with its value if any: the common case,
 * redacted without decoding every name.
 */
const PLAIN_CREDENTIAL = /(?<=^|&)(key|secret|token)(?:=[^&]*)?(?=&|$)/g;

/** The URL with the values of `key`, `secret` and `token` replaced, for logs. */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  // No name can be encoded without `%` or `+`: then one pass of a regular expression finds every credential.
  // (This is the access log's cost per request: the general path below is several times slower.)
  if (url.indexOf('%', q) < 0 && url.indexOf('+', q) < 0) {
    return url.slice(0, q + 1) + url.slice(q + 1).replace(PLAIN_CREDENTIAL, '$1=[redacted]');
  }
  const pairs = url
    .slice(q + 1)
    .split('&')
    .map((pair) => (isCredentialPair(pair) ? `${pair.split('=')[0]}=[redacted]` : pair));
  return `${url.slice(0, q)}?${pairs.join('&')}`;
}

/** What the access log says of one answered request. */
export interface AccessLogLine {
  /** The request's id, when `log` is not already the request's own logger (which carries it). */
  reqId?: string;
  method: string;
  url: string;
  status: number;
  /** Milliseconds from the request's arrival to its answer. */
  ms: number;
  ip: string | undefined;
}

/**
 * Writes the access-log line of one request, credentials removed from its URL: the one writer of the route
 * pipeline's hook below and of the prepared /dlr path (http/prepared-dlr.ts), so both write the same line.
 * A `reqId` given in the line goes first, where a request logger's binding would be: the same bytes either way.
 */
export function logRequest(log: FastifyBaseLogger, line: AccessLogLine): void {
  const fields = {
    method: line.method,
    url: redactUrl(line.url),
    status: line.status,
    ms: Math.round(line.ms * 100) / 100,
    ip: line.ip,
  };
  log.info(line.reqId === undefined ? fields : { reqId: line.reqId, ...fields }, 'request');
}

/** One line per request, written when the response is done (Fastify's own two lines are turned off). */
export function registerAccessLog(app: FastifyInstance): void {
  app.addHook('onResponse', (request, reply, done) => {
    logRequest(request.log, {
      method: request.method,
      url: request.url,
      status: reply.statusCode,
      ms: reply.elapsedTime,
      ip: request.ip,
    });
    done();
  });
}
