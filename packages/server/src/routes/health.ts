import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { AppContext } from '../context.js';

const Status = Type.Object({ status: Type.String() });
const READY_TIMEOUT_MS = 2000;

/** Liveness (the process answers) and readiness (the database answers, within 2 s). */
export async function healthRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  app.get(
    '/healthz',
    { schema: { summary: 'Liveness', tags: ['operations'], response: { 200: Status } } },
    async () => ({ status: 'ok' }),
  );
  app.get(
    '/readyz',
    {
      schema: {
        summary: 'Readiness: 503 while the database cannot be reached',
        tags: ['operations'],
        response: { 200: Status, 503: Status },
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
        return { status: 'ok' };
      } catch (error) {
        request.log.warn({ err: error }, 'not ready');
        return reply.code(503).send({ status: 'unavailable' });
      } finally {
        clearTimeout(timer);
      }
    },
  );
}
