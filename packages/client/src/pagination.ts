import type { MessagePage, MessageRecord } from './types.js';

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
