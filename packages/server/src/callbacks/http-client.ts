import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction, type Socket } from 'node:net';
import { Agent, buildConnector } from 'undici';
import { refusalMessage, refusedReason } from './address-guard.js';

/**
 * The one HTTP client callbacks are sent through (CONTRACT §9): POST only, no redirects followed, one deadline
 * for the whole attempt, keep-alive pooling, and — unless private destinations are allowed — a guard on the
 * address every connection actually reaches.
 *
 * Why the guard sits in undici's connect hook rather than in a check of the URL's host before sending: a
 * pre-check resolves the name once and the HTTP client resolves it again to connect. A hostile DNS server can
 * answer the first time with a public address and the second time with 127.0.0.1 or 169.254.169.254 (DNS
 * rebinding, TTL 0), and a pre-check never sees the second answer. In the connect hook the lookup that is
 * judged is the lookup the socket uses (so refused addresses are never even dialled), and once the socket is
 * connected `socket.remoteAddress` — the peer we really reached, whatever resolved it — is judged again before
 * a single byte of the request is written. IP-literal hosts (which skip the lookup) and pooled connections are
 * covered by the same two checks, since every connection of the pool was made through this hook.
 */

/** A callback destination refused by the address guard. */
export class RefusedDestinationError extends Error {
  override readonly name = 'RefusedDestinationError';
  readonly code = 'EREFUSEDDEST';
}

/** What came back from a callback: the status and the `Retry-After` header, if any. */
export interface CallbackResponse {
  status: number;
  retryAfter: string | undefined;
}

/** An attempt that got no answer: `message` is short, fit for the attempt log (no URL, no secret). */
export class CallbackRequestError extends Error {
  override readonly name = 'CallbackRequestError';
  constructor(
    message: string,
    /** The attempt was cut short by {@link CallbackHttpClient.post}'s `signal` (shutdown), not by a failure. */
    readonly aborted = false,
  ) {
    super(message);
  }
}

export interface CallbackHttpClientOptions {
  /** WAYBILL_CALLBACK_ALLOW_PRIVATE: no address guard at all. */
  allowPrivate: boolean;
  /** WAYBILL_CALLBACK_TIMEOUT_MS: connect, request, response head and body together. */
  timeoutMs: number;
  /** How much of a response body is read (and discarded) before the connection is given up. @default 64 KiB */
  maxBodyBytes?: number;
  /** Idle keep-alive connections are closed after this. @default 30 s */
  keepAliveTimeoutMs?: number;
}

/**
 * A `lookup` for `net.connect` that drops refused addresses from the answer; when none is left the connection
 * fails with a {@link RefusedDestinationError} naming the first address and why.
 */
export const guardedLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
    if (error) {
      callback(error, '', 0);
      return;
    }
    const allowed = addresses.filter((a) => refusedReason(a.address) === null);
    const first = allowed[0];
    if (!first) {
      const refused = addresses[0];
      const why = refused
        ? `${hostname} resolves to ${refused.address}: ${refusedReason(refused.address)}`
        : `${hostname} has no address`;
      callback(new RefusedDestinationError(`refused destination: ${why}`), '', 0);
      return;
    }
    // With `all` (what autoSelectFamily asks for) every allowed address is tried in turn; else the first.
    if (options.all) (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, allowed);
    else callback(null, first.address, first.family);
  });
};

type Connector = buildConnector.connector;

/**
 * undici's connector wrapped with the address guard (see the comment at the top of this file).
 * @param lookup how names are resolved; tests swap in a lying resolver to show the second check holds
 */
export function guardedConnector(
  options: buildConnector.BuildOptions = {},
  lookup: LookupFunction = guardedLookup,
): Connector {
  const connect = buildConnector({ ...options, lookup } as buildConnector.BuildOptions);
  return (opts, callback) => {
    // An IP-literal host is never looked up: judge it before dialling.
    const host = opts.hostname.replace(/^\[(.*)\]$/, '$1');
    if (isIP(host) !== 0) {
      const reason = refusedReason(host);
      if (reason !== null) {
        callback(new RefusedDestinationError(`refused destination: ${host}: ${reason}`), null);
        return;
      }
    }
    connect(opts, (error, socket) => {
      if (error !== null) {
        callback(error, null);
        return;
      }
      // The address actually connected to: the final word, whatever the lookup said.
      const remote = (socket as Socket).remoteAddress ?? '';
      const reason = refusedReason(remote);
      if (reason !== null) {
        socket.destroy();
        callback(new RefusedDestinationError(`refused destination: ${remote || host}: ${reason}`), null);
        return;
      }
      callback(null, socket);
    });
  };
}

