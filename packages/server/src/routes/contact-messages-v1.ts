import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { AppContext } from '../context.js';
import { ApiError } from '../domain/errors.js';
import { parseMessagesQuery, type RawQuery } from '../domain/query-params.js';
import { authenticate, readCredentials } from '../plugins/authenticate.js';
import { methodNotAllowed } from '../plugins/protocol.js';
import { historyPage, messagesByIds } from './messages-query.js';
import { MessageRecordSchema, MessagesEnvelopeSchema, problemResponses } from './schemas.js';
import { describedOnly } from './validation.js';

export const V1_PATH = '/api/v1/contacts/messages';

export const messagesQuerystring = (withCampaign: boolean) =>
  Type.Object({
    messageIds: Type.Optional(Type.String({ description: 'Mode 1: comma-separated message ids, 1-20' })),
    channel: Type.Optional(Type.String({ description: 'WHATSAPP, APPLEMB, VIBER, SMS, TELEGRAM or RBM' })),
    channelUserId: Type.Optional(Type.String({ description: 'Mode 2: the contact on the channel' })),
    contactId: Type.Optional(Type.String({ description: 'Mode 2: the contact UUID' })),
    size: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
    cursor: Type.Optional(Type.String({ description: 'nextCursor of the previous page' })),
    ...(withCampaign ? { campaignId: Type.Optional(Type.String({ description: 'Campaign filter' })) } : {}),
    key: Type.Optional(Type.String({ description: 'Alternative to HTTP Basic' })),
    secret: Type.Optional(Type.String({ description: 'Alternative to HTTP Basic' })),
  });

/** `GET /api/v1/contacts/messages` — deprecated contact message query (spec §4.2, CONTRACT §3). */
export async function contactMessagesV1Routes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  const sunset = ctx.config.v1Sunset;
  app.get(
    V1_PATH,
    {
      config: { deprecatedV1: true },
      validatorCompiler: describedOnly,
      schema: {
        summary: 'Messages of a contact (deprecated: use GET /messages)',
        description: `Removed at ${sunset.toISOString()}; from then on it answers 410 Gone.`,
        tags: ['messages'],
        deprecated: true,
        security: [{ basic: [] }],
        querystring: messagesQuerystring(false),
        response: {
          200: Type.Union([Type.Array(MessageRecordSchema), MessagesEnvelopeSchema]),
          ...problemResponses(400, 401, 403, 410, 429, 500),
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
      if (!query.ok) throw new ApiError('invalid_request', query.detail);
      if (query.value.mode === 'ids') return messagesByIds(ctx, account.id, query.value);
      return historyPage(ctx, account.id, query.value);
    },
  );
  methodNotAllowed(app, V1_PATH, ['GET'], { deprecatedV1: true });
}
