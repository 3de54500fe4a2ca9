import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { generateCallbackSecret } from '../../src/domain/credentials.js';
import {
  type AttemptOutcome,
  type AttemptResult,
  attemptOutcome,
  outcomeLabel,
} from '../../src/domain/deliveries/attempt-outcome.js';
import { type BackfillEvent, planBackfill, queuedBy } from '../../src/domain/deliveries/backfill.js';
import {
  type ClaimCandidate,
  ClaimPicker,
  claimable,
  inTurns,
  nextDue,
} from '../../src/domain/deliveries/claim-policy.js';
import { callbacksOn } from '../../src/domain/deliveries/delivery.js';
import { maySend, settleAttempt } from '../../src/domain/deliveries/finish.js';
import { parkedCutoff } from '../../src/domain/deliveries/parking.js';
import { redeliverableDead, redeliveryRefusal } from '../../src/domain/deliveries/redeliver.js';
import {
  DEFAULT_RETRY_SCHEDULE,
  nextAttemptDelayMs,
  parseRetryAfter,
} from '../../src/domain/deliveries/schedule.js';
import { signingSecrets, signWebhook } from '../../src/domain/deliveries/signing.js';
import { openSecret, sealSecret } from '../../src/domain/secret-box.js';

describe('the retry schedule', () => {
  it('follows the schedule with ±20% jitter and ends after the last delay', () => {
    const schedule = [5, 300, 1800];
    expect(nextAttemptDelayMs(schedule, 1, null, 0)).toBe(4000);
    expect(nextAttemptDelayMs(schedule, 1, null, 0.5)).toBe(5000);
    expect(nextAttemptDelayMs(schedule, 1, null, 0.999999)).toBe(6000);
    expect(nextAttemptDelayMs(schedule, 2, null, 0.5)).toBe(300_000);
    expect(nextAttemptDelayMs(schedule, 3, null, 0.5)).toBe(1_800_000);
    expect(nextAttemptDelayMs(schedule, 4, null, 0.5)).toBeNull();
  });

  it('makes 10 attempts over about 76 hours by default', () => {
    const total = DEFAULT_RETRY_SCHEDULE.reduce((sum, s) => sum + s, 0);
    expect(DEFAULT_RETRY_SCHEDULE).toHaveLength(9);
    expect(total / 3600).toBeCloseTo(75.6, 1);
  });

  it('never retries sooner than Retry-After, capped at the longest delay', () => {
    const schedule = [5, 60];
    expect(nextAttemptDelayMs(schedule, 1, 30, 0.5)).toBe(30_000);
    expect(nextAttemptDelayMs(schedule, 1, 2, 0.5)).toBe(5000);
    expect(nextAttemptDelayMs(schedule, 1, 86_400, 0.5)).toBe(60_000);
    expect(nextAttemptDelayMs(schedule, 3, 30, 0.5)).toBeNull();
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    const now = new Date('2026-11-22T10:00:00Z');
    expect(parseRetryAfter('120', now)).toBe(120);
    expect(parseRetryAfter(' 7 ', now)).toBe(7);
    expect(parseRetryAfter('Sun, 22 Nov 2026 10:01:30 GMT', now)).toBe(90);
    expect(parseRetryAfter('Sun, 22 Nov 2026 09:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter(undefined, now)).toBeNull();
    expect(parseRetryAfter('soon', now)).toBeNull();
    expect(parseRetryAfter('-5', now)).toBeNull();
  });
});

describe('webhook signatures', () => {
  const body = JSON.stringify({ type: 'dlr', messageid: 'm-1', to: '447700900123', status: '0' });

  it('verify with the reference standardwebhooks package', () => {
    const secret = generateCallbackSecret();
    const ts = Math.floor(Date.now() / 1000);
    const headers = {
      'webhook-id': 'evt_01JDB9W4Q4M2T8Y5F0N7XK3R6S',
      'webhook-timestamp': String(ts),
      'webhook-signature': signWebhook([secret], 'evt_01JDB9W4Q4M2T8Y5F0N7XK3R6S', ts, body),
    };
    expect(new Webhook(secret).verify(body, headers)).toStrictEqual(JSON.parse(body));
    expect(() => new Webhook(secret).verify(`${body} `, headers)).toThrow();
    expect(() => new Webhook(generateCallbackSecret()).verify(body, headers)).toThrow();
  });

  it('carry one signature per secret, each verifying on its own', () => {
    const [a, b] = [generateCallbackSecret(), generateCallbackSecret()];
    const ts = Math.floor(Date.now() / 1000);
    const signature = signWebhook([a, b], 'evt_x', ts, body);
    expect(signature.split(' ')).toHaveLength(2);
    const headers = {
      'webhook-id': 'evt_x',
      'webhook-timestamp': String(ts),
      'webhook-signature': signature,
    };
    expect(new Webhook(a).verify(body, headers)).toBeTruthy();
    expect(new Webhook(b).verify(body, headers)).toBeTruthy();
  });
});

describe('sealed callback secrets', () => {
  const pepper = randomBytes(32);

  it('round-trip under the same pepper and show nothing of the secret', () => {
    const secret = generateCallbackSecret();
    const sealed = sealSecret(pepper, secret);
    expect(sealed).toMatch(/^sealed:v1:/);
    expect(sealed).not.toContain(secret.slice(6));
    expect(sealSecret(pepper, secret)).not.toBe(sealed);
    expect(openSecret(pepper, sealed)).toBe(secret);
  });

  it('refuse another pepper or a tampered value, and pass a legacy clear value through', () => {
    const sealed = sealSecret(pepper, generateCallbackSecret());
    expect(() => openSecret(randomBytes(32), sealed)).toThrow();
    const tampered = `${sealed.slice(0, -4)}${sealed.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`;
    expect(() => openSecret(pepper, tampered)).toThrow();
    expect(openSecret(pepper, 'whsec_legacy')).toBe('whsec_legacy');
  });
});

const T0 = Date.parse('2026-11-22T10:00:00Z');
const t = (seconds: number) => new Date(T0 + seconds * 1000);

describe('attempt outcomes', () => {
  const result = (status: number | null, extra: Partial<AttemptResult> = {}): AttemptResult => ({
    status,
    error: null,
    at: t(0),
    durationMs: 40,
    now: t(1),
    ...extra,
  });
  const schedule = [5, 60];

  it('delivers on 200–299, and only then', () => {
    for (const status of [200, 204, 299]) {
      const outcome = attemptOutcome(result(status), 0, schedule, 0.5);
      expect(outcome).toStrictEqual({
        attempt: { at: t(0), httpStatus: status, error: null, durationMs: 40 },
        next: { state: 'delivered' },
      });
      expect(outcomeLabel(outcome)).toBe('delivered');
    }
  });

  it('makes a 410 dead at once and turns the account’s callbacks off, whatever the schedule left', () => {
    const outcome = attemptOutcome(result(410), 0, schedule, 0.5);
    expect(outcome.next).toStrictEqual({ state: 'dead', disableAccount: true });
    expect(outcome.attempt.error).toBe('gone (410): callbacks of the account disabled');
    expect(outcomeLabel(outcome)).toBe('gone');
  });

  it('retries redirects, other statuses and no answer on the schedule, naming the reason', () => {
    const cases: [AttemptResult, string][] = [
      [result(302), 'redirect (302) not followed'],
      [result(500), 'unexpected status 500'],
      [result(199), 'unexpected status 199'],
      [result(null, { error: 'timed out after 200 ms' }), 'timed out after 200 ms'],
    ];
    for (const [r, reason] of cases) {
      const outcome = attemptOutcome(r, 0, schedule, 0.5);
      expect(outcome.attempt).toMatchObject({ httpStatus: r.status, error: reason });
      // Scheduled from the end of the attempt: 5 s, jitter pinned to none.
      expect(outcome.next).toStrictEqual({ state: 'pending', at: t(6) });
      expect(outcomeLabel(outcome)).toBe('failed');
    }
  });

  it('waits at least as long as Retry-After asks, and is dead once the schedule is spent', () => {
    expect(attemptOutcome(result(429, { retryAfter: '30' }), 0, schedule, 0.5).next).toStrictEqual({
      state: 'pending',
      at: t(31),
    });
    expect(attemptOutcome(result(503), 1, schedule, 0.5).next).toStrictEqual({ state: 'pending', at: t(61) });
    const spent = attemptOutcome(result(503), 2, schedule, 0.5);
    expect(spent.next).toStrictEqual({ state: 'dead', disableAccount: false });
    expect(outcomeLabel(spent)).toBe('dead');
  });
});

describe('finishing an attempt on the stored delivery', () => {
  const delivered: AttemptOutcome = {
    attempt: { at: t(0), httpStatus: 200, error: null, durationMs: 5 },
    next: { state: 'delivered' },
  };
  const retry: AttemptOutcome = {
    attempt: { at: t(0), httpStatus: 500, error: 'unexpected status 500', durationMs: 5 },
    next: { state: 'pending', at: t(10) },
  };
  const gone: AttemptOutcome = {
    attempt: { at: t(0), httpStatus: 410, error: 'gone', durationMs: 5 },
    next: { state: 'dead', disableAccount: true },
  };

  it('sends a held claim only while it is pending under that lease: never once superseded', () => {
    expect(maySend({ state: 'pending', lease: 'L' }, 'L')).toBe(true);
    expect(maySend({ state: 'superseded', lease: 'L' }, 'L')).toBe(false);
    expect(maySend({ state: 'pending', lease: 'other' }, 'L')).toBe(false);
    expect(maySend({ state: 'pending', lease: null }, 'L')).toBe(false);
    expect(maySend(null, 'L')).toBe(false);
  });

  it('applies the outcome to a pending delivery', () => {
    const pending = { state: 'pending' as const, lease: 'L' };
    expect(settleAttempt(pending, 'L', delivered)).toStrictEqual({
      state: 'delivered',
      nextAttemptAt: null,
      disableCallbacks: false,
    });
    expect(settleAttempt(pending, 'L', retry)).toStrictEqual({
      state: 'pending',
      nextAttemptAt: t(10),
      disableCallbacks: false,
    });
    expect(settleAttempt(pending, 'L', gone)).toStrictEqual({
      state: 'dead',
      nextAttemptAt: null,
      disableCallbacks: true,
    });
  });

  it('keeps a superseded delivery superseded whatever the answer (a 410 still turns callbacks off)', () => {
    const superseded = { state: 'superseded' as const, lease: 'L' };
    for (const outcome of [delivered, retry]) {
      expect(settleAttempt(superseded, 'L', outcome)).toStrictEqual({
        state: 'superseded',
        nextAttemptAt: null,
        disableCallbacks: false,
      });
    }
    expect(settleAttempt(superseded, 'L', gone)?.disableCallbacks).toBe(true);
  });

  it('writes nothing when the lease is no longer the claim’s', () => {
    expect(settleAttempt({ state: 'pending', lease: 'other' }, 'L', delivered)).toBeNull();
    expect(settleAttempt(null, 'L', delivered)).toBeNull();
  });
});

describe('the claim policy', () => {
  let seq = 0;
  const candidate = (accountId: string, over: Partial<ClaimCandidate> = {}): ClaimCandidate => {
    seq++;
    return {
      accountId,
      seq,
      messageId: `m-${seq}`,
      to: '447700900123',
      nextAttemptAt: t(0),
      createdAt: t(seq),
      leaseUntil: null,
      recipientLeaseUntil: null,
      ...over,
    };
  };
  const limits = (over: Partial<ConstructorParameters<typeof ClaimPicker>[0]> = {}) => ({
    now: t(100),
    limit: 100,
    perAccount: 100,
    inFlight: new Map<string, number>(),
    ...over,
  });

  it('takes only what is due, unleased, and of a recipient with no attempt in flight', () => {
    const now = t(100);
    expect(claimable(candidate('a'), now)).toBe(true);
    expect(claimable(candidate('a', { nextAttemptAt: t(101) }), now)).toBe(false);
    expect(claimable(candidate('a', { leaseUntil: t(150) }), now)).toBe(false);
    // An expired lease is a crashed attempt: due again.
    expect(claimable(candidate('a', { leaseUntil: t(50) }), now)).toBe(true);
    expect(claimable(candidate('a', { recipientLeaseUntil: t(150) }), now)).toBe(false);
    expect(claimable(candidate('a', { recipientLeaseUntil: t(100) }), now)).toBe(true);
  });

  it('lets accounts take turns: every account’s oldest due first, a backlog never holds up the others', () => {
    const busy = Array.from({ length: 5 }, (_, i) => candidate('busy', { nextAttemptAt: t(i) }));
    const quiet = candidate('quiet', { nextAttemptAt: t(50) });
    const order = inTurns([...busy, quiet]).map((c) => c.seq);
    expect(order).toStrictEqual([busy[0]?.seq, quiet.seq, ...busy.slice(1).map((c) => c.seq)]);
    const chosen = new ClaimPicker(limits({ limit: 2 })).choose([...busy, quiet]);
    expect(chosen.map((c) => c.accountId)).toStrictEqual(['busy', 'quiet']);
  });

  it('keeps to the total and per-account limits, counting attempts in flight, one per recipient', () => {
    const a = [candidate('a'), candidate('a'), candidate('a')];
    const twin = candidate('b', { messageId: 'same' });
    const twin2 = candidate('b', { messageId: 'same' });
    const picker = new ClaimPicker(limits({ perAccount: 2, inFlight: new Map([['a', 1]]) }));
    const chosen = picker.choose([...a, twin, twin2]);
    expect(chosen.map((c) => c.seq)).toStrictEqual([a[0]?.seq, twin.seq]);
    expect(picker.accountRoom('a')).toBe(0);
    expect(picker.room()).toBe(98);
  });

  it('gives back the room of a candidate another relay took, but not its recipient', () => {
    const first = candidate('a');
    const picker = new ClaimPicker(limits({ limit: 1 }));
    expect(picker.choose([first])).toStrictEqual([first]);
    picker.lost(first);
    expect(picker.room()).toBe(1);
    expect(picker.choose([candidate('a', { messageId: first.messageId })])).toStrictEqual([]);
    const other = candidate('a');
    expect(picker.choose([other])).toStrictEqual([other]);
  });

  it('knows when to look again: at the end of the leases that hold deliveries up', () => {
    const now = t(100);
    expect(nextDue([], now)).toBeNull();
    expect(
      nextDue([candidate('a', { nextAttemptAt: t(120) }), candidate('a', { nextAttemptAt: t(90) })], now),
    ).toStrictEqual(t(90));
    // Waiting on its recipient's attempt (or its own lease): due when that lease ends, not now.
    expect(
      nextDue([candidate('a', { nextAttemptAt: t(90), recipientLeaseUntil: t(130) })], now),
    ).toStrictEqual(t(130));
    expect(
      nextDue(
        [
          candidate('a', { nextAttemptAt: t(90), leaseUntil: t(130) }),
          candidate('a', { nextAttemptAt: t(125) }),
        ],
        now,
      ),
    ).toStrictEqual(t(125));
    // A lease that ran out is a crashed attempt: due again at once.
    expect(nextDue([candidate('a', { nextAttemptAt: t(90), leaseUntil: t(95) })], now)).toStrictEqual(t(90));
  });
});

describe('redeliveries', () => {
  it('refuse a superseded delivery, or one a newer delivery of its recipient overtook', () => {
    expect(redeliveryRefusal({ state: 'dead', newerOfRecipient: false })).toBeNull();
    expect(redeliveryRefusal({ state: 'delivered', newerOfRecipient: false })).toBeNull();
    expect(redeliveryRefusal({ state: 'superseded', newerOfRecipient: false })).toBe('superseded');
    expect(redeliveryRefusal({ state: 'dead', newerOfRecipient: true })).toBe('superseded');
    const rows = [
      { id: 1, state: 'dead' as const, newerOfRecipient: false },
      { id: 2, state: 'dead' as const, newerOfRecipient: true },
      { id: 3, state: 'pending' as const, newerOfRecipient: false },
    ];
    expect(redeliverableDead(rows).map((r) => r.id)).toStrictEqual([1]);
  });
});

describe('backfill', () => {
  const event = (
    seq: number,
    messageId: string,
    recordedAt: number,
    delivery: BackfillEvent['delivery'],
  ): BackfillEvent => ({ seq, messageId, to: '447700900123', recordedAt: t(recordedAt), delivery });

  it('queues the latest event of each recipient with one since, unless pending or delivered', () => {
    const plan = planBackfill(
      [
        // m-1: an old pending delivery, then events while callbacks were off.
        event(1, 'm-1', 0, 'pending'),
        event(4, 'm-1', 20, null),
        event(5, 'm-1', 30, null),
        // m-2: its latest event's delivery is dead (the 410): sent again.
        event(2, 'm-2', 10, 'dead'),
        // m-3: already delivered; m-4: already pending.
        event(3, 'm-3', 15, 'delivered'),
        event(6, 'm-4', 40, 'pending'),
        // m-5: nothing since; its old pending delivery is not touched.
        event(0, 'm-5', 0, 'pending'),
      ],
      t(10),
    );
    expect(plan).toStrictEqual({ queue: [5], requeue: [2], supersede: [1] });
    expect(queuedBy(plan)).toBe(2);
    expect(planBackfill([], t(0))).toStrictEqual({ queue: [], requeue: [], supersede: [] });
  });
});

describe('small rules', () => {
  it('parks receipts for WAYBILL_RECEIPT_PARK_SECONDS', () => {
    expect(parkedCutoff(t(100), 60)).toStrictEqual(t(40));
    expect(parkedCutoff(T0 + 100_000, 60)).toStrictEqual(t(40));
  });

  it('queues and sends deliveries only with a callback URL and callbacks enabled', () => {
    expect(callbacksOn({ callbackUrl: 'https://x.example/h', callbackEnabled: true })).toBe(true);
    expect(callbacksOn({ callbackUrl: 'https://x.example/h', callbackEnabled: false })).toBe(false);
    expect(callbacksOn({ callbackUrl: null, callbackEnabled: true })).toBe(false);
  });

  it('signs with the previous secret too while its grace period lasts', () => {
    const secrets = { current: 'new', previous: 'old', previousUntil: t(60) };
    expect(signingSecrets(secrets, T0)).toStrictEqual(['new', 'old']);
    expect(signingSecrets(secrets, T0 + 60_000)).toStrictEqual(['new']);
    expect(signingSecrets({ current: 'new', previous: null, previousUntil: null }, T0)).toStrictEqual([
      'new',
    ]);
  });
});
