import type { AppContext } from '../context.js';
import { type CursorBinding, decodeCursor, encodeCursor } from '../domain/cursor.js';
import { ApiError } from '../domain/errors.js';
import type { MessagesQuery } from '../domain/query-params.js';
import { listedMessage, positionOf } from '../domain/records.js';
import { type MessageRecord, toMessageRecord } from '../domain/wire.js';
import type { HistoryQuery } from '../store/store.js';

export interface MessagesPage {
  messages: MessageRecord[];
  nextCursor: string | null;
  hasMore: boolean;
}

/** Mode 1: the records of these ids, oldest first; unknown and foreign ids are simply absent. */
export async function messagesByIds(
  ctx: AppContext,
  accountId: string,
  query: Extract<MessagesQuery, { mode: 'ids' }>,
): Promise<MessageRecord[]> {
  const rows = await ctx.store.findMessagesByIds(accountId, query.ids, query.campaignId ?? undefined);
  return rows.map((m) => toMessageRecord(listedMessage(m)));
}

const invalidCursor = () =>
  new ApiError('invalid_request', 'cursor is not valid for this query; start again without it', {
    param: 'cursor',
  });

const EMPTY: MessagesPage = { messages: [], nextCursor: null, hasMore: false };

/**
 * Mode 2 (and campaign listings): the `size` records just older than the cursor, oldest first on the page.
 * One extra row is read to learn whether anything older exists, so the last page is never empty.
 */
export async function historyPage(
  ctx: AppContext,
  accountId: string,
  query: Extract<MessagesQuery, { mode: 'history' }>,
): Promise<MessagesPage> {
  let contactId = query.contactId;
  if (query.channelUserId !== null && query.channel !== null) {
    contactId = await ctx.store.resolveContact(accountId, query.channel, query.channelUserId);
    // No cursor was ever issued for an identity nobody owns, so one given here is not valid.
    if (contactId === null) {
      if (query.cursor !== null) throw invalidCursor();
      return EMPTY;
    }
  }
  const binding: CursorBinding = {
    accountId,
    contactId,
    channel: query.channel,
    campaignId: query.campaignId,
  };
  const spec: HistoryQuery = { limit: query.size + 1 };
  if (query.cursor !== null) {
    const before = decodeCursor(ctx.pepper, query.cursor, binding);
    if (!before) throw invalidCursor();
    spec.before = before;
  }
  if (contactId !== null) spec.contactId = contactId;
  if (query.channel !== null) spec.channel = query.channel;
  if (query.campaignId !== null) spec.campaignId = query.campaignId;

  const rows = await ctx.store.listHistory(accountId, spec);
  const hasMore = rows.length > query.size;
  const page = rows.slice(0, query.size).reverse();
  const oldest = page[0];
  return {
    messages: page.map(toMessageRecord),
    nextCursor: hasMore && oldest ? encodeCursor(ctx.pepper, positionOf(oldest), binding) : null,
    hasMore,
  };
}
