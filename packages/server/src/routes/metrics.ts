import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { requireAdminToken } from '../auth/admin-token.js';
import type { AppContext } from '../context.js';
import { methodNotAllowed } from '../http/protocol.js';
import { PROTOCOL_STATUSES, problemResponses, response, SECURITY } from '../http/schemas.js';

/**
 * `GET /metrics` — Prometheus text exposition (CONTRACT §11). Behind the admin token when one is set: the
 * numbers describe every account's traffic.
 */
export async function metricsRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  const token = ctx.config.adminToken;
  if (token) requireAdminToken(app, token);
  app.get(
    '/metrics',
    {
      schema: {
        operationId: 'getMetrics',
        summary: 'Prometheus metrics',
        description: 'Behind the admin bearer token when WAYBILL_ADMIN_TOKEN is set.',
        tags: ['operations'],
        security: token ? SECURITY.admin : SECURITY.none,
        response: {
          200: response('Prometheus text exposition format 0.0.4', Type.String(), {
            mediaType: 'text/plain',
            example:
              '# HELP waybill_receipt_events_total Receipt events recorded (applied receipts, parked ones included once they apply)\n# TYPE waybill_receipt_events_total counter\nwaybill_receipt_events_total 42\n',
          }),
          ...problemResponses([...(token ? [401] : []), 500, ...PROTOCOL_STATUSES]),
        },
      },
    },
    async (_request, reply) => {
      const text = await ctx.metrics.scrape(ctx.store);
      return reply.type(ctx.metrics.registry.contentType).send(text);
    },
  );
  methodNotAllowed(app, '/metrics', ['GET']);
}
