import type { FastifyInstance } from 'fastify';
import type { Metrics } from './metrics.js';

/**
 * Counts and times every answered request by its route pattern (`/admin/v1/accounts/:id`, never the raw URL,
 * so no id reaches a label); requests that matched no route count as `unmatched`.
 */
export function registerRequestMetrics(app: FastifyInstance, metrics: Metrics): void {
  // Callback-style hooks (here and in the other per-request plugins): an async hook costs a promise and a
  // microtask turn on every request, a measurable share of /dlr (docs/benchmarks.md).
  app.addHook('onResponse', (request, reply, done) => {
    metrics.observeRequest(
      request.routeOptions.url ?? 'unmatched',
      request.method,
      reply.statusCode,
      reply.elapsedTime / 1000,
    );
    done();
  });
}
