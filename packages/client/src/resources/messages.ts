import { ApiError, TimeoutError, UnsupportedByServerError } from '../errors.js';
import { compareRecords, readMessagePage } from '../internal/normalize.js';
import { hasTimer, type Transport, toApiError, type WireResponse } from '../internal/transport.js';
import { MessagePager } from '../pagination.js';
import type { Channel, MessagePage, MessageRecord, RequestOptions, WaybillWarning } from '../types.js';

/** The service takes at most this many ids per Mode 1 request (spec §8). */
export const MESSAGE_IDS_PER_REQUEST = 20;
/** Mode 1 requests of one `messages.get` call in flight at once. */
export const MAX_CONCURRENT_REQUESTS = 4;

const CURRENT_PATH = '/messages';
const DEPRECATED_PATH = '/api/v1/contacts/messages';

/** Paging options shared by `history` and `campaign`. */
export interface PageOptions extends RequestOptions {
  /** Messages per request, 1–100 (the service's default is 20): the API's `size` parameter. */
  size?: number | undefined;
  /**
   * The old name of `size`, still accepted. Giving both with different values throws a `TypeError`.
   *
   * @deprecated Use `size`, the API's name for it.
   */
  pageSize?: number | undefined;
  /** Start from a `nextCursor` kept from an earlier walk instead of from the newest page. */
  cursor?: string | undefined;
}

interface HistoryBase extends PageOptions {
  channel: Channel;
  /** Only messages of this campaign (needs a server with `GET /messages`). */
  campaignId?: string | undefined;
}

/** Whose history to walk: one contact on one channel, named by exactly one of `channelUserId` or `contactId`. */
export type HistoryParams = HistoryBase &
  (
    | {
        /** The contact's identity on the channel (a phone number on SMS). */ channelUserId: string;
        contactId?: never;
      }
    | { /** The contact's UUID. */ contactId: string; channelUserId?: never }
  );

/** Options of `campaign`. */
export interface CampaignParams extends PageOptions {
  /** Only messages on this channel. */
  channel?: Channel | undefined;
}

/**
 * Stored messages: `GET /messages`, or the deprecated `GET /api/v1/contacts/messages` on a server that
 * does not have it yet.
 *
 * @example
 * ```ts
 * const [first] = await client.messages.get(['m-1']);
 * ```
 */
export class Messages {
  readonly #transport: Transport;
  readonly #onWarning: (warning: WaybillWarning) => void;
  #deprecatedOnly = false;

  /** @internal Use `client.messages`. */
  constructor(transport: Transport, onWarning: (warning: WaybillWarning) => void) {
    this.#transport = transport;
    this.#onWarning = onWarning;
  }

