import type { FastifyError, FastifyInstance } from 'fastify';
import { ApiError } from '../domain/errors.js';
import { sendApiError, sendProblem } from './problem.js';

/**
 * Maps every failure to a stable body: our own {@link ApiError}s as raised, Fastify's protocol errors to
 * their problem codes, and anything unexpected to a generic 500 that shows no internals (the log has them).
 */
export function registerErrorHandling(app: FastifyInstance): void {
  app.setNotFoundHandler((request, reply) => {
    sendProblem(request, reply, 'not_found', `no route for ${request.method} ${request.url.split('?')[0]}`);
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof ApiError) return sendApiError(request, reply, error);
    switch (error.code) {
      case 'FST_ERR_CTP_BODY_TOO_LARGE':
        return sendProblem(request, reply, 'payload_too_large', 'the request body is larger than 5 MiB');
      case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
        return sendProblem(request, reply, 'invalid_request', 'the request body must be application/json');
      case 'FST_ERR_CTP_EMPTY_JSON_BODY':
        return sendProblem(
          request,
          reply,
          'invalid_request',
          'the request body is empty; send a JSON object',
        );
      case 'FST_ERR_CTP_INVALID_JSON_BODY':
        return sendProblem(request, reply, 'invalid_request', 'the request body is not valid JSON');
    }
    if (error.validation) {
      const where = error.validationContext ?? 'request';
      const detail = error.validation
        .slice(0, 10)
        .map((v) => `${where}${v.instancePath || ''} ${v.message ?? 'is invalid'}`)
        .join('; ');
      return sendProblem(request, reply, 'invalid_request', detail);
    }
    if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
      // Any other client error Fastify raises (a malformed header, say): keep its status, hide its internals.
      return sendProblem(request, reply, 'invalid_request', 'the request is malformed');
    }
    request.log.error({ err: error }, 'unexpected failure');
    if (request.routeOptions.config.errorStyle === 'dlr') {
      return sendApiError(request, reply, new ApiError('internal', 'internal error', { dlrCode: 11 }));
    }
    return sendProblem(
      request,
      reply,
      'internal',
      'an unexpected error occurred; the request id identifies it in the log',
    );
  });
}
