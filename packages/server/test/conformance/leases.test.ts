import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import type { BindStatusRecord } from '../../src/store/store.js';
import { engines } from '../support/engines.js';
import { NOW, useStore } from './fixtures.js';

/**
 * SMPP bind leases (CONTRACT §12 "SMPP binds": one process holds a bind at a time, another takes it over once
 * the holder stops renewing): the LeaseStore calls, the same on every engine.
 */

const CONNECTING: BindStatusRecord = { state: 'connecting', since: null, lastError: null };
const BOUND: BindStatusRecord = { state: 'bound', since: NOW, lastError: null };
/** Long enough that no test step outlives it by accident on a busy machine. */
const LONG_MS = 60_000;
/** Short enough to wait out; expiry is by the engine's clock, so the test polls rather than sleeps a guess. */
const SHORT_MS = 300;

describe.each(engines())('$name store: bind leases', (engine) => {
  const store = useStore(engine);

  /** Waits until the route's lease has run out by the engine's own clock (10 s at most). */
  async function untilExpired(route: string): Promise<void> {
    const deadline = Date.now() + 10_000;
    while ((await store().getBindLease(route)) !== null) {
      if (Date.now() > deadline) throw new Error(`the lease of ${route} did not expire`);
      await sleep(50);
    }
  }

  it('is taken when nobody holds it, and shows its holder, expiry and the status published with it', async () => {
    expect(await store().getBindLease('smsc')).toBeNull();
    const before = Date.now();
    expect(await store().takeBindLease('smsc', 'a', LONG_MS, CONNECTING)).toBe(true);
    const lease = await store().getBindLease('smsc');
    expect(lease).toMatchObject({ holder: 'a', state: 'connecting', since: null, lastError: null });
    // PostgreSQL counts by its own clock: allow for a clock a few seconds off this machine's.
    expect(lease?.expiresAt.getTime()).toBeGreaterThan(before + LONG_MS - 5000);
    expect(lease?.expiresAt.getTime()).toBeLessThan(Date.now() + LONG_MS + 5000);
    // Leases are per route.
    expect(await store().getBindLease('other')).toBeNull();
    expect(await store().takeBindLease('other', 'b', LONG_MS, CONNECTING)).toBe(true);
    expect((await store().getBindLease('other'))?.holder).toBe('b');
    expect((await store().getBindLease('smsc'))?.holder).toBe('a');
  });

  it('is renewed by its holder, which publishes its new status and pushes the expiry out', async () => {
    expect(await store().takeBindLease('smsc', 'a', SHORT_MS, CONNECTING)).toBe(true);
    const first = await store().getBindLease('smsc');
    const failing: BindStatusRecord = {
      state: 'backoff',
      since: NOW,
      lastError: 'the SMSC refused the bind',
    };
    expect(await store().takeBindLease('smsc', 'a', LONG_MS, failing)).toBe(true);
    const renewed = await store().getBindLease('smsc');
    expect(renewed).toMatchObject({ holder: 'a', ...failing });
    expect(renewed?.expiresAt.getTime()).toBeGreaterThan((first?.expiresAt.getTime() ?? 0) + LONG_MS / 2);
    expect(await store().takeBindLease('smsc', 'a', LONG_MS, BOUND)).toBe(true);
    expect(await store().getBindLease('smsc')).toMatchObject({ holder: 'a', ...BOUND });
  });

  it('is refused to another holder while it runs, and that refusal writes nothing', async () => {
    expect(await store().takeBindLease('smsc', 'a', LONG_MS, BOUND)).toBe(true);
    const held = await store().getBindLease('smsc');
    const other: BindStatusRecord = { state: 'backoff', since: null, lastError: 'b was here' };
    expect(await store().takeBindLease('smsc', 'b', LONG_MS, other)).toBe(false);
    expect(await store().takeBindLease('smsc', 'b', 1, other)).toBe(false);
    expect(await store().getBindLease('smsc')).toStrictEqual(held);
  });

  it('is taken over by another holder once it expires, and the old holder cannot renew it then', async () => {
    expect(await store().takeBindLease('smsc', 'a', SHORT_MS, BOUND)).toBe(true);
    await untilExpired('smsc');
    expect(await store().takeBindLease('smsc', 'b', LONG_MS, CONNECTING)).toBe(true);
    expect(await store().getBindLease('smsc')).toMatchObject({ holder: 'b', state: 'connecting' });
    // The old holder, late with its renewal, finds the bind taken.
    expect(await store().takeBindLease('smsc', 'a', LONG_MS, BOUND)).toBe(false);
    expect((await store().getBindLease('smsc'))?.holder).toBe('b');
  });

  it('is given up only by its holder: anyone may take it at once after, nobody before', async () => {
    expect(await store().takeBindLease('smsc', 'a', LONG_MS, BOUND)).toBe(true);
    await store().releaseBindLease('smsc', 'b');
    expect((await store().getBindLease('smsc'))?.holder).toBe('a');
    expect(await store().takeBindLease('smsc', 'b', LONG_MS, CONNECTING)).toBe(false);

    await store().releaseBindLease('smsc', 'a');
    expect(await store().getBindLease('smsc')).toBeNull();
    expect(await store().takeBindLease('smsc', 'b', LONG_MS, CONNECTING)).toBe(true);
    expect((await store().getBindLease('smsc'))?.holder).toBe('b');
    // Giving up what one does not hold (any more) is harmless.
    await store().releaseBindLease('smsc', 'a');
    await store().releaseBindLease('nothing-here', 'a');
    expect((await store().getBindLease('smsc'))?.holder).toBe('b');
  });
});