  /**
   * The messages with these ids, any number of them, oldest first by (`createdAt`, `id`, `channelUserId`).
   * Unknown ids and ids of other accounts are silently left out; an SMS id sent to several numbers gives
   * one record per number. Sends one request per 20 ids, at most 4 at a time; `timeoutMs` covers them all.
   *
   * @example
   * ```ts
   * const records = await client.messages.get(['m-1', 'm-2', 'm-3']);
   * for (const m of records) console.log(m.createdAt, m.id, m.channelUserId, m.status);
   * ```
   */
  async get(ids: Iterable<string>, options: RequestOptions = {}): Promise<MessageRecord[]> {
    const unique = [...new Set([...ids].map((id) => id.trim()).filter((id) => id !== ''))];
    const withComma = unique.find((id) => id.includes(','));
    if (withComma !== undefined) throw new TypeError(`A message id cannot contain a comma: ${withComma}`);
    const chunks: string[][] = [];
    for (let i = 0; i < unique.length; i += MESSAGE_IDS_PER_REQUEST) {
      chunks.push(unique.slice(i, i + MESSAGE_IDS_PER_REQUEST));
    }
    if (chunks.length === 0) return [];

    const timeoutMs = options.timeoutMs ?? this.#transport.timeoutMs;
    const deadline = Date.now() + timeoutMs;
    const pages = await withDeadline(options.signal, timeoutMs, (signal) =>
      mapConcurrently(chunks, MAX_CONCURRENT_REQUESTS, signal, (chunk, chunkSignal) =>
        this.#query(
          { messageIds: chunk.join(',') },
          // The shared deadline bounds each request too, so no retry waits past it.
          { signal: chunkSignal, timeoutMs: Math.max(1, deadline - Date.now()) },
        ),
      ),
    );
    const byKey = new Map<string, MessageRecord>();
    for (const page of pages) for (const m of page.messages) byKey.set(`${m.id}\u0000${m.channelUserId}`, m);
    return [...byKey.values()].sort(compareRecords);
  }

  /**
   * One contact's history on one channel, walked backwards: `for await` gives messages newest to oldest,
   * `.pages()` the pages as the service returns them. `signal` and `timeoutMs` apply to each page request.
   * Throws a `TypeError` at once when `size` and its deprecated alias `pageSize` are both given and differ.
   *
   * @example
   * ```ts
   * const history = client.messages.history({ channel: 'SMS', channelUserId: '447700900123', size: 50 });
   * for await (const m of history) console.log(m.createdAt, m.direction, m.text);
   * ```
   */
  history(params: HistoryParams): MessagePager {
    const { channel, channelUserId, contactId, campaignId, cursor, signal, timeoutMs } = params;
    const query = { channel, channelUserId, contactId, campaignId, size: sizeParam(params) };
    return new MessagePager((at) => this.#query({ ...query, cursor: at }, { signal, timeoutMs }), cursor);
  }

  /**
   * A campaign's messages, optionally on one channel, walked backwards like `history`. Needs a server with
   * `GET /messages` (rejects with `UnsupportedByServerError` on one that has only the deprecated endpoint).
   *
   * @example
   * ```ts
   * let delivered = 0;
   * for await (const m of client.messages.campaign('spring-sale', { channel: 'SMS' })) {
   *   if (m.status === 'delivered') delivered++;
   * }
   * ```
   */
  campaign(campaignId: string, params: CampaignParams = {}): MessagePager {
    const { channel, cursor, signal, timeoutMs } = params;
    const query = { campaignId, channel, size: sizeParam(params) };
    return new MessagePager((at) => this.#query({ ...query, cursor: at }, { signal, timeoutMs }), cursor);
  }

  async #query(query: Record<string, string | undefined>, options: RequestOptions): Promise<MessagePage> {
    if (!this.#deprecatedOnly) {
      try {
        return await this.#transport.get(CURRENT_PATH, query, 'basic', readPage, options);
      } catch (err) {
        if (!(err instanceof ApiError && err.status === 404)) throw err;
        this.#fallBack();
      }
    }
    if (query.campaignId !== undefined) {
      // The deprecated endpoint ignores unknown parameters: it would answer unfiltered, so refuse instead.
      throw new UnsupportedByServerError(
        `The server has no GET ${CURRENT_PATH}, and ${DEPRECATED_PATH} cannot filter by campaign`,
      );
    }
    return this.#transport.get(DEPRECATED_PATH, query, 'basic', readPage, options);
  }

  #fallBack(): void {
    if (this.#deprecatedOnly) return;
    this.#deprecatedOnly = true;
    this.#onWarning({
      code: 'deprecated_endpoint',
      message:
        `GET ${CURRENT_PATH} answered 404: this server is older than the SDK. Using the deprecated ` +
        `GET ${DEPRECATED_PATH} from now on; it is removed at the end of 2026, so upgrade the server.`,
    });
  }
}

/** The `size` query parameter: `size`, or its deprecated alias `pageSize`; both, when they differ, is a mistake. */
function sizeParam({ size, pageSize }: PageOptions): string | undefined {
  if (size !== undefined && pageSize !== undefined && !Object.is(size, pageSize)) {
    throw new TypeError(
      `Give size (${size}) or pageSize (${pageSize}), not both: pageSize is the deprecated old name of size`,
    );
  }
  const value = size ?? pageSize;
  return value === undefined ? undefined : String(value);
}

function readPage(response: WireResponse): MessagePage {
  if (response.status >= 200 && response.status < 300) {
    const page = readMessagePage(response.body);
    if (page) return page;
  }
  throw toApiError(response);
}

/** Runs `work` under one deadline and the caller's signal, both delivered through the signal it gets. */
async function withDeadline<T>(
  userSignal: AbortSignal | undefined,
  timeoutMs: number,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  if (userSignal?.aborted) controller.abort(userSignal.reason);
  const onAbort = () => controller.abort(userSignal?.reason);
  userSignal?.addEventListener('abort', onAbort, { once: true });
  const timer = hasTimer(timeoutMs)
    ? setTimeout(() => controller.abort(new TimeoutError(timeoutMs)), timeoutMs)
    : undefined;
  try {
    return await work(controller.signal);
  } finally {
    clearTimeout(timer);
    userSignal?.removeEventListener('abort', onAbort);
  }
}

/** Maps `items` with at most `limit` calls in flight; the first failure aborts the others. */
async function mapConcurrently<I, O>(
  items: readonly I[],
  limit: number,
  signal: AbortSignal,
  fn: (item: I, signal: AbortSignal) => Promise<O>,
): Promise<O[]> {
  const controller = new AbortController();
  const onAbort = () => controller.abort(signal.reason);
  if (signal.aborted) onAbort();
  signal.addEventListener('abort', onAbort, { once: true });
  const results = new Array<O>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      try {
        results[index] = await fn(items[index] as I, controller.signal);
      } catch (err) {
        controller.abort(err);
        throw err;
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
    return results;
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}
