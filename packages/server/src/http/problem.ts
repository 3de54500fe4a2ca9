import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, DLR_FAILURES, type DlrFailureCode, PROBLEMS, type ProblemCode } from '../domain/errors.js';

/** An RFC 9457 problem body with our extension members `code` and `requestId`. */
export function problemBody(
  code: ProblemCode,
  detail: string,
  requestId: string,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  const { status, title } = PROBLEMS[code];
  return { type: 'about:blank', title, status, detail, code, requestId, ...extra };
}

/** Sends an RFC 9457 problem body with our extension members `code` and `requestId`. */
export function sendProblem(
  request: FastifyRequest,
  reply: FastifyReply,
  code: ProblemCode,
  detail: string,
  extra: Record<string, unknown> = {},
): FastifyReply {
  return reply
    .code(PROBLEMS[code].status)
    .type('application/problem+json')
    .send(problemBody(code, detail, request.id, extra));
}

/** The status query's failure object `{code, descr}`. */
export function dlrFailureBody(code: DlrFailureCode): { code: DlrFailureCode; descr: string } {
  return { code, descr: DLR_FAILURES[code].descr };
}

/** Protocol-level refusals always use problem bodies, even on /dlr (CONTRACT §2). */
const PROTOCOL_PROBLEMS: readonly ProblemCode[] = [
  'method_not_allowed',
  'payload_too_large',
  'uri_too_long',
  'not_found',
];

/** True when a route of the /dlr style answers this error with `{code, descr}` rather than a problem body. */
export const answersInDlrStyle = (error: ApiError): boolean => !PROTOCOL_PROBLEMS.includes(error.problem);

/** Sends the status query's failure object `{code, descr}` with its HTTP status. */
export function sendDlrFailure(reply: FastifyReply, code: DlrFailureCode): FastifyReply {
  return reply.code(DLR_FAILURES[code].status).type('application/json').send(dlrFailureBody(code));
}

/** Renders an {@link ApiError} in the style of the route that raised it. */
export function sendApiError(request: FastifyRequest, reply: FastifyReply, error: ApiError): FastifyReply {
  if (error.retryAfterSeconds !== null) reply.header('retry-after', String(error.retryAfterSeconds));
  if (error.problem === 'unauthorized' && !reply.hasHeader('www-authenticate')) {
    reply.header('www-authenticate', 'Basic realm="waybill"');
  }
  if (request.routeOptions.config.errorStyle === 'dlr' && answersInDlrStyle(error)) {
    if (error.problem === 'unauthorized') reply.removeHeader('www-authenticate');
    return sendDlrFailure(reply, error.dlrCode);
  }
  return sendProblem(request, reply, error.problem, error.message, error.extra);
}

export { ApiError };
