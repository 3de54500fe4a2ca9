import {
  AbortError,
  type ApiError,
  ConnectionError,
  createApiError,
  PROBLEM_CODES,
  RateLimitError,
  SystemError,
  TimeoutError,
} from '../errors.js';
import type { RequestOptions } from '../types.js';
import { bytesToBase64 } from './base64.js';
import { isObject } from './normalize.js';

/** The part of `fetch` the SDK uses. `globalThis.fetch`, undici's and node-fetch's all fit. */
export type FetchFunction = (input: string, init: RequestInit) => Promise<Response>;

/** Waits `ms` milliseconds; rejects when `signal` aborts. */
export type SleepFunction = (ms: number, signal: AbortSignal) => Promise<void>;

/** A response, read in full. `body` is the parsed JSON, or undefined when the body was not JSON. */
export interface WireResponse {
  status: number;
  headers: Headers;
  body: unknown;
}

export interface TransportConfig {
  baseUrl: string;
  key: string;
  secret: string;
  fetch: FetchFunction;
  timeoutMs: number;
  maxRetries: number;
  sleep: SleepFunction;
}

/** How a request authenticates: `/dlr` takes key and secret as parameters, the message endpoints Basic. */
export type Auth = 'query' | 'basic';

const INITIAL_RETRY_DELAY_MS = 500;
// setTimeout fires at once for delays past 2^31 - 1 ms; a longer deadline is no deadline.
const MAX_TIMER_MS = 2_147_483_647;

/** Whether `timeoutMs` needs a timer at all (Infinity or ~25 days and more do not). */
export const hasTimer = (timeoutMs: number): boolean => timeoutMs <= MAX_TIMER_MS;

const MAX_RETRY_DELAY_MS = 8_000;
/** A longer `Retry-After` (a locked-out key waits 15 minutes) is handed to the caller instead of slept. */
export const MAX_RETRY_AFTER_MS = 60_000;

export const defaultSleep: SleepFunction = (ms, signal) =>
  new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });

/**
 * Sends idempotent GETs: one deadline per call (retries included), retries on no answer, 429 and 5xx with
 * exponential backoff and jitter, `Retry-After` honoured up to `MAX_RETRY_AFTER_MS`.
 */
export class Transport {
  readonly #config: TransportConfig;
  readonly #origin: string;
  readonly #basic: string;
  /** Default deadline of a call, in milliseconds. */
  readonly timeoutMs: number;
  /** The client's wait (between retries, and between polls of a follower). */
  readonly sleep: SleepFunction;

  constructor(config: TransportConfig) {
    this.#config = config;
    this.#origin = new URL(config.baseUrl).origin;
    this.timeoutMs = config.timeoutMs;
    this.sleep = config.sleep;
    this.#basic = `Basic ${bytesToBase64(new TextEncoder().encode(`${config.key}:${config.secret}`))}`;
  }

