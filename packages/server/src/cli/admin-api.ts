import { type ApiError, ConnectionError, createApiError, PROBLEM_CODES, TimeoutError } from '@waybill/client';
import { usageError } from './client-commands.js';

/**
 * The operator API (`/admin/v1`) of a running server, for the operator commands (`waybill deliveries`,
 * `waybill ingest`, `waybill routes`): where it is, its token, and requests whose failures print and exit like the client
 * commands'.
 */

/** The flags every operator command shares (parseArgs options), beside its own. */
export const ADMIN_FLAGS = {
  url: { type: 'string' },
  timeout: { type: 'string' },
  json: { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
} as const;

/** The exit codes of the operator commands that make one request per action. */
export const ADMIN_EXIT_HELP =
  'Exit codes: 0 success, 1 the API answered with an error, 2 bad usage, 3 the server could not be reached.';

/** The help lines every operator command shares. */
export const ADMIN_OPTIONS_HELP = `  --url URL        the server (default: $WAYBILL_URL)
  --timeout MS     give up on a request after MS milliseconds (default: 30000)`;

const envValue = (name: string): string | undefined => process.env[name]?.trim() || undefined;

/**
 * The server from `--url` or `WAYBILL_URL` and the token from `WAYBILL_ADMIN_TOKEN` (never a flag, so it stays
 * out of shell history and process listings), or the exit code once a usage error was printed.
 */
export function adminTarget(
  values: { url?: string | undefined },
  usage: string,
): { baseUrl: string; token: string } | number {
  const baseUrl = values.url ?? envValue('WAYBILL_URL');
  if (baseUrl === undefined) return usageError('no server: pass --url or set WAYBILL_URL', usage);
  if (!URL.canParse(baseUrl) || !/^https?:$/.test(new URL(baseUrl).protocol))
    return usageError(`--url must be an http(s) URL, got ${JSON.stringify(baseUrl)}`, usage);
  const token = envValue('WAYBILL_ADMIN_TOKEN');
  if (token === undefined)
    return usageError('no admin token: set WAYBILL_ADMIN_TOKEN to the server’s operator token', usage);
  return { baseUrl, token };
}

/** The operator API over fetch: bearer token, JSON, a deadline, and the SDK's errors for the CLI's exit codes. */
export class AdminApi {
  readonly #base: string;
  readonly #token: string;
  readonly #timeoutMs: number;

  constructor(baseUrl: string, token: string, timeoutMs: number) {
    this.#base = `${baseUrl.replace(/\/+$/, '')}/admin/v1`;
    this.#token = token;
    this.#timeoutMs = timeoutMs;
  }

  /** The parsed JSON answer; `undefined` for a 204 (a DELETE). */
  request<T>(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, body?: unknown): Promise<T> {
    return this.requestJson(method, path, body === undefined ? undefined : JSON.stringify(body));
  }

  /** A request whose body is JSON text already (ingest measures each batch's bytes before it sends it). */
  async requestJson<T>(
    method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
    path: string,
    json: string | undefined,
  ): Promise<T> {
    const where = `${new URL(this.#base).origin}/admin/v1${path.split('?')[0]}`;
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.#token}`,
      accept: 'application/json',
    };
    if (json !== undefined) headers['content-type'] = 'application/json';
    let response: Response;
    let text: string;
    const signal = AbortSignal.timeout(this.#timeoutMs);
    try {
      response = await fetch(`${this.#base}${path}`, {
        method,
        headers,
        signal,
        ...(json === undefined ? {} : { body: json }),
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

/** A failure answer as an SDK `ApiError`, so `reportFailure` prints it like the client commands do. */
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
