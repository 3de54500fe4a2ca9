import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../domain/errors.js';

const digest = (value: string) => createHash('sha256').update(value).digest();

/** Every /admin/v1 request must carry `Authorization: Bearer <WAYBILL_ADMIN_TOKEN>`. */
export function requireAdminToken(app: FastifyInstance, token: string): void {
  // Comparing digests keeps the comparison constant-time whatever the length of the presented token.
  const expected = digest(token);
  app.addHook('onRequest', async (request, reply) => {
    const header = request.headers.authorization ?? '';
    const presented = /^bearer /i.test(header) ? header.slice(7).trim() : null;
    if (presented === null || !timingSafeEqual(digest(presented), expected)) {
      reply.header('www-authenticate', 'Bearer realm="waybill-admin"');
      throw new ApiError('unauthorized', 'a valid admin bearer token is required');
    }
  });
}
