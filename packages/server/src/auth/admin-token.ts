import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../domain/errors.js';

const digest = (value: string) => createHash('sha256').update(value).digest();

/**
 * The one check of the admin token, shared by the operator API and the console's operator sign-in. Comparing
 * digests keeps the comparison constant-time whatever the length of the presented token.
 */
export function adminTokenCheck(token: string): (presented: string) => boolean {
  const expected = digest(token);
  return (presented) => timingSafeEqual(digest(presented), expected);
}

/** Every /admin/v1 request must carry `Authorization: Bearer <WAYBILL_ADMIN_TOKEN>`. */
export function requireAdminToken(app: FastifyInstance, token: string): void {
  const matches = adminTokenCheck(token);
  app.addHook('onRequest', async (request, reply) => {
    const header = request.headers.authorization ?? '';
    const presented = /^bearer /i.test(header) ? header.slice(7).trim() : null;
    if (presented === null || !matches(presented)) {
      reply.header('www-authenticate', 'Bearer realm="waybill-admin"');
      throw new ApiError('unauthorized', 'a valid admin bearer token is required');
    }
  });
}
