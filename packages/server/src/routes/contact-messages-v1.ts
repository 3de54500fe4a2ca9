import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { authenticate, readCredentials } from '../auth/authenticate.js';
import type { AppContext } from '../context.js';
import { ApiError } from '../domain/errors.js';
import { parseMessagesQuery, type RawQuery } from '../domain/query-params.js';
import { MESSAGE_RECORD_EXAMPLE, MESSAGES_ENVELOPE_EXAMPLE } from '../http/examples.js';
import { stringified } from '../http/json-reply.js';
import { historyPage, messagesByIds } from '../http/messages-query.js';
import { methodNotAllowed } from '../http/protocol.js';
import {
  type HeaderName,
  MessageRecordSchema,
  MessagesEnvelopeSchema,
  messagesQuerystring,
  queryProblems,
  RATE_LIMIT_HEADERS,
  ref,
  response,
  SECURITY,
} from '../http/schemas.js';
import { describedOnly } from '../http/validation.js';

export const V1_PATH = '/api/v1/contacts/messages';

const V1_HEADERS: HeaderName[] = ['Deprecation', 'Sunset', 'Link'];

/** `GET /api/v1/contacts/messages` — deprecated contact message query (spec §4.2, CONTRACT §3). */
export async function contactMessagesV1Routes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  const sunset = ctx.config.v1Sunset;
  app.get(
    V1_PATH,
    {
      config: { deprecatedV1: true },
      validatorCompiler: describedOnly,
      schema: {
        operationId: 'listContactMessagesV1',
        summary: 'Messages of a contact (deprecated: use GET /messages)',
        description:
          `Removed at ${sunset.toISOString()}; from then on it answers 410 Gone. Mode 1 (messageIds) answers a ` +
          'bare array; Mode 2 (channel with channelUserId or contactId) a page envelope.',
        tags: ['messages'],
        deprecated: true,
        security: SECURITY.query,
        querystring: messagesQuerystring(false),
        response: {
          200: response(
            'Mode 1: the records, oldest first; Mode 2: one page of the history',
            Type.Union([Type.Array(ref(MessageRecordSchema)), ref(MessagesEnvelopeSchema)]),
            {
              headers: [...RATE_LIMIT_HEADERS, ...V1_HEADERS],
              examples: {
                byIds: { summary: 'Mode 1 (messageIds): a bare array', value: [MESSAGE_RECORD_EXAMPLE] },
                history: { summary: 'Mode 2: one page of the history', value: MESSAGES_ENVELOPE_EXAMPLE },
              },
            },
          ),
          ...queryProblems([410], V1_HEADERS),
        },
      },
    },
    async (request, reply) => {
      if (ctx.now().getTime() >= sunset.getTime()) {
        throw new ApiError(
          'gone',
          `this endpoint was removed on ${sunset.toISOString()}; use GET /messages`,
          {
            extra: { successor: '/messages' },
          },
        );
      }
      const account = await authenticate(ctx, request, reply, readCredentials(request));
      const query = parseMessagesQuery(request.query as RawQuery, false);
      if (!query.ok) throw new ApiError('invalid_request', query.detail, { param: query.param });
      if (query.value.mode === 'ids')
        return stringified(reply, await messagesByIds(ctx, account.id, query.value));
      return stringified(reply, await historyPage(ctx, account.id, query.value));
    },
  );
  methodNotAllowed(app, V1_PATH, ['GET'], { deprecatedV1: true });
}
