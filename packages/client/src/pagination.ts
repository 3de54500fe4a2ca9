import type { MessagePage, MessageRecord, ReceiptEvent, ReceiptPage } from './types.js';

/** Fetches the page that `cursor` points at (the newest page when `cursor` is undefined). */
export type FetchPage = (cursor: string | undefined) => Promise<MessagePage>;

/**
 * Message history, walked backwards. Iterate it with `for await` to get messages newest to oldest, one
 * request per page, as far back as you keep going; or call `.pages()` for the pages exactly as the service
 * returns them (each oldest first, each page older than the one before). Nothing is requested until you
 * iterate, and each iteration starts again from the newest page.
 *
 * @example
 * ```ts
 * const history = client.messages.history({ channel: 'SMS', channelUserId: '447700900123' });
 * for await (const message of history) {
 *   console.log(message.createdAt, message.text);
 *   if (message.createdAt < '2026-01-01') break; // stops fetching
 * }
 * for await (const page of history.pages()) console.log(page.messages.length, page.nextCursor);
 * ```
 */
export class MessagePager implements AsyncIterable<MessageRecord> {
  readonly #fetchPage: FetchPage;
  readonly #startCursor: string | undefined;

  /** @internal Use `client.messages.history()` or `client.messages.campaign()`. */
  constructor(fetchPage: FetchPage, startCursor?: string) {
    this.#fetchPage = fetchPage;
    this.#startCursor = startCursor;
  }

  /**
   * The pages as the service returns them: the newest first, each one ordered oldest first.
   *
   * @example
   * ```ts
   * for await (const page of client.messages.campaign('spring-sale').pages()) {
   *   await save(page.messages);
   *   checkpoint(page.nextCursor); // resume later with { cursor }
   * }
   * ```
   */
  async *pages(): AsyncGenerator<MessagePage, void, undefined> {
    let cursor = this.#startCursor;
    const seen = new Set<string>();
    for (;;) {
      const page = await this.#fetchPage(cursor);
      yield page;
      if (!page.hasMore || page.nextCursor === null || seen.has(page.nextCursor)) return;
      // A cursor handed out twice would loop forever; the contract says it never happens.
      seen.add(page.nextCursor);
      cursor = page.nextCursor;
    }
  }

  /** Messages newest to oldest, across pages. */
  async *[Symbol.asyncIterator](): AsyncGenerator<MessageRecord, void, undefined> {
    for await (const page of this.pages()) {
      for (let i = page.messages.length - 1; i >= 0; i--) {
        const message = page.messages[i];
        if (message !== undefined) yield message;
      }
    }
  }

  /**
   * Collects up to `limit` messages, newest first, fetching only the pages needed.
   *
   * @example
   * ```ts
   * const latest = await client.messages.history({ channel: 'VIBER', contactId }).take(50);
   * ```
   */
  async take(limit: number): Promise<MessageRecord[]> {
    const out: MessageRecord[] = [];
    if (limit <= 0) return out;
    for await (const message of this) {
      out.push(message);
      if (out.length >= limit) break;
    }
    return out;
  }
}

/** Fetches the feed page after `after` (from the oldest retained event when undefined). */
export type FetchReceiptPage = (after: string | undefined, signal?: AbortSignal) => Promise<ReceiptPage>;

/**
 * The receipt feed, walked forwards from a cursor until it is caught up. Iterate it with `for await` to get
 * events oldest first, one request per page, until a page says `hasMore: false`; or call `.pages()` for the
 * pages exactly as the service returns them. Nothing is requested until you iterate, and each iteration
 * starts again from the cursor you gave.
 *
 * `nextCursor` is where to resume: the `nextCursor` of the last page you consumed in full. It only moves
 * when you come back for more after a page's last event, so a loop that stops in the middle of a page (a
 * `break`, an error in your handler) resumes at the start of that page: an event may come to you twice,
 * never not at all. Skip repeats by event `id`.
 *
 * @example
 * ```ts
 * const feed = client.receipts.list({ after: await loadCheckpoint() });
 * for await (const event of feed) await apply(event.receipt);
 * await saveCheckpoint(feed.nextCursor); // caught up: resume here next time
 * ```
 */
export class ReceiptPager implements AsyncIterable<ReceiptEvent> {
  readonly #fetchPage: FetchReceiptPage;
  readonly #startCursor: string | undefined;
  #nextCursor: string | undefined;

  /** @internal Use `client.receipts.list()`. */
  constructor(fetchPage: FetchReceiptPage, startCursor?: string) {
    this.#fetchPage = fetchPage;
    this.#startCursor = startCursor;
    this.#nextCursor = startCursor;
  }

  /**
   * Where to resume (pass it as `after`): the `nextCursor` of the last page consumed in full, or the cursor
   * the walk started from (`undefined`, the oldest event, when it started there) before the first one.
   *
   * @example
   * ```ts
   * const feed = client.receipts.list({ after: saved });
   * for await (const event of feed) handle(event);
   * saved = feed.nextCursor;
   * ```
   */
  get nextCursor(): string | undefined {
    return this.#nextCursor;
  }

