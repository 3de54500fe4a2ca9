/**
 * Every error the SDK throws. One base class, `ApiError` for answers of the service (with one subclass per
 * failure code of the spec, plus rate limiting), and transport errors for requests that got no answer.
 */

// A registered symbol survives duplicate copies of the package (two versions in one bundle), where
// `instanceof` does not; the guards below accept an error that carries it and has the expected name.
const BRAND = Symbol.for('@waybill/client.error');

/**
 * Base class of every error thrown by `@waybill/client`.
 *
 * @example
 * ```ts
 * try {
 *   await client.dlr.get('m-1');
 * } catch (err) {
 *   if (isWaybillError(err)) console.error('Waybill said no:', err.message);
 *   else throw err;
 * }
 * ```
 */
export class WaybillError extends Error {
  override readonly name: string = 'WaybillError';
  /**
   * What led to this error, when something did: what `fetch` threw (`ConnectionError`), the signal's reason
   * (`AbortError`), the 404 behind an `UnsupportedByServerError`. Declared here, not only inherited from the
   * ES2022 `Error`, so that it is there for projects whose `lib` is older.
   */
  declare cause?: unknown;

  constructor(message?: string, options?: WaybillErrorOptions) {
    super(message, options);
    Object.defineProperty(this, BRAND, { value: true });
  }
}

/**
 * The second argument of the error constructors: ES2022's `ErrorOptions`, spelled out so that the SDK's
 * declarations compile with an older `lib` (ES2020, say) too.
 */
export interface WaybillErrorOptions {
  /** What led to the error; becomes its `cause`. */
  cause?: unknown;
}

/** Everything the service told us about a failure; the constructor argument of `ApiError`. */
export interface ApiErrorInit {
  /** HTTP status of the response (a failure body can arrive with 200). */
  status: number;
  /** Spec failure code (§7), 429 for rate limiting, else the HTTP status. */
  code: number;
  /** Human-readable description: the spec's `descr`, or a problem's `detail` / `title`. */
  descr: string;
  /** `X-Request-Id` of the response (or `requestId` of a problem body). */
  requestId?: string | undefined;
  /** Stable slug of an RFC 9457 problem body (`unauthorized`, `ip_not_allowed`, …). */
  problemCode?: string | undefined;
  /** The parameter at fault, when a problem body names one (its `param` member: `size`, `cursor`, …). */
  param?: string | undefined;
  /** Parsed response body, as received. */
  body?: unknown;
  /** Response headers. */
  headers?: Headers | undefined;
  /** Seconds to wait before trying again, when the service said so. */
  retryAfterSeconds?: number | undefined;
}

/**
 * The service answered with a failure. `code` is the spec's failure code (2, 3, 4, 5, 9, 11, 20), or 429
 * when rate limited; for a problem answer with no spec equivalent (404, 405, 410, 413, 414) it is the HTTP
 * status. Catch a subclass to handle one kind.
 *
 * @example
 * ```ts
 * try {
 *   await client.messages.get(['m-1']);
 * } catch (err) {
 *   if (isApiError(err)) console.error(err.code, err.descr, err.problemCode, err.param, err.requestId);
 * }
 * ```
 */
export class ApiError extends WaybillError {
  override readonly name: string = 'ApiError';
  readonly status: number;
  readonly code: number;
  readonly descr: string;
  readonly requestId: string | undefined;
  readonly problemCode: string | undefined;
  /**
   * The name of the one parameter at fault, as the request spelled it (`size`, `cursor`, `channelUserId`,
   * `after`, `limit`, …), when the service's problem body names one (its `param` member, mostly on a 400
   * `invalid_request`). `undefined` when the fault is a combination of parameters or several of them (`descr`
   * names them then), and for `/dlr` failures, whose `{code, descr}` bodies never name one.
   */
  readonly param: string | undefined;
  readonly body: unknown;
  readonly headers: Headers;

  constructor(init: ApiErrorInit) {
    const where = [`HTTP ${init.status}`, init.requestId === undefined ? '' : `request ${init.requestId}`]
      .filter(Boolean)
      .join(', ');
    super(`${init.descr} (code ${init.problemCode ?? init.code}, ${where})`);
    this.status = init.status;
    this.code = init.code;
    this.descr = init.descr;
    this.requestId = init.requestId;
    this.problemCode = init.problemCode;
    this.param = init.param;
    this.body = init.body;
    this.headers = init.headers ?? new Headers();
  }
}

/** Code 2: a required parameter was missing or empty. */
export class MissingParametersError extends ApiError {
  override readonly name: string = 'MissingParametersError';
  declare readonly code: 2;
}

