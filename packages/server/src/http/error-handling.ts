import type {
  FastifyBaseLogger,
  FastifyError,
  FastifyInstance,
  FastifyRequest,
  FastifySchemaValidationError,
} from 'fastify';
import { ApiError } from '../domain/errors.js';
import { StoreUnavailableError, UnknownAccountError } from '../store/store.js';
import { sendApiError, sendProblem } from './problem.js';

/** What a 503 asks the client to wait: long enough for a database failover, short enough to notice recovery. */
const UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

/**
 * Maps every failure to a stable body: our own {@link ApiError}s as raised, Fastify's protocol errors to
 * their problem codes, and anything unexpected to a generic 500 that shows no internals (the log has them).
 */
export function registerErrorHandling(app: FastifyInstance): void {
  app.setNotFoundHandler((request, reply) => {
    sendProblem(request, reply, 'not_found', `no route for ${request.method} ${request.url.split('?')[0]}`);
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (!isOwnFailure(error)) {
      switch (error.code) {
        case 'FST_ERR_CTP_BODY_TOO_LARGE':
          return sendProblem(request, reply, 'payload_too_large', 'the request body is larger than 5 MiB');
        case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
          return sendProblem(request, reply, 'unsupported_media_type', mediaTypeDetail(request));
      }
      if (error.validation) {
        const { detail, param } = describeValidation(error.validationContext ?? 'request', error.validation);
        return sendProblem(request, reply, 'invalid_request', detail, param === undefined ? {} : { param });
      }
      if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
        // Any other client error Fastify raises (a malformed header, say): keep its status, hide its internals.
        return sendProblem(request, reply, 'invalid_request', 'the request is malformed');
      }
    }
    return sendApiError(request, reply, apiErrorOf(error, request.log));
  });
}

/** Failures of our own making, as opposed to Fastify's protocol and validation errors. */
const isOwnFailure = (error: unknown): boolean =>
  error instanceof ApiError || error instanceof UnknownAccountError || error instanceof StoreUnavailableError;

/**
 * The {@link ApiError} a failure that is not Fastify's own answers with: ours as raised, a store's as the
 * client should see it, and anything unexpected as a generic 500 that shows no internals (the log, written
 * here, has them). The route pipeline's error handler and the prepared /dlr path (http/prepared-dlr.ts) both
 * map failures through it.
 */
export function apiErrorOf(error: unknown, log: FastifyBaseLogger): ApiError {
  if (error instanceof ApiError) return error;
  // An ingest whose account was deleted after the route looked it up: the same 404 the lookup would answer.
  if (error instanceof UnknownAccountError) return new ApiError('not_found', error.message);
  if (error instanceof StoreUnavailableError) {
    log.warn({ err: error }, 'database unavailable');
    // /dlr keeps the spec's code 11 (its dlrCode); every other endpoint a 503 the client may retry.
    return new ApiError('unavailable', 'the database is unavailable; retry shortly', {
      retryAfterSeconds: UNAVAILABLE_RETRY_AFTER_SECONDS,
    });
  }
  log.error({ err: error }, 'unexpected failure');
  return new ApiError('internal', 'an unexpected error occurred; the request id identifies it in the log', {
    dlrCode: 11,
  });
}

/** Names the content type that was sent (bounded, so a huge header is not echoed back whole). */
function mediaTypeDetail(request: FastifyRequest): string {
  const sent = request.headers['content-type'];
  if (sent === undefined || sent.trim() === '') {
    return 'the request has a body but no Content-Type; send it as application/json';
  }
  const shown = sent.length > 100 ? `${sent.slice(0, 100)}…` : sent;
  return `Content-Type ${JSON.stringify(shown)} is not supported; send the body as application/json`;
}

/** `/ipWhitelist/2` → `ipWhitelist[2]`, `/sms/network` → `sms.network`: the field as a caller writes it. */
export function fieldPath(pointer: string, child?: string): string {
  const segments = pointer.split('/').slice(1);
  if (child !== undefined) segments.push(child);
  return segments
    .map((segment, i) => {
      const name = segment.replace(/~1/g, '/').replace(/~0/g, '~');
      if (/^\d+$/.test(name)) return `[${name}]`;
      return i === 0 ? name : `.${name}`;
    })
    .join('');
}

/**
 * The message of a schema error, for a person: an enum names the values it allows (`must be one of pending, sent`)
 * rather than ajv's bare "must be equal to one of the allowed values".
 */
export function schemaMessage(e: {
  keyword: string;
  params?: unknown;
  message?: string | undefined;
}): string {
  const allowed = (e.params as { allowedValues?: unknown } | undefined)?.allowedValues;
  if (e.keyword === 'enum' && Array.isArray(allowed)) {
    return `must be one of ${allowed.map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join(', ')}`;
  }
  return e.message ?? 'is invalid';
}

/**
 * One sentence for the schema errors of a request part, naming every field at fault (an unknown field by its
 * name, a missing one by its name), and the `param` member when exactly one field is at fault.
 */
export function describeValidation(
  where: string,
  errors: readonly FastifySchemaValidationError[],
): { detail: string; param?: string } {
  const parts: string[] = [];
  const fields = new Set<string>();
  // A union (`string or null`) fails once per member and once as a whole: say it once, with its types.
  const unions = new Set(errors.filter((e) => e.keyword === 'anyOf').map((e) => e.instancePath));
  const unionTypes = new Map<string, string[]>();
  for (const e of errors) {
    if (unions.has(e.instancePath) && e.keyword === 'type') {
      const type = String((e.params as { type?: unknown }).type);
      unionTypes.set(e.instancePath, [...(unionTypes.get(e.instancePath) ?? []), type]);
    }
  }
  // A member of the right type that breaks one of its own rules (a string too long) says what that rule is.
  const ruleBroken = new Set(
    errors
      .filter((e) => unions.has(e.instancePath) && e.keyword !== 'type' && e.keyword !== 'anyOf')
      .map((e) => e.instancePath),
  );
  const shown = errors
    .filter((e) => {
      if (!unions.has(e.instancePath)) return true;
      return ruleBroken.has(e.instancePath)
        ? e.keyword !== 'type' && e.keyword !== 'anyOf'
        : e.keyword === 'anyOf';
    })
    .map((e) =>
      e.keyword === 'anyOf' && unionTypes.has(e.instancePath)
        ? { ...e, message: `must be ${unionTypes.get(e.instancePath)?.join(' or ')}` }
        : e,
    );
  for (const e of shown.slice(0, 10)) {
    const params = e.params as { additionalProperty?: string; missingProperty?: string };
    if (e.keyword === 'additionalProperties' && params.additionalProperty !== undefined) {
      const field = fieldPath(e.instancePath, params.additionalProperty);
      fields.add(field);
      parts.push(`${where} has an unknown field "${field}"`);
    } else if (e.keyword === 'required' && params.missingProperty !== undefined) {
      const field = fieldPath(e.instancePath, params.missingProperty);
      fields.add(field);
      parts.push(`${where} is missing the required field "${field}"`);
    } else if (e.instancePath === '') {
      parts.push(`${where} ${schemaMessage(e)}`);
    } else {
      const field = fieldPath(e.instancePath);
      fields.add(field);
      parts.push(`${where} field "${field}" ${schemaMessage(e)}`);
    }
  }
  const detail = [...new Set(parts)].join('; ');
  const [only] = fields;
  return fields.size === 1 && only !== undefined ? { detail, param: only } : { detail };
}
