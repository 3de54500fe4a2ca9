import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { LimitSettings, Limits } from '../../src/auth/limits.js';
import { MemoryLimits } from '../../src/auth/memory-limits.js';
import { RedisLimits } from '../../src/auth/redis-limits.js';

const SETTINGS: LimitSettings = { ratePerSecond: 2, rateBurst: 4, lockoutFailures: 3, lockoutSeconds: 60 };

interface Kind {
  name: string;
  /** Two handles on the same counters, as two server instances would hold. */
  open(now: () => number, settings?: LimitSettings): [Limits, Limits];
}

const kinds: Kind[] = [
  {
    name: 'memory',
    open(now, settings = SETTINGS) {
      const one = new MemoryLimits(settings, now);
      return [one, one];
    },
  },
];
const redisUrl = process.env.REDIS_URL;
if (redisUrl) {
  kinds.push({
    name: 'redis',
    open(now, settings = SETTINGS) {
      const prefix = `waybill-test:${randomBytes(6).toString('hex')}:`;
      return [
        new RedisLimits(redisUrl, settings, now, prefix),
        new RedisLimits(redisUrl, settings, now, prefix),
      ];
    },
  });
}

describe.each(kinds)('limits ($name)', (kind) => {
  let clock = Date.parse('2026-11-22T10:00:00Z');
  let handles: Limits[] = [];
  const open = (settings?: LimitSettings) => {
    clock = Date.parse('2026-11-22T10:00:00Z');
    const pair = kind.open(() => clock, settings);
    handles = [...new Set(pair)];
    return pair;
  };
  afterEach(async () => {
    await Promise.all(handles.map((h) => h.close()));
  });

  it('locks a key after the failure limit, for the lockout period, on every instance', async () => {
    const [a, b] = open();
    await a.recordFailure('acct-1');
    await b.recordFailure('acct-1');
    expect(await a.lockedFor('acct-1')).toBe(0);
    await a.recordFailure('acct-1');
    expect(await b.lockedFor('acct-1')).toBe(60);
    expect(await a.lockedFor('acct-2')).toBe(0);
  });

  it('forgets failures older than the window', async () => {
    const [a] = open();
    await a.recordFailure('acct-1');
    await a.recordFailure('acct-1');
    clock += 61_000;
    await a.recordFailure('acct-1');
    expect(await a.lockedFor('acct-1')).toBe(0);
  });

  it('admit() forgets earlier failed secrets', async () => {
    const [a, b] = open();
    await a.recordFailure('acct-1');
    await a.recordFailure('acct-1');
    await b.admit('acct-1');
    await a.recordFailure('acct-1');
    await a.recordFailure('acct-1');
    expect(await a.lockedFor('acct-1')).toBe(0);
    await a.recordFailure('acct-1');
    expect(await a.lockedFor('acct-1')).toBe(60);
  });

  it('admit() takes no token and answers null with rate limiting off, and still forgets failures', async () => {
    const [a, b] = open({ ...SETTINGS, ratePerSecond: 0 });
    await a.recordFailure('acct-1');
    await a.recordFailure('acct-1');
    expect(await b.admit('acct-1')).toBeNull();
    await a.recordFailure('acct-1');
    expect(await a.lockedFor('acct-1')).toBe(0);
  });

  it('clear() removes failures and an active lock', async () => {
    const [a, b] = open();
    for (let i = 0; i < 3; i++) await a.recordFailure('acct-1');
    expect(await a.lockedFor('acct-1')).toBeGreaterThan(0);
    await b.clear('acct-1');
    expect(await a.lockedFor('acct-1')).toBe(0);
    await a.recordFailure('acct-1');
    await a.recordFailure('acct-1');
    expect(await a.lockedFor('acct-1')).toBe(0);
  });

  it('shares one token bucket per account across instances and refills it with time', async () => {
    const [a, b] = open();
    const taken = [
      await a.admit('acct-1'),
      await b.admit('acct-1'),
      await a.admit('acct-1'),
      await b.admit('acct-1'),
    ];
    expect(taken.map((d) => d?.allowed)).toEqual([true, true, true, true]);
    expect(taken.map((d) => d?.remaining)).toEqual([3, 2, 1, 0]);
    const refused = await a.admit('acct-1');
    expect(refused).toEqual({ allowed: false, remaining: 0, resetSeconds: 1 });
    expect((await b.admit('acct-2'))?.allowed).toBe(true);
    clock += 500; // one token at 2/s
    expect((await b.admit('acct-1'))?.allowed).toBe(true);
    expect((await a.admit('acct-1'))?.allowed).toBe(false);
    clock += 10_000;
    expect(await a.admit('acct-1')).toEqual({ allowed: true, remaining: 3, resetSeconds: 1 });
  });
});
