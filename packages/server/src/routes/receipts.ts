import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { authenticate, readCredentials } from '../auth/authenticate.js';
import type { AppContext } from '../context.js';
import { decodeSeqCursor, encodeSeqCursor } from '../domain/cursor.js';
import type { StoredReceiptEvent } from '../domain/deliveries/events.js';
import { ApiError } from '../domain/errors.js';
import { DEFAULT_FEED_LIMIT, MAX_FEED_LIMIT, parseFeedQuery, type RawQuery } from '../domain/query-params.js';
import { methodNotAllowed } from '../http/protocol.js';
import {
  queryProblems,
  RATE_LIMIT_HEADERS,
  ReceiptFeedSchema,
  ref,
  response,
  SECURITY,
} from '../http/schemas.js';
import { describedOnly } from '../http/validation.js';

const feedBinding = (accountId: string) => ['receipts', accountId];

/**
 * A page of the feed as ReceiptFeedSchema has it, written here rather than by the route's serializer: each
 * event's item is spliced in as the store gives it back (the JSON.stringify of the DlrItem, in DlrItemSchema's
 * order, when it was recorded: store/event-item.ts), not parsed and serialized again. That was most of a page's
 * cost per row (docs/benchmarks.md).
 * The other fields are ours: an `evt_` id, an ISO instant and a cursor, quoted by JSON.stringify.
 */
export function feedPage(page: readonly StoredReceiptEvent[], nextCursor: string, hasMore: boolean): string {
  const receipts = page.map(
    (e) =>
      `{"id":${JSON.stringify(e.id)},"recordedAt":"${e.recordedAt.toISOString()}","receipt":${e.itemJson}}`,
  );
  return `{"receipts":[${receipts.join(',')}],"nextCursor":${JSON.stringify(nextCursor)},"hasMore":${hasMore}}`;
}

/** `GET /receipts` — every receipt event of the account, oldest first, for reconciliation (CONTRACT §10). */
export async function receiptsRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  app.get(
    '/receipts',
    {
      validatorCompiler: describedOnly,
      schema: {
        operationId: 'listReceipts',
        summary: 'Receipt events, oldest first: catch up on missed callbacks',
        description:
          'Lists every applied receipt of the account as recorded (whether or not a callback is configured), ' +
          'with no gap and no duplicate across pages. Poll with nextCursor for what comes later.',
        tags: ['receipts'],
        security: SECURITY.query,
        querystring: Type.Object({
          after: Type.Optional(
            Type.String({
              minLength: 1,
              description: 'nextCursor of the previous page; omit to start at the oldest',
            }),
          ),
          limit: Type.Optional(
            Type.Integer({ minimum: 1, maximum: MAX_FEED_LIMIT, default: DEFAULT_FEED_LIMIT }),
          ),
        }),
        response: {
          200: response('One page of events, oldest first', ref(ReceiptFeedSchema), {
            headers: RATE_LIMIT_HEADERS,
          }),
          ...queryProblems([]),
        },
      },
    },
    async (request, reply) => {
      const account = await authenticate(ctx, request, reply, readCredentials(request));
      const query = parseFeedQuery(request.query as RawQuery);
      if (!query.ok) throw new ApiError('invalid_request', query.detail, { param: query.param });
      const binding = feedBinding(account.id);
      let after = 0;
      if (query.value.after !== null) {
        const decoded = decodeSeqCursor(ctx.pepper, query.value.after, binding);
        if (decoded === null) {
          throw new ApiError(
            'invalid_request',
            'after is not a cursor of this feed; start again without it',
            {
              param: 'after',
            },
          );
        }
        after = decoded;
      }
      // One more than asked tells whether more exist now, without a second query.
      const events = await ctx.store.listStoredReceiptEvents(account.id, after, query.value.limit + 1);
      const page = events.slice(0, query.value.limit);
      const last = page.at(-1)?.seq ?? after;
      reply.type('application/json; charset=utf-8');
      return feedPage(page, encodeSeqCursor(ctx.pepper, last, binding), events.length > query.value.limit);
    },
  );
  methodNotAllowed(app, '/receipts', ['GET']);
}
