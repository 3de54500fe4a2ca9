import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { PROBLEMS, type ProblemCode } from '../domain/errors.js';
import { sendProblem } from './problem.js';

/**
 * Requests that never reach a route: a head the HTTP parser refuses, a URL the router cannot decode, a path
 * segment too long for it. Each still gets a problem body (CONTRACT §11), never Fastify's default body, and
 * none of them echoes the request back.
 */

/** How long a client may take to send a complete request head before the connection is closed. */
export const HEAD_TIMEOUT_MS = 10_000;

/**
 * Node's server options: `connectionsCheckingInterval` makes the head timeout exact; a missing Host header is
 * refused by us (protocol.ts), with a problem body, rather than by Node with an empty 400.
 */
export const HTTP_SERVER_OPTIONS = {
  headersTimeout: HEAD_TIMEOUT_MS,
  connectionsCheckingInterval: 1_000,
  requireHostHeader: false,
};

/** Raw problem response for answers given before Fastify sees the request. */
function rawProblem(problem: ProblemCode, detail: string): { status: number; head: string; body: string } {
  const { status, title } = PROBLEMS[problem];
  const requestId = randomUUID();
  const body = JSON.stringify({ type: 'about:blank', title, status, detail, code: problem, requestId });
  const head =
    `HTTP/1.1 ${status} ${title}\r\n` +
    'Content-Type: application/problem+json; charset=utf-8\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    'Cache-Control: no-store\r\n' +
    `X-Request-Id: ${requestId}\r\n` +
    'Connection: close\r\n\r\n';
  return { status, head, body };
}

/**
 * An `Expect` other than `100-continue` cannot be met: Node answers 417 itself with an empty body unless a
 * listener takes over, so this one answers with a problem body.
 */
export function answerUnmetExpectations(app: FastifyInstance): void {
  app.server.on('checkExpectation', (_request: IncomingMessage, response: ServerResponse) => {
    const { head, body } = rawProblem('expectation_failed', 'only Expect: 100-continue is supported');
    response.socket?.end(head + body);
  });
}

/** Fastify's `frameworkErrors`: router failures before any route or hook runs. */
export function frameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  reply.header('x-request-id', request.id);
  reply.header('cache-control', 'no-store');
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    sendProblem(request, reply, 'uri_too_long', 'a path segment is longer than this server accepts');
    return;
  }
  if (error.code === 'FST_ERR_BAD_URL') {
    sendProblem(request, reply, 'invalid_request', 'the URL is not valid (a malformed percent-encoding?)');
    return;
  }
  request.log.error({ err: error }, 'router failure');
  sendProblem(
    request,
    reply,
    'internal',
    'an unexpected error occurred; the request id identifies it in the log',
  );
}

function clientErrorProblem(code: string | undefined): { problem: ProblemCode; detail: string } {
  switch (code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return {
        problem: 'request_timeout',
        detail: `the request head did not arrive within ${HEAD_TIMEOUT_MS / 1000} s`,
      };
    case 'HPE_HEADER_OVERFLOW':
      return { problem: 'headers_too_large', detail: 'the request head is larger than 16 KiB' };
    default:
      return { problem: 'invalid_request', detail: 'the request is not valid HTTP/1.1' };
  }
}

/**
 * Fastify's `clientErrorHandler`: the parser refused the bytes, so no request object exists. Answers with a
 * raw problem response and closes the connection; a socket that can no longer be written is just destroyed.
 */
export function clientErrorHandler(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const { problem, detail } = clientErrorProblem(error.code);
  const { head, body } = rawProblem(problem, detail);
  socket.end(head + body);
}
