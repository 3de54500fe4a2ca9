/**
 * The one registry of error codes the service answers with. Problem slugs (RFC 9457 bodies, CONTRACT §3) and
 * the spec's status-query failure codes (CONTRACT §2) are both listed here; docs/errors.md documents them and
 * a test checks that none is missing there.
 */

export const PROBLEMS = {
  invalid_request: { status: 400, title: 'Bad Request' },
  unauthorized: { status: 401, title: 'Unauthorized' },
  ip_not_allowed: { status: 403, title: 'Forbidden' },
  not_found: { status: 404, title: 'Not Found' },
  method_not_allowed: { status: 405, title: 'Method Not Allowed' },
  request_timeout: { status: 408, title: 'Request Timeout' },
  conflict: { status: 409, title: 'Conflict' },
  gone: { status: 410, title: 'Gone' },
  payload_too_large: { status: 413, title: 'Content Too Large' },
  uri_too_long: { status: 414, title: 'URI Too Long' },
  unsupported_media_type: { status: 415, title: 'Unsupported Media Type' },
  expectation_failed: { status: 417, title: 'Expectation Failed' },
  headers_too_large: { status: 431, title: 'Request Header Fields Too Large' },
  locked_out: { status: 429, title: 'Too Many Requests' },
  rate_limited: { status: 429, title: 'Too Many Requests' },
  internal: { status: 500, title: 'Internal Server Error' },
  unavailable: { status: 503, title: 'Service Unavailable' },
} as const;
export type ProblemCode = keyof typeof PROBLEMS;

/** Failure codes of the status query (`GET /dlr`), with the spec's descr text and our HTTP status. */
export const DLR_FAILURES = {
  2: { descr: 'Missing parameters', status: 400 },
  3: { descr: 'Invalid parameters', status: 400 },
  4: { descr: 'Invalid credentials', status: 401 },
  5: { descr: 'Unauthorized IP', status: 403 },
  9: { descr: 'Quota exceeded', status: 402 },
  11: { descr: 'System error', status: 500 },
  20: { descr: 'Dlr search not support', status: 403 },
  429: { descr: 'Too many requests', status: 429 },
} as const;
export type DlrFailureCode = keyof typeof DLR_FAILURES;

export interface ApiErrorOptions {
  dlrCode?: DlrFailureCode;
  retryAfterSeconds?: number;
  /**
   * The one query parameter or body field at fault, as the caller wrote it (`limit`, `callbackUrl`,
   * `ipWhitelist[2]`, `sms.network`): the problem body's `param` member.
   */
  param?: string | undefined;
  extra?: Record<string, unknown>;
}

/**
 * A refusal the service means to give. `problem` decides the RFC 9457 body; `dlrCode` the status-query body
 * when the failure happens on /dlr. `detail` is for a person and never holds a credential.
 */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  readonly problem: ProblemCode;
  readonly dlrCode: DlrFailureCode;
  readonly retryAfterSeconds: number | null;
  readonly extra: Record<string, unknown>;

  constructor(problem: ProblemCode, detail: string, options: ApiErrorOptions = {}) {
    super(detail);
    this.problem = problem;
    this.dlrCode = options.dlrCode ?? defaultDlrCode(problem);
    this.retryAfterSeconds = options.retryAfterSeconds ?? null;
    this.extra = { ...(options.param === undefined ? {} : { param: options.param }), ...options.extra };
  }

  get status(): number {
    return PROBLEMS[this.problem].status;
  }
}

function defaultDlrCode(problem: ProblemCode): DlrFailureCode {
  switch (problem) {
    case 'invalid_request':
      return 3;
    case 'unauthorized':
      return 4;
    case 'ip_not_allowed':
      return 5;
    case 'locked_out':
    case 'rate_limited':
      return 429;
    default:
      return 11;
  }
}
