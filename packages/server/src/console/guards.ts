import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../context.js';
import { ApiError } from '../domain/errors.js';
import { isUuid } from '../domain/formats.js';
import type { Account } from '../domain/records.js';

/** Sends a request without a live session to the sign-in page (a preHandler of every page but sign-in's). */
export async function signedOnly(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  if (request.signed === null) return reply.redirect('/console/sign-in', 303);
}

/** The operator's pages: an account's session is refused outright (403), no session goes to sign-in. */
export async function operatorOnly(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  if (request.signed === null) return reply.redirect('/console/sign-in', 303);
  if (request.signed.kind !== 'operator')
    throw new ApiError('ip_not_allowed', 'This page is the operator’s.');
}

/**
 * The account a page shows: an account's own, always (whatever the request names, so no session can reach
 * another account's data); the operator names one with `account` (query or form).
 */
export async function pageAccount(ctx: AppContext, request: FastifyRequest): Promise<Account> {
  const signed = request.signed;
  if (signed === null) throw new ApiError('unauthorized', 'Sign in first.');
  if (signed.kind === 'account') return signed.account;
  const named =
    (request.query as Record<string, unknown>).account ??
    (request.body as Record<string, unknown> | undefined)?.account;
  const account = typeof named === 'string' && isUuid(named) ? await ctx.store.getAccount(named) : null;
  if (!account) throw new ApiError('not_found', 'Choose an account on the Accounts page first.');
  return account;
}
