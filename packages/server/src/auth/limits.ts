/**
 * Per-key lockout after failed secrets and per-account request rate (CONTRACT §6). One process keeps them in
 * memory; several instances share them through Redis. Both implement this interface.
 */
export interface Limits {
  /** Seconds left on the key's lockout, or 0 when it is not locked. */
  lockedFor(key: string): Promise<number>;
  /** Counts a failed secret; may start a lockout. Attempts while locked are not counted (callers check first). */
  recordFailure(key: string): Promise<void>;
  /** Forgets failures and any lockout of the key (a secret rotation). */
  clear(key: string): Promise<void>;
  /**
   * A request whose secret matched: forgets the account's failed secrets and, when rate limiting is on, takes
   * one token from its bucket (null when it is off). One call, so that Redis answers it in one round trip.
   */
  admit(accountId: string): Promise<RateDecision | null>;
  close(): Promise<void>;
  /**
   * The same two steps answered without a promise, when the limits live in this process (MemoryLimits): the
   * credential check then decides a request in the turn it arrived (auth/authenticate.ts). Absent for Redis.
   */
  readonly immediate?: ImmediateLimits;
}

/** {@link Limits.lockedFor} and {@link Limits.admit}, answered at once. */
export interface ImmediateLimits {
  lockedFor(key: string): number;
  admit(accountId: string): RateDecision | null;
}

export interface RateDecision {
  allowed: boolean;
  /** Whole tokens left after this request. */
  remaining: number;
  /** Seconds until the next token (when refused: until one is available, at least 1). */
  resetSeconds: number;
}

export interface LimitSettings {
  ratePerSecond: number;
  rateBurst: number;
  lockoutFailures: number;
  lockoutSeconds: number;
}

/** The answer for a bucket holding `tokens` after the take (or the refusal), shared by every implementation. */
export function rateDecision(allowed: boolean, tokens: number, burst: number, rate: number): RateDecision {
  if (!allowed) return { allowed, remaining: 0, resetSeconds: Math.max(1, Math.ceil((1 - tokens) / rate)) };
  const missing = 1 - (tokens - Math.floor(tokens));
  return {
    allowed,
    remaining: Math.floor(tokens),
    resetSeconds: tokens >= burst ? 0 : Math.max(1, Math.ceil(missing / rate)),
  };
}
