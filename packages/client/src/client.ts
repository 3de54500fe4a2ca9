import { WaybillError } from './errors.js';
import { readEnv } from './internal/env.js';
import { defaultSleep, type FetchFunction, type SleepFunction, Transport } from './internal/transport.js';
import { Dlr } from './resources/dlr.js';
import { Messages } from './resources/messages.js';
import { Receipts } from './resources/receipts.js';
import type { WaybillWarning } from './types.js';

export type { FetchFunction, SleepFunction } from './internal/transport.js';

/** Options of `new WaybillClient()`. Every field is optional where its environment variable is set. */
export interface WaybillClientOptions {
  /** Where the service runs, e.g. `https://waybill.example.com`. @default process.env.WAYBILL_URL */
  baseUrl?: string | undefined;
  /** API key (8 letters and digits). @default process.env.WAYBILL_KEY */
  key?: string | undefined;
  /** API secret (8 letters and digits). @default process.env.WAYBILL_SECRET */
  secret?: string | undefined;
  /** The `fetch` to send requests with (a proxy agent, a test double). @default globalThis.fetch */
  fetch?: FetchFunction | undefined;
  /** Deadline of one call in milliseconds, retries included; overridable per call. @default 30000 */
  timeoutMs?: number | undefined;
  /**
   * Retries after no answer, 429 or 5xx (only GETs exist, so every call is safe to retry). Backoff is
   * exponential from 0.5 s to 8 s with jitter; a `Retry-After` up to 60 s is honoured, a longer one ends
   * the call with the `RateLimitError`.
   * @default 2
   */
  maxRetries?: number | undefined;
  /** Receives warnings (e.g. the fallback to the deprecated endpoint); the SDK never logs. @default ignore */
  onWarning?: ((warning: WaybillWarning) => void) | undefined;
  /**
   * Waits between retries and between the polls of `receipts.follow()`; replace it in tests to go on
   * without waiting. @default setTimeout-based
   */
  sleep?: SleepFunction | undefined;
}

/**
 * The Waybill API client. Runs wherever `fetch` does (Node 18+, Deno, Bun, browsers, edge runtimes);
 * `verifyWebhook` needs WebCrypto (Node 20+).
 *
 * @example
 * ```ts
 * import { WaybillClient } from '@waybill/client';
 *
 * const client = new WaybillClient({ baseUrl: 'http://127.0.0.1:8080', key: 'DEMOKEY1', secret: 'DEMOSECR' });
 * const receipts = await client.dlr.get('m-1');
 * const messages = await client.messages.get(['m-1', 'm-2']);
 * for await (const m of client.messages.history({ channel: 'SMS', channelUserId: '447700900123' })) {
 *   console.log(m.createdAt, m.text);
 * }
 * for await (const event of client.receipts.list({ after: savedCursor })) {
 *   console.log(event.id, event.receipt.to, event.receipt.drStatuscode);
 * }
 * ```
 */
export class WaybillClient {
  /** The service's base URL, without a trailing slash. */
  readonly baseUrl: string;
  /** Delivery receipts: `GET /dlr`. */
  readonly dlr: Dlr;
  /** Stored messages: `GET /messages`. */
  readonly messages: Messages;
  /** The receipt feed: `GET /receipts`. */
  readonly receipts: Receipts;

  constructor(options: WaybillClientOptions = {}) {
    const baseUrl = options.baseUrl ?? readEnv('WAYBILL_URL');
    const key = options.key ?? readEnv('WAYBILL_KEY');
    const secret = options.secret ?? readEnv('WAYBILL_SECRET');
    if (baseUrl === undefined) throw new WaybillError('No base URL: pass baseUrl or set WAYBILL_URL');
    if (key === undefined || secret === undefined) {
      throw new WaybillError('No credentials: pass key and secret or set WAYBILL_KEY and WAYBILL_SECRET');
    }
    if (!URL.canParse(baseUrl) || !/^https?:$/.test(new URL(baseUrl).protocol)) {
      throw new WaybillError(`baseUrl must be an http(s) URL, got ${JSON.stringify(baseUrl)}`);
    }
    const timeoutMs = options.timeoutMs ?? 30_000;
    const maxRetries = options.maxRetries ?? 2;
    if (!(timeoutMs > 0)) throw new WaybillError('timeoutMs must be a positive number');
    if (!Number.isInteger(maxRetries) || maxRetries < 0)
      throw new WaybillError('maxRetries must be an integer >= 0');

    this.baseUrl = baseUrl.replace(/\/+$/, '');
    const fetchFn: FetchFunction = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    const transport = new Transport({
      baseUrl: this.baseUrl,
      key,
      secret,
      fetch: fetchFn,
      timeoutMs,
      maxRetries,
      sleep: options.sleep ?? defaultSleep,
    });
    const onWarning = options.onWarning ?? (() => {});
    this.dlr = new Dlr(transport);
    this.messages = new Messages(transport, onWarning);
    this.receipts = new Receipts(transport, transport.sleep);
  }
}