  /**
   * GETs `path` and hands the response to `interpret`, which returns the result or throws an `ApiError`
   * (retried when it is a `RateLimitError` or `SystemError`).
   */
  async get<T>(
    path: string,
    query: Readonly<Record<string, string | undefined>>,
    auth: Auth,
    interpret: (response: WireResponse) => T,
    options: RequestOptions = {},
  ): Promise<T> {
    const url = this.#url(path, query, auth);
    const headers: Record<string, string> = { accept: 'application/json' };
    if (auth === 'basic') headers.authorization = this.#basic;

    const timeoutMs = options.timeoutMs ?? this.#config.timeoutMs;
    const deadline = Date.now() + timeoutMs;
    const controller = new AbortController();
    const userSignal = options.signal;
    if (userSignal?.aborted) throw abortedError(userSignal.reason);
    const onUserAbort = () => controller.abort(userSignal?.reason);
    userSignal?.addEventListener('abort', onUserAbort, { once: true });
    const timer = hasTimer(timeoutMs)
      ? setTimeout(() => controller.abort(new TimeoutError(timeoutMs)), timeoutMs)
      : undefined;

    try {
      for (let attempt = 0; ; attempt++) {
        try {
          return interpret(await this.#send(url, headers, controller.signal, path));
        } catch (err) {
          if (controller.signal.aborted || !isRetryable(err) || attempt >= this.#config.maxRetries) throw err;
          const delay = retryDelayMs(err, attempt);
          if (delay === undefined || Date.now() + delay >= deadline) throw err;
          try {
            await this.#config.sleep(delay, controller.signal);
          } catch (sleepError) {
            throw controller.signal.aborted ? abortedError(controller.signal.reason) : sleepError;
          }
        }
      }
    } finally {
      clearTimeout(timer);
      userSignal?.removeEventListener('abort', onUserAbort);
    }
  }

  #url(path: string, query: Readonly<Record<string, string | undefined>>, auth: Auth): string {
    const params = new URLSearchParams();
    if (auth === 'query') {
      params.set('key', this.#config.key);
      params.set('secret', this.#config.secret);
    }
    for (const [name, value] of Object.entries(query)) if (value !== undefined) params.set(name, value);
    const search = params.toString();
    return `${this.#config.baseUrl}${path}${search === '' ? '' : `?${search}`}`;
  }

  async #send(
    url: string,
    headers: Record<string, string>,
    signal: AbortSignal,
    path: string,
  ): Promise<WireResponse> {
    // Never put `url` in an error: on /dlr it carries the secret.
    const where = `${this.#origin}${path}`;
    const fetchFn = this.#config.fetch;
    let response: Response;
    let text: string;
    try {
      response = await raceAbort(fetchFn(url, { method: 'GET', headers, signal }), signal);
    } catch (err) {
      if (signal.aborted) throw abortedError(signal.reason);
      throw new ConnectionError(`Could not reach ${where}: ${describe(err)}`, { cause: err });
    }
    try {
      text = await raceAbort(response.text(), signal);
    } catch (err) {
      if (signal.aborted) throw abortedError(signal.reason);
      throw new ConnectionError(`Connection to ${where} dropped while reading the answer: ${describe(err)}`, {
        cause: err,
      });
    }
    return { status: response.status, headers: response.headers, body: parseJson(text) };
  }
}

function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  // A fetch that ignores its signal must not outlive the deadline.
  return new Promise<T>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}

const describe = (err: unknown): string => {
  const cause = err instanceof Error && err.cause instanceof Error ? ` (${err.cause.message})` : '';
  return err instanceof Error ? `${err.message}${cause}` : String(err);
};

function parseJson(text: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** What an aborted signal's reason becomes: our deadline stays a `TimeoutError`, anything else an abort. */
function abortedError(reason: unknown): TimeoutError | AbortError {
  if (reason instanceof TimeoutError) return reason;
  if (reason instanceof Error && reason.name === 'TimeoutError')
    return new TimeoutError(undefined, { cause: reason });
  return new AbortError('Request aborted', { cause: reason });
}

const isRetryable = (err: unknown): boolean =>
  err instanceof ConnectionError || err instanceof RateLimitError || err instanceof SystemError;

/** Milliseconds to wait before the next attempt; undefined when the service asked for longer than we wait. */
function retryDelayMs(err: unknown, attempt: number): number | undefined {
  const asked =
    err instanceof RateLimitError || err instanceof SystemError ? retryAfterMs(err.headers) : undefined;
  if (asked !== undefined) return asked <= MAX_RETRY_AFTER_MS ? asked : undefined;
  const backoff = Math.min(INITIAL_RETRY_DELAY_MS * 2 ** attempt, MAX_RETRY_DELAY_MS);
  return backoff * (1 - Math.random() * 0.25);
}

/** `Retry-After` in milliseconds: delay-seconds or an HTTP date (RFC 9110 §10.2.3). */
export function retryAfterMs(headers: Headers, now: number = Date.now()): number | undefined {
  const value = headers.get('retry-after')?.trim();
  if (value === undefined || value === '') return undefined;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** The spec code an HTTP status stands for when the body says nothing the SDK can read. */
function codeForStatus(status: number): number {
  if (status >= 500 || (status >= 200 && status < 300)) return 11;
  if (status === 400) return 3;
  if (status === 401) return 4;
  if (status === 402) return 9;
  return status;
}

/**
 * Turns a failure answer into an error: a spec failure record `{code, descr}` (whatever the HTTP status),
 * an RFC 9457 problem `{type, title, status, detail, code: <slug>, requestId, param?}`, or else the HTTP status.
 */
export function toApiError(response: WireResponse): ApiError {
  const { status, headers, body } = response;
  const bodyRequestId = isObject(body) && typeof body.requestId === 'string' ? body.requestId : undefined;
  const after = retryAfterMs(headers);
  const common = {
    status,
    headers,
    body,
    requestId: headers.get('x-request-id') ?? bodyRequestId,
    retryAfterSeconds: after === undefined ? undefined : Math.ceil(after / 1000),
  };
  if (isObject(body)) {
    const { code } = body;
    if (typeof code === 'number' || (typeof code === 'string' && /^\d+$/.test(code.trim()))) {
      const numeric = Number(code);
      const descr = typeof body.descr === 'string' ? body.descr : `Failure code ${numeric}`;
      return createApiError({ ...common, code: numeric, descr });
    }
    const problemCode = typeof code === 'string' ? code : undefined;
    if (problemCode !== undefined || typeof body.title === 'string') {
      const mapped =
        (problemCode === undefined ? undefined : PROBLEM_CODES[problemCode]) ?? codeForStatus(status);
      const descr = firstText(body.detail, body.title) ?? `HTTP ${status}`;
      const param = firstText(body.param);
      return createApiError({ ...common, code: mapped, descr, problemCode, param });
    }
  }
  const descr =
    status >= 200 && status < 300
      ? 'Unexpected answer from the service (not a Waybill response)'
      : (firstText(isObject(body) ? body.message : undefined) ?? `HTTP ${status}`);
  return createApiError({ ...common, code: codeForStatus(status), descr });
}

const firstText = (...values: unknown[]): string | undefined =>
  values.find((v): v is string => typeof v === 'string' && v !== '');