const DEFAULT_MAX_BODY = 64 * 1024;

export class CallbackHttpClient {
  readonly #agent: Agent;
  readonly #timeoutMs: number;
  readonly #maxBodyBytes: number;

  constructor(options: CallbackHttpClientOptions) {
    this.#timeoutMs = options.timeoutMs;
    this.#maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY;
    const connectOptions = { timeout: options.timeoutMs };
    this.#agent = new Agent({
      connect: options.allowPrivate ? connectOptions : guardedConnector(connectOptions),
      keepAliveTimeout: options.keepAliveTimeoutMs ?? 30_000,
      keepAliveMaxTimeout: 10 * 60_000,
      // The whole-attempt signal below is the real deadline; these only keep undici's own from being shorter.
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      // Nothing else follows redirects either: Agent.request never does (no redirect interceptor is composed).
    });
  }

  /**
   * POSTs `body` to `url`. Resolves with the status of whatever answer came (a redirect is just a status);
   * rejects with a {@link CallbackRequestError} when none did within the timeout, or the destination was
   * refused. The response body is read and discarded (up to the cap) so the connection goes back to the pool.
   */
  async post(
    url: string,
    headers: Record<string, string>,
    body: string,
    signal?: AbortSignal,
  ): Promise<CallbackResponse> {
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      throw new CallbackRequestError('invalid callback URL');
    }
    if (target.protocol !== 'http:' && target.protocol !== 'https:') {
      throw new CallbackRequestError(`unsupported callback URL scheme ${target.protocol}`);
    }
    // One controller and one timer per attempt, both let go when it ends. AbortSignal.timeout's timer outlives
    // the attempt (a relay at thousands a second keeps tens of thousands pending), and AbortSignal.any registers
    // every attempt with the shared shutdown signal until the garbage collector drops it: together they were
    // about 2% of a relay's samples (docs/benchmarks.md, "Eighteenth pass"; bench/abort-signals.mjs).
    const attempt = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      attempt.abort();
    }, this.#timeoutMs);
    const stop = () => attempt.abort();
    if (signal?.aborted) attempt.abort();
    else signal?.addEventListener('abort', stop, { once: true });
    try {
      const response = await this.#agent.request({
        origin: target.origin,
        path: `${target.pathname}${target.search}`,
        method: 'POST',
        headers,
        body,
        signal: attempt.signal,
      });
      // Read to the end (a 2xx whose body does not arrive in time is not an answer "within the timeout").
      let read = 0;
      for await (const chunk of response.body) {
        read += (chunk as Buffer).length;
        if (read > this.#maxBodyBytes) break; // leaving the loop destroys the body; the socket is not reused
      }
      const retryAfter = response.headers['retry-after'];
      return {
        status: response.statusCode,
        retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter,
      };
    } catch (error) {
      if (signal?.aborted) throw new CallbackRequestError('aborted: the relay is shutting down', true);
      if (timedOut) throw new CallbackRequestError(`timed out after ${this.#timeoutMs} ms`);
      throw new CallbackRequestError(describe(error));
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', stop);
    }
  }

  /** Closes idle connections and waits for running requests. */
  async close(): Promise<void> {
    await this.#agent.close();
  }

  /** Drops every connection at once. */
  async destroy(): Promise<void> {
    await this.#agent.destroy();
  }
}

const CODES: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'DNS lookup failed (temporary)',
  EPIPE: 'connection closed while sending',
  UND_ERR_SOCKET: 'connection closed by the receiver',
  UND_ERR_CONNECT_TIMEOUT: 'connect timed out',
  UND_ERR_HEADERS_TIMEOUT: 'timed out waiting for the response',
  UND_ERR_BODY_TIMEOUT: 'timed out reading the response',
};

/** A short, secret-free description of why no answer came. */
function describe(error: unknown): string {
  if (error instanceof RefusedDestinationError) return refusalMessage(error.message);
  const e = error as { code?: string; message?: string; cause?: unknown };
  if (e?.cause instanceof RefusedDestinationError) return refusalMessage(e.cause.message);
  const code = e?.code ?? '';
  const known = CODES[code];
  if (known) return `${known} (${code})`;
  if (code.startsWith('ERR_TLS') || code.includes('CERT') || code.startsWith('ERR_SSL')) {
    return `TLS error (${code})`;
  }
  const message = (e?.message ?? String(error)).split('\n')[0]?.slice(0, 200) ?? 'request failed';
  return code ? `${message} (${code})` : message;
}
