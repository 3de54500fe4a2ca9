import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.js';
import { methodNotAllowed } from '../http/protocol.js';
import {
  HealthSchema,
  PROTOCOL_STATUSES,
  problemResponses,
  ref,
  response,
  SECURITY,
} from '../http/schemas.js';

const Status = ref(HealthSchema);
const READY_TIMEOUT_MS = 2000;

/**
 * Liveness (the process answers) and readiness (the primary database answers, within 2 s; the read replicas'
 * state rides along in the body).
 */
export async function healthRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  app.get(
    '/healthz',
    {
      schema: {
        operationId: 'getLiveness',
        summary: 'Liveness: 200 while the process runs',
        tags: ['operations'],
        security: SECURITY.none,
        response: {
          200: response('The process runs: {"status":"ok"}', Status),
          ...problemResponses(PROTOCOL_STATUSES),
        },
      },
    },
    async () => ({ status: 'ok' }),
  );
  app.get(
    '/readyz',
    {
      schema: {
        operationId: 'getReadiness',
        summary: 'Readiness: 503 while the database cannot be reached',
        tags: ['operations'],
        security: SECURITY.none,
        response: {
          200: response('The database answers: {"status":"ok"}', Status),
          503: response('The database cannot be reached: {"status":"unavailable"}', Status, {
            example: { status: 'unavailable' },
          }),
          ...problemResponses(PROTOCOL_STATUSES),
        },
      },
    },
    async (request, reply) => {
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          ctx.store.ping(),
          new Promise((_, reject) => {
            timer = setTimeout(() => reject(new Error('database ping timed out')), READY_TIMEOUT_MS);
          }),
        ]);
        // Replicas are reported, never judged: a lagging or dead one only takes itself out of the reads.
        const replicas = ctx.store.readReplicas?.status();
        return replicas === undefined ? { status: 'ok' } : { status: 'ok', replicas };
      } catch (error) {
        request.log.warn({ err: error }, 'not ready');
        return reply.code(503).send({ status: 'unavailable' });
      } finally {
        clearTimeout(timer);
      }
    },
  );
  methodNotAllowed(app, '/healthz', ['GET']);
  methodNotAllowed(app, '/readyz', ['GET']);
}
