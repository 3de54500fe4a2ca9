import type { FastifyInstance } from 'fastify';
import type { Metrics } from '../metrics.js';

/**
 * Counts and times every answered request by its route pattern (`/admin/v1/accounts/:id`, never the raw URL,
 * so no id reaches a label); requests that matched no route count as `unmatched`.
 */
export function registerRequestMetrics(app: FastifyInstance, metrics: Metrics): void {
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    metrics.httpRequests.inc({ route, method: request.method, status: String(reply.statusCode) });
    metrics.httpDuration.observe({ route }, reply.elapsedTime / 1000);
  });
}
