import { createHash, createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../context.js';
import { hmacKey } from '../domain/hmac-key.js';
import { ipAllowed } from '../domain/ip-allowlist.js';
import type { Account } from '../domain/records.js';

/** The session cookie of CONTRACT §13. */
export const SESSION_COOKIE = 'waybill_session';
/**
 * Before there is a session, the sign-in form needs a CSRF token too (a forged sign-in would put a victim in the
 * attacker's account): this cookie holds a random value the form's token is bound to, for the sign-in page only.
 */
export const SIGN_IN_COOKIE = 'waybill_sign_in';
/** The hidden form field that carries the CSRF token. */
export const CSRF_FIELD = '_csrf';

/** Who a request's session belongs to. */
export type Signed = { kind: 'account'; account: Account; csrf: string } | { kind: 'operator'; csrf: string };

declare module 'fastify' {
  interface FastifyRequest {
    /** The console session of the request, when it carries a live one (console/plugin.ts). */
    signed: Signed | null;
  }
}

const sha256 = (value: string) => createHash('sha256').update(value).digest();

/**
 * CSRF tokens are HMACs of the session token under a key of their own derived from the pepper: bound to one
 * session, never stored, and worthless without the cookie (which a page script cannot read: HttpOnly).
 *
 * An account's session row is found by the SHA-256 of its token. An operator's is found by an HMAC of its token
 * keyed with the admin token's fingerprint (itself an HMAC of WAYBILL_ADMIN_TOKEN under a key derived from the
 * pepper): a process with another admin token, or none, computes another digest and finds no operator session, so
 * changing the token ends every operator session without a column to hold it.
 */
export class ConsoleSessions {
  readonly #key: Buffer;
  /** The admin token's keyed fingerprint: the key of operator sessions' digests (null: no admin token). */
  readonly #operatorKey: Buffer | null;

  constructor(private readonly ctx: AppContext) {
    this.#key = Buffer.from(hkdfSync('sha256', ctx.pepper, Buffer.alloc(0), 'waybill console csrf', 32));
    const adminToken = ctx.config.adminToken;
    this.#operatorKey = adminToken
      ? createHmac(
          'sha256',
          Buffer.from(hkdfSync('sha256', ctx.pepper, Buffer.alloc(0), 'waybill console operator', 32)),
        )
          .update(adminToken)
          .digest()
      : null;
  }

  /** The digest an operator session's row is kept under, for this process's admin token (null: none set). */
  #operatorHash(token: string): Buffer | null {
    if (this.#operatorKey === null) return null;
    return createHmac('sha256', hmacKey(this.#operatorKey)).update(token).digest();
  }

  /** Deletes the session of the token, whichever kind it is. */
  async #delete(token: string): Promise<void> {
    await this.ctx.store.deleteSession(sha256(token));
    const operator = this.#operatorHash(token);
    if (operator !== null) await this.ctx.store.deleteSession(operator);
  }

  #ttlMs(): number {
    return this.ctx.config.consoleSessionHours * 3_600_000;
  }

  #mac(purpose: string, value: string): string {
    return createHmac('sha256', hmacKey(this.#key)).update(`${purpose}:${value}`).digest('base64url');
  }

  #cookieOptions(request: FastifyRequest, path: string) {
    // request.protocol is https when the socket is TLS, or when a trusted proxy (WAYBILL_TRUST_PROXY) says so.
    return { path, httpOnly: true, sameSite: 'lax' as const, secure: request.protocol === 'https' };
  }

  /** Starts a session for the account (null: the operator) and sets its cookie. */
  async start(request: FastifyRequest, reply: FastifyReply, accountId: string | null): Promise<void> {
    // A sign-in never keeps the session the browser came with (no fixation): it ends, and a new one starts.
    const previous = request.cookies[SESSION_COOKIE];
    if (previous !== undefined && previous !== '') await this.#delete(previous);
    const token = randomBytes(32).toString('base64url');
    const tokenHash = accountId === null ? this.#operatorHash(token) : sha256(token);
    if (tokenHash === null) throw new Error('an operator session needs WAYBILL_ADMIN_TOKEN');
    const now = this.ctx.now();
    await this.ctx.store.createSession(
      {
        tokenHash,
        accountId,
        createdAt: now,
        expiresAt: new Date(now.getTime() + this.#ttlMs()),
      },
      now,
    );
    reply.setCookie(SESSION_COOKIE, token, this.#cookieOptions(request, '/console'));
    reply.clearCookie(SIGN_IN_COOKIE, this.#cookieOptions(request, '/console/sign-in'));
  }

  /**
   * The live session of the request, its expiry pushed forward (sliding), with its account read afresh; null
   * when there is none, it expired, or its account is gone.
   */
  async resume(request: FastifyRequest): Promise<Signed | null> {
    const token = request.cookies[SESSION_COOKIE];
    if (token === undefined || token === '') return null;
    const now = this.ctx.now();
    const expiresAt = new Date(now.getTime() + this.#ttlMs());
    const session = await this.ctx.store.touchSession(sha256(token), now, expiresAt);
    if (!session) {
      // The operator's console is there only while an admin token is set (as /admin is), and an operator session
      // only under the token it was signed in with: a process started without one, or with another (a restart
      // after a change, another process), finds none, even one signed in elsewhere or before the restart.
      const operatorHash = this.#operatorHash(token);
      if (operatorHash === null) return null;
      const operator = await this.ctx.store.touchSession(operatorHash, now, expiresAt);
      return operator?.accountId === null ? { kind: 'operator', csrf: this.#mac('session', token) } : null;
    }
    // An operator row under the plain SHA-256 was signed in before sessions were bound to the admin token.
    if (session.accountId === null) return null;
    const csrf = this.#mac('session', token);
    const account = await this.ctx.store.getAccount(session.accountId);
    // The whitelist holds for the whole session, not only at sign-in: a session carried (or a whitelist
    // narrowed) to an address outside it stops working there.
    if (!account || !ipAllowed(account.ipWhitelist, request.ip)) return null;
    return { kind: 'account', account, csrf };
  }

  /** Ends the request's session, if any, and clears its cookie. */
  async end(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const token = request.cookies[SESSION_COOKIE];
    if (token !== undefined && token !== '') await this.#delete(token);
    reply.clearCookie(SESSION_COOKIE, this.#cookieOptions(request, '/console'));
  }

  /** The sign-in form's CSRF token, setting the cookie it is bound to when the browser has none yet. */
  signInToken(request: FastifyRequest, reply: FastifyReply): string {
    let value = request.cookies[SIGN_IN_COOKIE];
    if (value === undefined || !/^[A-Za-z0-9_-]{43}$/.test(value)) {
      value = randomBytes(32).toString('base64url');
      reply.setCookie(SIGN_IN_COOKIE, value, this.#cookieOptions(request, '/console/sign-in'));
    }
    return this.#mac('sign-in', value);
  }

  /** True when the sign-in form's token matches the browser's sign-in cookie. */
  signInTokenOk(request: FastifyRequest, presented: unknown): boolean {
    const value = request.cookies[SIGN_IN_COOKIE];
    if (value === undefined || typeof presented !== 'string') return false;
    return sameString(this.#mac('sign-in', value), presented);
  }
}

/** Constant-time equality of two strings. */
export function sameString(expected: string, presented: string): boolean {
  const a = sha256(expected);
  const b = sha256(presented);
  return timingSafeEqual(a, b);
}

/**
 * True when the request's `Origin` is this server's own origin, as the browser reached it (scheme per
 * WAYBILL_TRUST_PROXY, and the Host it sent). A POST without `Origin` is refused: every browser the console
 * supports sends it on form submissions.
 */
export function sameOrigin(request: FastifyRequest): boolean {
  const origin = request.headers.origin;
  if (typeof origin !== 'string') return false;
  return origin === `${request.protocol}://${request.host}`;
}