/** Code 3: a parameter was malformed (or given twice); `invalid_request` problems. */
export class InvalidParametersError extends ApiError {
  override readonly name: string = 'InvalidParametersError';
  declare readonly code: 3;
}

/** Code 4: the key or the secret is wrong; `unauthorized` problems. */
export class InvalidCredentialsError extends ApiError {
  override readonly name: string = 'InvalidCredentialsError';
  declare readonly code: 4;
}

/** Code 5: the caller's address is not on the account's IP whitelist; `ip_not_allowed` problems. */
export class UnauthorizedIpError extends ApiError {
  override readonly name: string = 'UnauthorizedIpError';
  declare readonly code: 5;
}

/** Code 9: balance plus credit limit is below zero. */
export class QuotaExceededError extends ApiError {
  override readonly name: string = 'QuotaExceededError';
  declare readonly code: 9;
}

/** Code 11: the service failed (also any 5xx answer, and a success answer the SDK cannot read). */
export class SystemError extends ApiError {
  override readonly name: string = 'SystemError';
  declare readonly code: 11;
}

/** Code 20: DLR queries are disabled for this account. */
export class DlrSearchNotSupportedError extends ApiError {
  override readonly name: string = 'DlrSearchNotSupportedError';
  declare readonly code: 20;
}

/**
 * Code 429: too many requests, or the key is locked out after too many wrong secrets
 * (`problemCode` `rate_limited` / `locked_out`). The SDK retries it by itself when the wait is short.
 *
 * @example
 * ```ts
 * catch (err) {
 *   if (isRateLimitError(err)) setTimeout(retry, (err.retryAfterSeconds ?? 1) * 1000);
 * }
 * ```
 */
export class RateLimitError extends ApiError {
  override readonly name: string = 'RateLimitError';
  declare readonly code: 429;
  /** Seconds the service asked us to wait (`Retry-After`), when it said. */
  readonly retryAfterSeconds: number | undefined;

  constructor(init: ApiErrorInit) {
    super(init);
    this.retryAfterSeconds = init.retryAfterSeconds;
  }
}

/**
 * The request got no answer: DNS failure, refused or dropped connection, TLS failure. `cause` holds what
 * `fetch` threw.
 */
export class ConnectionError extends WaybillError {
  override readonly name: string = 'ConnectionError';
}

/** No answer within `timeoutMs` (retries included). */
export class TimeoutError extends WaybillError {
  override readonly name: string = 'TimeoutError';
  readonly timeoutMs: number | undefined;

  constructor(timeoutMs?: number, options?: WaybillErrorOptions) {
    super(timeoutMs === undefined ? 'Request timed out' : `Request timed out after ${timeoutMs} ms`, options);
    this.timeoutMs = timeoutMs;
  }
}

/** The caller aborted the request through its `signal`; `cause` is the signal's reason. */
export class AbortError extends WaybillError {
  override readonly name: string = 'AbortError';
}

/**
 * The service lacks something this call needs, e.g. a campaign filter on a server that only has the
 * deprecated `/api/v1/contacts/messages` endpoint.
 */
export class UnsupportedByServerError extends WaybillError {
  override readonly name: string = 'UnsupportedByServerError';
}

/** Why `verifyWebhook` refused a delivery. */
export type WebhookVerificationFailure =
  | 'missing_headers'
  | 'invalid_timestamp'
  | 'timestamp_too_old'
  | 'timestamp_too_new'
  | 'invalid_signature'
  | 'invalid_payload';

/**
 * A webhook delivery failed verification; answer it with 400 and do not trust its body.
 *
 * @example
 * ```ts
 * catch (err) {
 *   if (isWebhookVerificationError(err)) return new Response(err.reason, { status: 400 });
 *   throw err;
 * }
 * ```
 */
export class WebhookVerificationError extends WaybillError {
  override readonly name: string = 'WebhookVerificationError';
  readonly reason: WebhookVerificationFailure;

  constructor(reason: WebhookVerificationFailure, message: string) {
    super(message);
    this.reason = reason;
  }
}

type ApiErrorClass = new (init: ApiErrorInit) => ApiError;

/**
 * The failure codes of the spec (§7) plus the SDK's 429, with the spec's `descr`, the HTTP status the
 * service answers with (CONTRACT §2) and the class the SDK throws.
 */
export const API_ERROR_CODES = {
  2: { descr: 'Missing parameters', status: 400, error: MissingParametersError },
  3: { descr: 'Invalid parameters', status: 400, error: InvalidParametersError },
  4: { descr: 'Invalid credentials', status: 401, error: InvalidCredentialsError },
  5: { descr: 'Unauthorized IP', status: 403, error: UnauthorizedIpError },
  9: { descr: 'Quota exceeded', status: 402, error: QuotaExceededError },
  11: { descr: 'System error', status: 500, error: SystemError },
  20: { descr: 'Dlr search not support', status: 403, error: DlrSearchNotSupportedError },
  429: { descr: 'Too many requests', status: 429, error: RateLimitError },
} as const satisfies Record<number, { descr: string; status: number; error: ApiErrorClass }>;

