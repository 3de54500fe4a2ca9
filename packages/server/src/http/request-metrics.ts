import type { FastifyInstance } from 'fastify';
import { logRequest } from './access-log.js';
import type { Metrics } from './metrics.js';

/**
 * What is observed of every answered request, in one onResponse hook: its count and duration by route pattern
 * (`/admin/v1/accounts/:id`, never the raw URL, so no id reaches a label; requests that matched no route count
 * as `unmatched`), and its access-log line when the access log is on. One callback-style hook, not one per
 * concern nor an async one: each hook is an iteration of Fastify's hook runner and an async hook a promise and a
 * microtask turn on every request, measurable shares of /dlr (docs/benchmarks.md).
 */
export function registerResponseObservers(app: FastifyInstance, metrics: Metrics, accessLog: boolean): void {
  app.addHook(
    'onResponse',
    accessLog
      ? (request, reply, done) => {
          metrics.observeRequest(
            request.routeOptions.url ?? 'unmatched',
            request.method,
            reply.statusCode,
            reply.elapsedTime / 1000,
          );
          logRequest(request, reply);
          done();
        }
      : (request, reply, done) => {
          metrics.observeRequest(
            request.routeOptions.url ?? 'unmatched',
            request.method,
            reply.statusCode,
            reply.elapsedTime / 1000,
          );
          done();
        },
  );
}
