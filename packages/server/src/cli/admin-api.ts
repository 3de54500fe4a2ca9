import { type ApiError, ConnectionError, createApiError, PROBLEM_CODES, TimeoutError } from '@waybill/client';

/**
 * The operator API over fetch for CLI commands: bearer token, JSON, a deadline, and the SDK's errors so that
 * `reportFailure` prints them and picks the exit code like the client commands do.
 */
export class AdminApi {
  readonly #base: string;
  readonly #token: string;
  readonly #timeoutMs: number;

  constructor(baseUrl: string, token: string, timeoutMs: number) {
    this.#base = `${baseUrl.replace(/\/+$/, '')}/admin/v1`;
    this.#token = token;
    this.#timeoutMs = timeoutMs;
  }

  /** The parsed JSON answer; `undefined` for a 204. */
  async request<T>(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, body?: unknown): Promise<T> {
    const where = `${new URL(this.#base).origin}/admin/v1${path.split('?')[0]}`;
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.#token}`,
      accept: 'application/json',
    };
    if (body !== undefined) headers['content-type'] = 'application/json';
    let response: Response;
    let text: string;
    const signal = AbortSignal.timeout(this.#timeoutMs);
    try {
      response = await fetch(`${this.#base}${path}`, {
        method,
        headers,
        signal,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      text = await response.text();
    } catch (err) {
      if (signal.aborted) throw new TimeoutError(this.#timeoutMs, { cause: err });
      const cause = err instanceof Error && err.cause instanceof Error ? ` (${err.cause.message})` : '';
      throw new ConnectionError(`Could not reach ${where}: ${(err as Error).message}${cause}`, {
        cause: err,
      });
    }
    if (response.status === 204) return undefined as T;
    let parsed: unknown;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (response.ok && parsed !== undefined) return parsed as T;
    throw toError(response, parsed);
  }
}

/** A failure answer as an SDK `ApiError`. */
function toError(response: Response, body: unknown): ApiError {
  const problem = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {};
  const slug = typeof problem.code === 'string' ? problem.code : undefined;
  const text = (value: unknown) => (typeof value === 'string' && value !== '' ? value : undefined);
  const descr = response.ok
    ? 'Unexpected answer from the server (not a Waybill response)'
    : (text(problem.detail) ?? text(problem.title) ?? `HTTP ${response.status}`);
  return createApiError({
    status: response.status,
    code: response.ok ? 11 : ((slug === undefined ? undefined : PROBLEM_CODES[slug]) ?? response.status),
    descr,
    problemCode: slug,
    requestId: response.headers.get('x-request-id') ?? text(problem.requestId),
    body,
    headers: response.headers,
  });
}

/** A likely cause, after the error itself, for the answers an operator most often gets wrong. */
export function adminHint(err: unknown): void {
  const api = err as Partial<ApiError>;
  if (api.status === 401) {
    process.stderr.write('waybill: check WAYBILL_ADMIN_TOKEN: it must be the token the server runs with.\n');
  } else if (api.status === 404 && typeof api.descr === 'string' && api.descr.startsWith('no route for')) {
    process.stderr.write(
      'waybill: the server has no such operator route: is WAYBILL_ADMIN_TOKEN set on the server (without it every /admin path is 404)?\n',
    );
  }
}
