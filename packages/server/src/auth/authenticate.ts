import { timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../context.js';
import { secretMatches } from '../domain/credentials.js';
import { ApiError } from '../domain/errors.js';
import { isCredential } from '../domain/formats.js';
import type { QueryAccount } from './account-cache.js';
import type { RateDecision } from './limits.js';

export interface Credentials {
  key: string;
  secret: string;
}

/** Who is asking: a Fastify request, or the prepared /dlr path's own record of the caller. */
export interface Caller {
  /** The caller's address, as `request.ip` gives it (http/caller-address.ts). */
  ip: string;
}

/** Where the answer's headers go: a Fastify reply, or the prepared /dlr path's headers. */
export interface HeaderSink {
  header(name: string, value: string): unknown;
}

const invalidCredentials = () => new ApiError('unauthorized', 'invalid credentials', { dlrCode: 4 });

/**
 * The one credential check of every query endpoint, in the contract's order: key lookup → IP whitelist →
 * lockout → secret → rate limit. The whitelist comes before the secret so a caller from outside it learns
 * nothing about the secret and cannot lock the key out. Sets the RateLimit headers on success.
 *
 * The account comes from the account cache (auth/account-cache.ts) when it holds the key. A secret that does not
 * match a cached copy is judged again on a fresh read before it counts as a failure: the copy may predate a
 * rotation made by another process, and the new secret must neither be refused nor lock the key out.
 */
export function authenticate(
  ctx: AppContext,
  request: Caller,
  reply: HeaderSink,
  credentials: Credentials,
): QueryAccount | Promise<QueryAccount> {
  // The common case, decided in this turn: the account cached, the caller on its whitelist, the key not locked
  // out, the secret the one that last verified against this copy, the limits in this process. Each test only
  // reads, so every other case takes the whole check below from its start, the HMAC and any refusal included.
  const immediate = ctx.limits.immediate;
  const cached = ctx.accounts.cached(credentials.key);
  if (
    immediate !== undefined &&
    cached?.allows(request.ip) &&
    immediate.lockedFor(cached.id) === 0 &&
    secretVerified(cached, credentials.secret)
  ) {
    return admitted(ctx, reply, cached, immediate.admit(cached.id));
  }
  return checkCredentials(ctx, request, reply, credentials, cached);
}

/** The whole credential check, in the contract's order (see {@link authenticate}), from the cache's copy if any. */
async function checkCredentials(
  ctx: AppContext,
  request: Caller,
  reply: HeaderSink,
  credentials: Credentials,
  cached: QueryAccount | undefined,
): Promise<QueryAccount> {
  let account = await admissible(ctx, request, cached ?? (await ctx.accounts.load(credentials.key)));
  let matches = secretOk(ctx, account, credentials.secret);
  if (!matches && cached) {
    account = await admissible(ctx, request, await ctx.accounts.load(credentials.key, true));
    matches = secretOk(ctx, account, credentials.secret);
  }
  if (!matches) {
    await ctx.limits.recordFailure(account.id);
    throw invalidCredentials();
  }
  return admitted(ctx, reply, account, await ctx.limits.admit(account.id));
}

/** The rate limit's answer for an account whose secret matched: its headers, and a refusal when over it. */
function admitted(
  ctx: AppContext,
  reply: HeaderSink,
  account: QueryAccount,
  decision: RateDecision | null,
): QueryAccount {
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
 * The secret that last verified against each cached copy of an account, so that the next request bringing it
 * skips the HMAC (6–7 µs, a measurable share of a /dlr request). It lives as long as the copy, at most
 * WAYBILL_ACCOUNT_CACHE_MS, and is compared in constant time; any other secret takes the HMAC path.
 */
const verified = new WeakMap<QueryAccount, Buffer>();

function secretOk(ctx: AppContext, account: QueryAccount, secret: string): boolean {
  if (secretVerified(account, secret)) return true;
  if (!secretMatches(ctx.pepper, secret, account.secretHash)) return false;
  verified.set(account, Buffer.from(secret, 'utf8'));
  return true;
}

/** Whether `secret` is the one that last verified against this copy of the account (no HMAC). */
function secretVerified(account: QueryAccount, secret: string): boolean {
  const known = verified.get(account);
  if (known === undefined) return false;
  const candidate = Buffer.from(secret, 'utf8');
  return known.length === candidate.length && timingSafeEqual(known, candidate);
}

/** The steps before the secret — key, whitelist, lockout — on one copy of the account. */
async function admissible(
  ctx: AppContext,
  request: Caller,
  account: QueryAccount | null,
): Promise<QueryAccount> {
  if (!account) throw invalidCredentials();
  if (!account.allows(request.ip)) {
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
