import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, DLR_FAILURES, type DlrFailureCode, PROBLEMS, type ProblemCode } from '../domain/errors.js';

/** Sends an RFC 9457 problem body with our extension members `code` and `requestId`. */
export function sendProblem(
  request: FastifyRequest,
  reply: FastifyReply,
  code: ProblemCode,
  detail: string,
  extra: Record<string, unknown> = {},
): FastifyReply {
  const { status, title } = PROBLEMS[code];
  return reply
    .code(status)
    .type('application/problem+json')
    .send({ type: 'about:blank', title, status, detail, code, requestId: request.id, ...extra });
}

/** Sends the status query's failure object `{code, descr}` with its HTTP status. */
export function sendDlrFailure(reply: FastifyReply, code: DlrFailureCode): FastifyReply {
  const { descr, status } = DLR_FAILURES[code];
  return reply.code(status).type('application/json').send({ code, descr });
}

/** Renders an {@link ApiError} in the style of the route that raised it. */
export function sendApiError(request: FastifyRequest, reply: FastifyReply, error: ApiError): FastifyReply {
  if (error.retryAfterSeconds !== null) reply.header('retry-after', String(error.retryAfterSeconds));
  if (error.problem === 'unauthorized' && !reply.hasHeader('www-authenticate')) {
    reply.header('www-authenticate', 'Basic realm="waybill"');
  }
  // Protocol-level refusals always use problem bodies, even on /dlr (CONTRACT §2).
  const protocol = ['method_not_allowed', 'payload_too_large', 'uri_too_long', 'not_found'].includes(
    error.problem,
  );
  if (request.routeOptions.config.errorStyle === 'dlr' && !protocol) {
    if (error.problem === 'unauthorized') reply.removeHeader('www-authenticate');
    return sendDlrFailure(reply, error.dlrCode);
  }
  return sendProblem(request, reply, error.problem, error.message, error.extra);
}

export { ApiError };
