import {
  type ImmediateLimits,
  type LimitSettings,
  type Limits,
  type RateDecision,
  rateDecision,
} from './limits.js';

interface Bucket {
  tokens: number;
  at: number;
}

interface Failures {
  /** Times of failures inside the window, oldest first. */
  times: number[];
  lockedUntil: number;
}

/**
 * In-process limits for a single instance. Entries exist only for keys of real accounts (a failure is counted
 * only after the key lookup succeeded), so memory grows with accounts, not with attackers' guesses.
 */
export class MemoryLimits implements Limits {
  readonly #buckets = new Map<string, Bucket>();
  readonly #failures = new Map<string, Failures>();

  constructor(
    private readonly settings: LimitSettings,
    private readonly now: () => number = Date.now,
  ) {}

  readonly immediate: ImmediateLimits = {
    lockedFor: (key) => this.#lockedFor(key),
    admit: (accountId) => this.#admit(accountId),
  };

  async lockedFor(key: string): Promise<number> {
    return this.#lockedFor(key);
  }

  #lockedFor(key: string): number {
    const entry = this.#failures.get(key);
    const left = entry ? entry.lockedUntil - this.now() : 0;
    return left > 0 ? Math.ceil(left / 1000) : 0;
  }

  async recordFailure(key: string): Promise<void> {
    const now = this.now();
    const windowMs = this.settings.lockoutSeconds * 1000;
    const entry = this.#failures.get(key) ?? { times: [], lockedUntil: 0 };
    entry.times = entry.times.filter((t) => now - t < windowMs);
    entry.times.push(now);
    if (entry.times.length >= this.settings.lockoutFailures) {
      entry.lockedUntil = now + windowMs;
      entry.times = [];
    }
    this.#failures.set(key, entry);
  }

  async clear(key: string): Promise<void> {
    this.#failures.delete(key);
  }

  async admit(accountId: string): Promise<RateDecision | null> {
    return this.#admit(accountId);
  }

  #admit(accountId: string): RateDecision | null {
    this.#failures.delete(accountId);
    const { ratePerSecond: rate, rateBurst: burst } = this.settings;
    if (rate <= 0) return null;
    const now = this.now();
    const bucket = this.#buckets.get(accountId) ?? { tokens: burst, at: now };
    bucket.tokens = Math.min(burst, bucket.tokens + ((now - bucket.at) / 1000) * rate);
    bucket.at = now;
    this.#buckets.set(accountId, bucket);
    const allowed = bucket.tokens >= 1;
    if (allowed) bucket.tokens -= 1;
    return rateDecision(allowed, bucket.tokens, burst, rate);
  }

  async close(): Promise<void> {}
}