  /**
   * The pages as the service returns them, oldest first, until one says `hasMore: false` (which may be an
   * empty page when there was nothing to read).
   *
   * @example
   * ```ts
   * for await (const page of client.receipts.list({ limit: 1000 }).pages()) {
   *   await db.insertMany(page.receipts);
   *   await saveCheckpoint(page.nextCursor);
   * }
   * ```
   */
  async *pages(): AsyncGenerator<ReceiptPage, void, undefined> {
    let cursor = this.#startCursor;
    this.#nextCursor = cursor;
    for (;;) {
      const page = await this.#fetchPage(cursor);
      yield page;
      // The caller came back for more: that page is done with.
      this.#nextCursor = page.nextCursor;
      // An empty page, or a cursor that does not move, cannot lead anywhere: never loop on it.
      if (!page.hasMore || page.receipts.length === 0 || page.nextCursor === cursor) return;
      cursor = page.nextCursor;
    }
  }

  /** Events oldest first, across pages, until the feed is caught up. */
  async *[Symbol.asyncIterator](): AsyncGenerator<ReceiptEvent, void, undefined> {
    for await (const page of this.pages()) yield* page.receipts;
  }
}

/** How `ReceiptFollower` fetches and waits; built by `client.receipts.follow()`. */
export interface FollowConfig {
  fetchPage: FetchReceiptPage;
  after: string | undefined;
  intervalMs: number;
  signal: AbortSignal | undefined;
  sleep: (ms: number, signal: AbortSignal) => Promise<void>;
}

/**
 * The receipt feed, followed: events oldest first, pages drained back to back while `hasMore`, then one
 * poll every `intervalMs` for new ones. It never finishes by itself: it ends (without an error) when the
 * `signal` aborts, or when you `break` out of the loop. A request that still fails after the client's
 * retries ends it with that error; resume from `nextCursor`.
 *
 * `nextCursor` is where to resume, with the same rule as `ReceiptPager`: it moves once you come back for
 * more after a page's last event (or at once after an empty page), so stopping mid-page replays the rest of
 * that page rather than skipping it.
 *
 * @example
 * ```ts
 * const controller = new AbortController();
 * process.once('SIGTERM', () => controller.abort());
 * const follower = client.receipts.follow({ after: await loadCheckpoint(), signal: controller.signal });
 * for await (const event of follower) {
 *   await apply(event.receipt);
 * }
 * await saveCheckpoint(follower.nextCursor); // after the abort
 * ```
 */
export class ReceiptFollower implements AsyncIterableIterator<ReceiptEvent, void, undefined> {
  #nextCursor: string | undefined;
  readonly #events: AsyncGenerator<ReceiptEvent, void, undefined>;

  /** @internal Use `client.receipts.follow()`. */
  constructor(config: FollowConfig) {
    this.#nextCursor = config.after;
    this.#events = this.#run(config);
  }

  /**
   * Where to resume (pass it as `after`): the `nextCursor` of the last page consumed in full, or the
   * cursor the follower started from before that.
   *
   * @example
   * ```ts
   * for await (const event of follower) if (await handle(event)) break;
   * await saveCheckpoint(follower.nextCursor);
   * ```
   */
  get nextCursor(): string | undefined {
    return this.#nextCursor;
  }

  /** The next event; waits (polling) until there is one, or resolves `done` once the signal aborts. */
  next(): Promise<IteratorResult<ReceiptEvent, void>> {
    return this.#events.next();
  }

  /** Stops following (what `break` in a `for await` loop calls). */
  return(): Promise<IteratorResult<ReceiptEvent, void>> {
    return this.#events.return(undefined);
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  async *#run(config: FollowConfig): AsyncGenerator<ReceiptEvent, void, undefined> {
    const { fetchPage, intervalMs, signal, sleep } = config;
    // One signal for the requests and the waits, so an abort ends whichever is under way.
    const controller = new AbortController();
    const onAbort = () => controller.abort(signal?.reason);
    if (signal?.aborted) return;
    signal?.addEventListener('abort', onAbort, { once: true });
    const stopped = () => controller.signal.aborted;
    try {
      let cursor = config.after;
      for (;;) {
        let page: ReceiptPage;
        try {
          page = await fetchPage(cursor, controller.signal);
        } catch (err) {
          if (stopped()) return;
          throw err;
        }
        let consumed = 0;
        for (const event of page.receipts) {
          yield event;
          consumed++;
          if (stopped()) break;
        }
        if (consumed === page.receipts.length) {
          cursor = page.nextCursor;
          this.#nextCursor = cursor;
        }
        if (stopped()) return;
        // Straight on while more is waiting; otherwise (caught up, or a page that moved nothing) wait.
        if (page.hasMore && page.receipts.length > 0) continue;
        try {
          await sleep(intervalMs, controller.signal);
        } catch (err) {
          if (stopped()) return;
          throw err;
        }
      }
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  }
}
