import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { AppContext } from '../context.js';
import { parseDlrQuery, type RawQuery } from '../domain/query-params.js';
import { toDlrItem } from '../domain/wire.js';
import { authenticate } from '../plugins/authenticate.js';
import { sendDlrFailure } from '../plugins/problem.js';
import { methodNotAllowed } from '../plugins/protocol.js';
import { DlrFailureSchema, DlrItemSchema } from './schemas.js';
import { describedOnly } from './validation.js';

const querystring = Type.Object({
  key: Type.String({ description: 'API key, 8 alphanumeric characters' }),
  secret: Type.String({ description: 'API secret, 8 alphanumeric characters' }),
  messageid: Type.String({ description: 'Message id, 1-64 characters of A-Z a-z 0-9 . _ : -' }),
});

/** `GET /dlr` — the delivery result of one SMS request (spec §4.1, CONTRACT §2). */
export async function dlrRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  app.get(
    '/dlr',
    {
      config: { errorStyle: 'dlr' },
      // The spec's codes 2 and 3 and their order are checked by parseDlrQuery; the schema documents them.
      validatorCompiler: describedOnly,
      schema: {
        summary: 'Delivery result of one SMS request',
        description:
          'An array of delivery-receipt items (one per recipient) on success, or a {code, descr} object on failure.',
        tags: ['status query'],
        querystring,
        response: {
          200: Type.Array(DlrItemSchema),
          ...Object.fromEntries([400, 401, 402, 403, 429, 500].map((s) => [s, DlrFailureSchema])),
        },
      },
    },
    async (request, reply) => {
      const query = parseDlrQuery(request.query as RawQuery);
      if (!query.ok) return sendDlrFailure(reply, query.code);
      const account = await authenticate(ctx, request, reply, query);
      if (!account.dlrQueryEnabled) return sendDlrFailure(reply, 20);
      if (account.balance + account.creditLimit < 0) return sendDlrFailure(reply, 9);
      const rows = await ctx.store.findDlr(account.id, query.messageId);
      return rows.map(toDlrItem);
    },
  );
  methodNotAllowed(app, '/dlr', ['GET'], { errorStyle: 'dlr' });
}
