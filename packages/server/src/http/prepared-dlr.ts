import { randomUUID } from 'node:crypto';
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { FastifyBaseLogger } from 'fastify';
import type { Caller, HeaderSink } from '../auth/authenticate.js';
import type { AppContext } from '../context.js';
import { DLR_FAILURES, type DlrFailureCode, PROBLEMS } from '../domain/errors.js';
import type { RawQuery } from '../domain/query-params.js';
import type { DlrItem } from '../domain/wire.js';
import { logRequest } from './access-log.js';
import type { TrustProxy } from './caller-address.js';
import { callerAddress } from './caller-address.js';
import { apiErrorOf } from './error-handling.js';
import { answersInDlrStyle, dlrFailureBody, problemBody } from './problem.js';
import { MAX_REQUEST_LINE, requestIdFrom } from './protocol.js';
import { parseQueryString } from './query-string.js';

/** The work of `GET /dlr` after routing: routes/dlr.ts `queryDlr`, the one the route calls. */
export type DlrQuery = (
  ctx: AppContext,
  query: RawQuery,
  caller: Caller,
  headers: HeaderSink,
) => DlrItem[] | DlrFailureCode | Promise<DlrItem[] | DlrFailureCode>;

export interface PreparedDlrOptions {
  ctx: AppContext;
  query: DlrQuery;
  /** The app's logger: the access-log line and failures are written through a child with the request's id. */
  log: FastifyBaseLogger;
  accessLog: boolean;
  trustProxy: TrustProxy;
  /** True once the server drains: its answers then carry `Connection: close`, which the route pipeline adds. */
  draining: () => boolean;
}

/** The answer's headers, in the order the route pipeline sets them (protocol.ts first, the body's last). */
class AnswerHeaders implements HeaderSink {
  readonly fields: OutgoingHttpHeaders;
  constructor(requestId: string) {
    this.fields = { 'x-request-id': requestId, 'cache-control': 'no-store' };
  }
  header(name: string, value: string): this {
    this.fields[name] = value;
    return this;
  }
}

const JSON_TYPE = 'application/json; charset=utf-8';
const PROBLEM_TYPE = 'application/problem+json; charset=utf-8';

/**
 * The prepared path of `GET /dlr` (issue 19): the busiest request, answered on Node's HTTP server before
 * Fastify builds its request, reply, logger child and hook chain, which cost about as much as the request's own
 * work. It is no second copy of the endpoint: it calls the route's own `queryDlr` (parameters, the credential
 * check with its whitelist, lockout and rate limit, quota, the store), maps failures through the error handler's
 * `apiErrorOf`, reads the query with the router's parser and the caller's address as `request.ip` does, writes
 * the access log's line through `logRequest` and counts the request in the same metrics. It answers the bytes
 * the route answers; a test sends the same requests both ways and compares status, headers, body and log line.
 *
 * It takes only what it can answer exactly as the route would: a `GET` of the path `/dlr` with a query, a Host
 * (HTTP/1.1), a request line within bounds, no `Expect`, a known caller address, and not while draining. Every
 * other request, and every request when CORS is configured (its headers are the route pipeline's), returns
 * false and goes to Fastify.
 */
export function preparedDlr(
  options: PreparedDlrOptions,
): (request: IncomingMessage, response: ServerResponse) => boolean {
  const { ctx, query, log, accessLog, draining } = options;
  const addressOf = callerAddress(options.trustProxy);
  return (request, response) => {
    const url = request.url;
    if (request.method !== 'GET' || url === undefined || !url.startsWith('/dlr?')) return false;
    if (request.headers.host === undefined && request.httpVersion === '1.1') return false;
    // "GET <url> HTTP/1.1", as protocol.ts measures it.
    if (url.length + 13 > MAX_REQUEST_LINE || request.headers.expect !== undefined || draining())
      return false;
    const ip = addressOf(request);
    if (ip === undefined) return false;
    const started = performance.now();
    const requestId = requestIdFrom(request.headers['x-request-id']) ?? randomUUID();
    const headers = new AnswerHeaders(requestId);
    const finish = (status: number, type: string, body: string): void => {
      headers.fields['content-type'] = type;
      headers.fields['content-length'] = Buffer.byteLength(body);
      response.writeHead(status, headers.fields);
      response.end(body);
      const ms = performance.now() - started;
      ctx.metrics.observeRequest('/dlr', 'GET', status, ms / 1000);
      if (accessLog) logRequest(log, { reqId: requestId, method: 'GET', url, status, ms, ip });
    };
    const answer = (outcome: DlrItem[] | DlrFailureCode): void => {
      if (typeof outcome !== 'number') finish(200, JSON_TYPE, JSON.stringify(outcome));
      else finish(DLR_FAILURES[outcome].status, JSON_TYPE, JSON.stringify(dlrFailureBody(outcome)));
    };
    const refuse = (thrown: unknown): void => {
      // The request's logger, as the route pipeline gives the error handler.
      const error = apiErrorOf(thrown, log.child({ reqId: requestId }));
      if (error.retryAfterSeconds !== null) headers.header('retry-after', String(error.retryAfterSeconds));
      if (answersInDlrStyle(error)) {
        const code = error.dlrCode;
        finish(DLR_FAILURES[code].status, JSON_TYPE, JSON.stringify(dlrFailureBody(code)));
      } else {
        const body = problemBody(error.problem, error.message, requestId, error.extra);
        finish(PROBLEMS[error.problem].status, PROBLEM_TYPE, JSON.stringify(body));
      }
    };
    const failed = (error: unknown): void => {
      // Writing the answer failed (the socket is gone): nothing is left to answer, but the log keeps it.
      log.error({ reqId: requestId, err: error }, 'unexpected failure');
      response.destroy();
    };
    // queryDlr answers at once when it can (a cached account, SQLite), else with a promise; it may also throw.
    let outcome: ReturnType<DlrQuery>;
    try {
      outcome = query(ctx, parseQueryString(url.slice(5)) as RawQuery, { ip }, headers);
    } catch (thrown) {
      outcome = Promise.reject(thrown);
    }
    if (outcome instanceof Promise) {
      outcome.then(answer, refuse).catch(failed);
      return true;
    }
    try {
      answer(outcome);
    } catch (error) {
      failed(error);
    }
    return true;
  };
}