/** A failure code the SDK knows (a key of `API_ERROR_CODES`). */
export type ApiErrorCode = keyof typeof API_ERROR_CODES;

/** Problem slugs (CONTRACT §3) and the spec code each one corresponds to. */
export const PROBLEM_CODES: Readonly<Record<string, ApiErrorCode>> = {
  invalid_request: 3,
  unauthorized: 4,
  ip_not_allowed: 5,
  locked_out: 429,
  rate_limited: 429,
  internal: 11,
  unavailable: 11,
};

const isKnownCode = (code: number): code is ApiErrorCode => Object.hasOwn(API_ERROR_CODES, code);

/**
 * Builds the error for a failure: the class follows `code` when the SDK knows it.
 *
 * @example
 * ```ts
 * const err = createApiError({ status: 401, code: 4, descr: 'Invalid credentials' });
 * err instanceof InvalidCredentialsError; // true
 * ```
 */
export function createApiError(init: ApiErrorInit): ApiError {
  const Class: ApiErrorClass = isKnownCode(init.code) ? API_ERROR_CODES[init.code].error : ApiError;
  return new Class(init);
}

// Literal names, not `Class.name`: a minifier renames classes.
const API_NAMES: ReadonlySet<string> = new Set([
  'ApiError',
  'MissingParametersError',
  'InvalidParametersError',
  'InvalidCredentialsError',
  'UnauthorizedIpError',
  'QuotaExceededError',
  'SystemError',
  'DlrSearchNotSupportedError',
  'RateLimitError',
]);
const ALL_NAMES: ReadonlySet<string> = new Set([
  ...API_NAMES,
  'WaybillError',
  'ConnectionError',
  'TimeoutError',
  'AbortError',
  'UnsupportedByServerError',
  'WebhookVerificationError',
]);
const only = (name: string): ReadonlySet<string> => new Set([name]);

function branded(value: unknown, accepted: ReadonlySet<string>): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const candidate = value as { [BRAND]?: unknown; name?: unknown };
  return candidate[BRAND] === true && typeof candidate.name === 'string' && accepted.has(candidate.name);
}

/**
 * True for any error thrown by `@waybill/client`, even one from another copy of the package.
 *
 * @example
 * ```ts
 * if (isWaybillError(err)) console.error(err.name, err.message);
 * ```
 */
export function isWaybillError(value: unknown): value is WaybillError {
  return value instanceof WaybillError || branded(value, ALL_NAMES);
}

/**
 * True when the service answered with a failure (any `ApiError` subclass).
 *
 * @example
 * ```ts
 * if (isApiError(err) && err.code === 4) console.error('check WAYBILL_KEY / WAYBILL_SECRET');
 * ```
 */
export function isApiError(value: unknown): value is ApiError {
  return value instanceof ApiError || branded(value, API_NAMES);
}

/**
 * True for a `RateLimitError`.
 *
 * @example
 * ```ts
 * if (isRateLimitError(err)) console.error(`retry in ${err.retryAfterSeconds ?? '?'} s`);
 * ```
 */
export function isRateLimitError(value: unknown): value is RateLimitError {
  return value instanceof RateLimitError || branded(value, only('RateLimitError'));
}

/**
 * True when the request got no answer (`ConnectionError`).
 *
 * @example
 * ```ts
 * if (isConnectionError(err)) console.error('is the server running?');
 * ```
 */
export function isConnectionError(value: unknown): value is ConnectionError {
  return value instanceof ConnectionError || branded(value, only('ConnectionError'));
}

/**
 * True for the SDK's `TimeoutError` (not for a platform `DOMException` of the same name).
 *
 * @example
 * ```ts
 * if (isTimeoutError(err)) console.error(`no answer in ${err.timeoutMs} ms`);
 * ```
 */
export function isTimeoutError(value: unknown): value is TimeoutError {
  return value instanceof TimeoutError || branded(value, only('TimeoutError'));
}

/**
 * True for a `WebhookVerificationError`.
 *
 * @example
 * ```ts
 * if (isWebhookVerificationError(err)) return new Response(null, { status: 400 });
 * ```
 */
export function isWebhookVerificationError(value: unknown): value is WebhookVerificationError {
  return value instanceof WebhookVerificationError || branded(value, only('WebhookVerificationError'));
}
