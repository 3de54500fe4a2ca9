import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { type LimitSettings, type Limits, type RateDecision, rateDecision } from './limits.js';

// A request whose secret matched, atomically: forget the failed secrets (KEYS[2]), then, when rate limiting is
// on, refill the token bucket (KEYS[1]) by elapsed time and take one token if there is one.
// Returns { allowed 0|1, tokens left ×1000 (an integer for the reply) }, or nothing when rate limiting is off.
const ADMIT = `
redis.call('DEL', KEYS[2])
local rate = tonumber(ARGV[1])
if rate <= 0 then return nil end
local burst = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1]) or burst
local at = tonumber(state[2]) or now
if now > at then tokens = math.min(burst, tokens + (now - at) / 1000 * rate) end
local allowed = 0
if tokens >= 1 then tokens = tokens - 1; allowed = 1 end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(math.max(now, at)))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate * 1000) + 1000)
return { allowed, math.floor(tokens * 1000) }
`;

// A failed secret: count it inside the window; at the limit, lock for the window and forget the count.
const FAIL = `
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
redis.call('ZADD', KEYS[1], now, ARGV[4])
redis.call('PEXPIRE', KEYS[1], window)
if redis.call('ZCARD', KEYS[1]) >= limit then
  redis.call('SET', KEYS[2], '1', 'PX', window)
  redis.call('DEL', KEYS[1])
end
return 0
`;

/**
 * Lockout and rate limit shared by several instances through Redis (CONTRACT §6). Keys hold only account ids,
 * never credentials. Times come from the instance's clock; instances are expected to run NTP.
 */
export class RedisLimits implements Limits {
  readonly #redis: Redis;

  constructor(
    url: string,
    private readonly settings: LimitSettings,
    private readonly now: () => number = Date.now,
    private readonly prefix = 'waybill:',
  ) {
    this.#redis = new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 2, enableOfflineQueue: true });
    this.#redis.defineCommand('waybillAdmit', { numberOfKeys: 2, lua: ADMIT });
    this.#redis.defineCommand('waybillFail', { numberOfKeys: 2, lua: FAIL });
  }

  #key(accountId: string, kind: 'bucket' | 'fail' | 'lock'): string {
    return `${this.prefix}{${accountId}}:${kind}`;
  }

  async lockedFor(accountId: string): Promise<number> {
    const ms = await this.#redis.pttl(this.#key(accountId, 'lock'));
    return ms > 0 ? Math.ceil(ms / 1000) : 0;
  }

  async recordFailure(accountId: string): Promise<void> {
    // A unique member per failure, so two failures in the same millisecond (on any instance) both count.
    const member = randomBytes(8).toString('hex');
    await (this.#redis as unknown as RedisScripts).waybillFail(
      this.#key(accountId, 'fail'),
      this.#key(accountId, 'lock'),
      this.now(),
      this.settings.lockoutSeconds * 1000,
      this.settings.lockoutFailures,
      member,
    );
  }

  async clear(accountId: string): Promise<void> {
    await this.#redis.del(this.#key(accountId, 'fail'), this.#key(accountId, 'lock'));
  }

  async admit(accountId: string): Promise<RateDecision | null> {
    const { ratePerSecond: rate, rateBurst: burst } = this.settings;
    const answer = await (this.#redis as unknown as RedisScripts).waybillAdmit(
      this.#key(accountId, 'bucket'),
      this.#key(accountId, 'fail'),
      rate,
      burst,
      this.now(),
    );
    if (answer === null) return null;
    const [allowed, milliTokens] = answer;
    return rateDecision(allowed === 1, milliTokens / 1000, burst, rate);
  }

  async ping(): Promise<void> {
    await this.#redis.ping();
  }

  async close(): Promise<void> {
    await this.#redis.quit().catch(() => this.#redis.disconnect());
  }
}

interface RedisScripts {
  waybillAdmit(
    bucket: string,
    fail: string,
    rate: number,
    burst: number,
    now: number,
  ): Promise<[number, number] | null>;
  waybillFail(
    fail: string,
    lock: string,
    now: number,
    windowMs: number,
    limit: number,
    member: string,
  ): Promise<number>;
}
