import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../context.js';
import { secretMatches } from '../domain/credentials.js';
import { ApiError } from '../domain/errors.js';
import { isCredential } from '../domain/formats.js';
import { ipAllowed } from '../domain/ip-allowlist.js';
import type { AccountWithSecret } from '../domain/records.js';

export interface Credentials {
  key: string;
  secret: string;
}

const invalidCredentials = () => new ApiError('unauthorized', 'invalid credentials', { dlrCode: 4 });

/**
 * The one credential check of every query endpoint, in the contract's order: key lookup → IP whitelist →
 * lockout → secret → rate limit. The whitelist comes before the secret so a caller from outside it learns
 * nothing about the secret and cannot lock the key out. Sets the RateLimit headers on success.
 */
export async function authenticate(
  ctx: AppContext,
  request: FastifyRequest,
  reply: FastifyReply,
  credentials: Credentials,
): Promise<AccountWithSecret> {
  const account = await ctx.store.getAccountByKey(credentials.key);
  if (!account) throw invalidCredentials();
  if (!ipAllowed(account.ipWhitelist, request.ip)) {
    throw new ApiError('ip_not_allowed', `${request.ip} is not on this account's IP whitelist`, {
      dlrCode: 5,
    });
  }
  const lockedFor = await ctx.limits.lockedFor(account.id);
  if (lockedFor > 0) {
    throw new ApiError('locked_out', 'this key is locked after too many failed secrets', {
      retryAfterSeconds: lockedFor,
      dlrCode: 429,
    });
  }
  if (!secretMatches(ctx.pepper, credentials.secret, account.secretHash)) {
    await ctx.limits.recordFailure(account.id);
    throw invalidCredentials();
  }
  const decision = await ctx.limits.admit(account.id);
  if (decision) {
    const { ratePerSecond, rateBurst } = ctx.config;
    reply.header(
      'ratelimit-policy',
      `"burst";q=${rateBurst};w=${Math.max(1, Math.ceil(rateBurst / ratePerSecond))}`,
    );
    reply.header('ratelimit', `"burst";r=${decision.remaining};t=${decision.resetSeconds}`);
    if (!decision.allowed) {
      throw new ApiError('rate_limited', `over ${ratePerSecond} requests per second for this account`, {
        retryAfterSeconds: decision.resetSeconds,
        dlrCode: 429,
      });
    }
  }
  return account;
}

/**
 * Credentials of the contact-message endpoints: HTTP Basic `key:secret`, or `key`/`secret` query parameters;
 * Basic wins when both are given. Missing or malformed credentials are a 401 like wrong ones.
 */
export function readCredentials(request: FastifyRequest): Credentials {
  const header = request.headers.authorization;
  if (header !== undefined && /^basic /i.test(header)) {
    const decoded = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    const key = decoded.slice(0, colon);
    const secret = decoded.slice(colon + 1);
    if (colon < 0 || !isCredential(key) || !isCredential(secret)) {
      throw new ApiError('unauthorized', 'malformed Basic credentials; send key:secret');
    }
    return { key, secret };
  }
  const { key, secret } = request.query as Record<string, unknown>;
  if (key === undefined && secret === undefined) {
    throw new ApiError('unauthorized', 'credentials required: HTTP Basic with key:secret');
  }
  if (typeof key !== 'string' || typeof secret !== 'string' || !isCredential(key) || !isCredential(secret)) {
    throw new ApiError(
      'unauthorized',
      'malformed credentials: key and secret are 8 alphanumeric characters each',
    );
  }
  return { key, secret };
}
