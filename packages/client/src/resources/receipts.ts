import { ApiError, UnsupportedByServerError } from '../errors.js';
import { readReceiptPage } from '../internal/normalize.js';
import { type SleepFunction, type Transport, toApiError, type WireResponse } from '../internal/transport.js';
import { ReceiptFollower, ReceiptPager } from '../pagination.js';
import type { ReceiptPage, RequestOptions } from '../types.js';

/**
 * The most events one feed request returns (`limit`, CONTRACT §10).
 *
 * @example
 * ```ts
 * const feed = client.receipts.list({ limit: MAX_RECEIPTS_PER_PAGE }); // fewest requests for a backfill
 * ```
 */
export const MAX_RECEIPTS_PER_PAGE = 1000;

/**
 * The wait between polls of `follow` when it is caught up, in milliseconds.
 *
 * @example
 * ```ts
 * client.receipts.follow({ intervalMs: 5 * DEFAULT_FOLLOW_INTERVAL_MS, signal }); // a quieter poller
 * ```
 */
export const DEFAULT_FOLLOW_INTERVAL_MS = 2000;

const PATH = '/receipts';

/**
 * Options of `client.receipts.list()`; `signal` and `timeoutMs` apply to each page request.
 *
 * @example
 * ```ts
 * const params: ReceiptListParams = { after: savedCursor, limit: 500, timeoutMs: 10_000 };
 * for await (const event of client.receipts.list(params)) handle(event);
 * ```
 */
export interface ReceiptListParams extends RequestOptions {
  /** Start after this cursor (a `nextCursor` you kept) instead of at the oldest retained event. */
  after?: string | undefined;
  /** Events per request, 1–1000 (the service's default is 100). */
  limit?: number | undefined;
}

/**
 * Options of `client.receipts.follow()`. `signal` stops following (the loop ends without an error);
 * `timeoutMs` applies to each page request.
 *
 * @example
 * ```ts
 * const params: ReceiptFollowParams = { after: savedCursor, intervalMs: 5_000, signal: AbortSignal.timeout(60_000) };
 * for await (const event of client.receipts.follow(params)) handle(event); // one minute of events
 * ```
 */
export interface ReceiptFollowParams extends ReceiptListParams {
  /** How long to wait before polling again once caught up, in milliseconds. @default 2000 */
  intervalMs?: number | undefined;
}

/**
 * The receipt feed, `GET /receipts` (CONTRACT §10): every receipt the service applied for this account,
 * oldest first, whether or not a callback is configured. Catch up on callbacks you missed with no gap and
 * no duplicate, or follow it instead of receiving callbacks at all.
 *
 * @example
 * ```ts
 * for await (const event of client.receipts.list({ after: checkpoint })) {
 *   console.log(event.id, event.receipt.messageid, event.receipt.to, event.receipt.drStatuscode);
 * }
 * ```
 */
export class Receipts {
  readonly #transport: Transport;
  readonly #sleep: SleepFunction;

  /** @internal Use `client.receipts`. */
  constructor(transport: Transport, sleep: SleepFunction) {
    this.#transport = transport;
    this.#sleep = sleep;
  }

  /**
   * The events after `after` (or from the oldest), oldest first, page after page until the feed is caught
   * up (`hasMore: false`); `.pages()` gives the pages as the service returns them. The pager's `nextCursor`
   * is where to resume afterwards. Nothing is requested until you iterate.
   *
   * @example
   * ```ts
   * const feed = client.receipts.list({ after: await loadCheckpoint(), limit: 500 });
   * for await (const event of feed) {
   *   if (seen.has(event.id)) continue; // the same id as the callback's webhook-id
   *   await apply(event.receipt);
   * }
   * await saveCheckpoint(feed.nextCursor);
   * ```
   */
  list(params: ReceiptListParams = {}): ReceiptPager {
    const { after, limit, signal, timeoutMs } = params;
    return new ReceiptPager((at) => this.#page(at, limit, { signal, timeoutMs }), after);
  }

  /**
   * Follows the feed: drains the pages while `hasMore`, then polls with the last `nextCursor` every
   * `intervalMs` (default 2 s) and yields each new event once, in order. It never ends by itself: abort
   * `signal` (or `break`) to stop, which ends the loop without an error; a request that still fails after
   * the client's retries ends it with that error. Its `nextCursor` is where to resume.
   *
   * @example
   * ```ts
   * const controller = new AbortController();
   * process.once('SIGINT', () => controller.abort());
   * const follower = client.receipts.follow({ after: await loadCheckpoint(), signal: controller.signal });
   * for await (const event of follower) {
   *   console.log(event.recordedAt, event.receipt.to, event.receipt.drStatuscode);
   * }
   * await saveCheckpoint(follower.nextCursor);
   * ```
   */
  follow(params: ReceiptFollowParams = {}): ReceiptFollower {
    const { after, limit, intervalMs = DEFAULT_FOLLOW_INTERVAL_MS, signal, timeoutMs } = params;
    if (!(Number.isFinite(intervalMs) && intervalMs >= 0)) {
      throw new TypeError('intervalMs must be a number of milliseconds, 0 or more');
    }
    return new ReceiptFollower({
      fetchPage: (at, pageSignal) => this.#page(at, limit, { signal: pageSignal ?? signal, timeoutMs }),
      after,
      intervalMs,
      signal,
      sleep: this.#sleep,
    });
  }

  async #page(
    after: string | undefined,
    limit: number | undefined,
    options: RequestOptions,
  ): Promise<ReceiptPage> {
    const query = { after, limit: limit === undefined ? undefined : String(limit) };
    try {
      return await this.#transport.get(PATH, query, 'basic', readFeedPage, options);
    } catch (err) {
      // Only a server older than the SDK lacks the route; say so instead of a bare 404.
      if (err instanceof ApiError && err.status === 404) {
        throw new UnsupportedByServerError(`The server has no GET ${PATH}: it is older than the SDK`, {
          cause: err,
        });
      }
      throw err;
    }
  }
}

function readFeedPage(response: WireResponse): ReceiptPage {
  if (response.status >= 200 && response.status < 300) {
    const page = readReceiptPage(response.body);
    if (page) return page;
  }
  throw toApiError(response);
}
