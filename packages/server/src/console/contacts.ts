import type { FastifyInstance } from 'fastify';
import { ApiError } from '../domain/errors.js';
import { parseMessagesQuery, type RawQuery } from '../domain/query-params.js';
import { CHANNELS } from '../domain/vocabulary.js';
import { historyPage } from '../http/messages-query.js';
import { pageAccount, signedOnly } from './guards.js';
import { type ConsoleDeps, field, page } from './render.js';

/** The query parameters of the API's history (CONTRACT §4) the form sends; empty ones count as absent. */
const HISTORY_FIELDS = ['channel', 'channelUserId', 'contactId', 'campaignId', 'cursor', 'size'] as const;

/**
 * Page 2: a contact's history by channel + channelUserId (or contact id), newest first, with the campaign
 * filter: the API's own query parsing and paging (http/messages-query.ts), so its cursors work here too.
 */
export async function contactPages(app: FastifyInstance, { ctx }: ConsoleDeps): Promise<void> {
  app.get('/contacts', { schema: { hide: true }, preHandler: signedOnly }, async (request, reply) => {
    const account = await pageAccount(ctx, request);
    const raw: Record<string, string> = {};
    for (const name of HISTORY_FIELDS) {
      const value = field(request.query, name);
      if (value !== undefined) raw[name] = value;
    }
    const data = { title: 'Contact history', account, channels: CHANNELS, form: raw };
    const asked =
      raw.channelUserId !== undefined || raw.contactId !== undefined || raw.campaignId !== undefined;
    if (!asked) return page(request, reply, 'contacts', data);
    const query = parseMessagesQuery(raw as RawQuery, true);
    if (!query.ok || query.value.mode !== 'history') {
      const detail = query.ok ? 'Give a channel and a channel user id, or a contact id.' : query.detail;
      return page(request, reply, 'contacts', { ...data, error: detail }, 400);
    }
    let result: Awaited<ReturnType<typeof historyPage>>;
    try {
      result = await historyPage(ctx, account.id, query.value);
    } catch (error) {
      if (!(error instanceof ApiError) || error.problem !== 'invalid_request') throw error;
      return page(request, reply, 'contacts', { ...data, error: error.message }, 400);
    }
    // The API pages backwards in time, oldest first within a page; people read the newest first.
    const messages = [...result.messages].reverse();
    const older =
      result.nextCursor === null ? null : new URLSearchParams({ ...raw, cursor: result.nextCursor });
    if (older && request.signed?.kind === 'operator') older.set('account', account.id);
    return page(request, reply, 'contacts', {
      ...data,
      messages,
      older: older === null ? null : `/console/contacts?${older}`,
      paged: raw.cursor !== undefined,
    });
  });
}
