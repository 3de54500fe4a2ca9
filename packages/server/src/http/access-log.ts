import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { writeAccessLine } from './access-line.js';

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
 * `query` with the value of every pair named plainly `key`, `secret` or `token` replaced (a name alone gains
 * `=[redacted]`), in one pass over the pairs: the common case, for a query in which no name can be
 * percent-encoded or contain `+`. (This is the access log's cost per request: a regular expression was 1.5% of
 * a `/dlr` request, the general path below several times that.)
 */
function redactPlainQuery(query: string): string {
  let out = '';
  let copied = 0;
  let start = 0;
  // The next `=` at or after `start`, found once for every pair it may end (so the pass stays linear).
  let nextEq = -1;
  for (;;) {
    let end = query.indexOf('&', start);
    if (end < 0) end = query.length;
    if (nextEq < start) {
      nextEq = query.indexOf('=', start);
      if (nextEq < 0) nextEq = query.length;
    }
    const nameEnd = Math.min(nextEq, end);
    const length = nameEnd - start;
    if (
      (length === 3 && query.startsWith('key', start)) ||
      (length === 6 && query.startsWith('secret', start)) ||
      (length === 5 && query.startsWith('token', start))
    ) {
      out += `${query.slice(copied, nameEnd)}=[redacted]`;
      copied = end;
    }
    if (end === query.length) break;
    start = end + 1;
  }
  return copied === 0 ? query : out + query.slice(copied);
}

/** The URL with the values of `key`, `secret` and `token` replaced, for logs. */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  // No name can be encoded without `%` or `+`: then one pass over the pairs finds every credential.
  if (url.indexOf('%', q) < 0 && url.indexOf('+', q) < 0) {
    return url.slice(0, q + 1) + redactPlainQuery(url.slice(q + 1));
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
  const url = redactUrl(line.url);
  const ms = Math.round(line.ms * 100) / 100;
  // pino's own bytes, without its general path, when the logger is plainly pino's (http/access-line.ts).
  if (writeAccessLine(log, line.reqId, line.method, url, line.status, ms, line.ip)) return;
  const fields = { method: line.method, url, status: line.status, ms, ip: line.ip };
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
