import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { adminTokenCheck } from '../auth/admin-token.js';
import { authenticate } from '../auth/authenticate.js';
import { ApiError } from '../domain/errors.js';
import { isCredential } from '../domain/formats.js';
import { type ConsoleDeps, page } from './render.js';

/** What a person reads when the credential check refuses them (never which part was wrong). */
function refusal(error: ApiError): string {
  switch (error.problem) {
    case 'ip_not_allowed':
      return 'This address is not on the account’s IP whitelist.';
    case 'locked_out':
      return `This key is locked after too many wrong secrets; try again in ${Math.ceil((error.retryAfterSeconds ?? 60) / 60)} min.`;
    case 'rate_limited':
      return 'Too many attempts for this key; wait a moment and try again.';
    default:
      return 'Wrong key or secret.';
  }
}

/** Sign-in (account or operator), sign-out, and /console itself, which sends each to where they start. */
export async function signInPages(app: FastifyInstance, { ctx, sessions }: ConsoleDeps): Promise<void> {
  const adminToken = ctx.config.adminToken;
  const adminMatches = adminToken === null ? null : adminTokenCheck(adminToken);

  const form = (request: FastifyRequest, reply: FastifyReply, error: string | null, status = 200, key = '') =>
    page(
      request,
      reply,
      'sign-in',
      {
        title: 'Sign in',
        signInCsrf: sessions.signInToken(request, reply),
        operator: adminMatches !== null,
        error,
        key,
      },
      status,
    );

  app.get('/', { schema: { hide: true } }, async (request, reply) => {
    const signed = request.signed;
    if (signed === null) return reply.redirect('/console/sign-in', 303);
    return reply.redirect(
      signed.kind === 'operator' ? '/console/operator/accounts' : '/console/messages',
      303,
    );
  });

  app.get('/sign-in', { schema: { hide: true } }, async (request, reply) => {
    if (request.signed !== null) return reply.redirect('/console', 303);
    return form(request, reply, null);
  });

  // The API's own credential check (auth/authenticate.ts): whitelist, lockout and rate are the API's, so ten
  // wrong secrets here lock the key for /dlr too, and the other way round.
  app.post('/sign-in', { schema: { hide: true } }, async (request, reply) => {
    const body = request.body as Record<string, unknown>;
    const key = typeof body.key === 'string' ? body.key.trim() : '';
    const secret = typeof body.secret === 'string' ? body.secret.trim() : '';
    if (!isCredential(key) || !isCredential(secret)) {
      return form(request, reply, 'A key and a secret are 8 letters and digits each.', 400, key);
    }
    try {
      const account = await authenticate(ctx, request, reply, { key, secret });
      await sessions.start(request, reply, account.id);
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      if (error.retryAfterSeconds !== null) reply.header('retry-after', String(error.retryAfterSeconds));
      return form(
        request,
        reply,
        refusal(error),
        error.dlrCode === 429 ? 429 : error.problem === 'ip_not_allowed' ? 403 : 401,
        key,
      );
    }
    return reply.redirect('/console', 303);
  });

  app.post('/sign-in/operator', { schema: { hide: true } }, async (request, reply) => {
    if (adminMatches === null)
      throw new ApiError('not_found', 'The operator console is off: no admin token is set.');
    const token = (request.body as Record<string, unknown>).token;
    if (typeof token !== 'string' || !adminMatches(token.trim())) {
      return form(request, reply, 'Wrong admin token.', 401);
    }
    await sessions.start(request, reply, null);
    return reply.redirect('/console', 303);
  });

  app.post('/sign-out', { schema: { hide: true } }, async (request, reply) => {
    await sessions.end(request, reply);
    return reply.redirect('/console/sign-in', 303);
  });
}
