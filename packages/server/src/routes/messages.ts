import type { FastifyInstance } from 'fastify';
import { authenticate, readCredentials } from '../auth/authenticate.js';
import type { AppContext } from '../context.js';
import { ApiError } from '../domain/errors.js';
import { parseMessagesQuery, type RawQuery } from '../domain/query-params.js';
import { stringified } from '../http/json-reply.js';
import { historyPage, messagesByIds } from '../http/messages-query.js';
import { methodNotAllowed } from '../http/protocol.js';
import {
  MessagesEnvelopeSchema,
  messagesQuerystring,
  queryProblems,
  RATE_LIMIT_HEADERS,
  ref,
  response,
  SECURITY,
} from '../http/schemas.js';
import { describedOnly } from '../http/validation.js';

/** `GET /messages` — the successor of the v1 query, with campaign filtering (CONTRACT §4). */
export async function messagesRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  app.get(
    '/messages',
    {
      validatorCompiler: describedOnly,
      schema: {
        operationId: 'listMessages',
        summary: 'Messages by id, a contact history, or a campaign',
        description:
          'Mode 1: messageIds (1-20). Mode 2: channel with exactly one of channelUserId or contactId. ' +
          'campaignId filters both modes, or alone lists a campaign (channel then optional). Pages go ' +
          'backwards in time: each holds the messages just older than the cursor, oldest first.',
        tags: ['messages'],
        security: SECURITY.query,
        querystring: messagesQuerystring(true),
        response: {
          200: response(
            'Mode 1: the records, oldest first; otherwise one page',
            ref(MessagesEnvelopeSchema),
            {
              headers: RATE_LIMIT_HEADERS,
            },
          ),
          ...queryProblems([]),
        },
      },
    },
    async (request, reply) => {
      const account = await authenticate(ctx, request, reply, readCredentials(request));
      const query = parseMessagesQuery(request.query as RawQuery, true);
      if (!query.ok) throw new ApiError('invalid_request', query.detail, { param: query.param });
      if (query.value.mode === 'ids') {
        return stringified(reply, {
          messages: await messagesByIds(ctx, account.id, query.value),
          nextCursor: null,
          hasMore: false,
        });
      }
      return stringified(reply, await historyPage(ctx, account.id, query.value));
    },
  );
  methodNotAllowed(app, '/messages', ['GET']);
}
