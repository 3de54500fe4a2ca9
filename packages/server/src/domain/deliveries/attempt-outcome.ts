import type { AttemptRecord } from './delivery.js';
import { nextAttemptDelayMs, parseRetryAfter } from './schedule.js';

/** What one callback attempt's answer means (CONTRACT §9). */

/** The result of an attempt and what follows it. */
export interface AttemptOutcome {
  attempt: AttemptRecord;
  next:
    | { state: 'delivered' }
    | { state: 'pending'; at: Date }
    /** `disableAccount`: the callback answered 410 Gone, so the account's callbacks are turned off. */
    | { state: 'dead'; disableAccount: boolean };
}

/** How an attempt ended, as the relay saw it. */
export interface AttemptResult {
  /** Null when no answer came. */
  status: number | null;
  /** The raw `Retry-After` header of the answer, if any. */
  retryAfter?: string | undefined;
  /** Why no answer came (refused, timed out, refused destination); null when one came. */
  error: string | null;
  /** When the attempt started. */
  at: Date;
  durationMs: number;
  /** When it ended: retries are scheduled from here. */
  now: Date;
}

/**
 * 200–299 delivers. 410 Gone makes the delivery dead at once and turns the account's callbacks off. Anything
 * else (another status, a redirect, no answer) is a failed attempt, retried on the schedule (never sooner than
 * the receiver's Retry-After) until the schedule is spent, and then dead.
 *
 * @param attemptsBefore attempts made before this one
 * @param random a number in [0, 1) for the retry jitter
 */
export function attemptOutcome(
  result: AttemptResult,
  attemptsBefore: number,
  schedule: readonly number[],
  random: number,
): AttemptOutcome {
  const { status, at, durationMs, now } = result;
  if (status !== null && status >= 200 && status <= 299) {
    return { attempt: { at, httpStatus: status, error: null, durationMs }, next: { state: 'delivered' } };
  }
  if (status === 410) {
    return {
      attempt: { at, httpStatus: status, error: 'gone (410): callbacks of the account disabled', durationMs },
      next: { state: 'dead', disableAccount: true },
    };
  }
  const reason =
    result.error ??
    (status !== null && status >= 300 && status <= 399
      ? `redirect (${status}) not followed`
      : `unexpected status ${status}`);
  const delay = nextAttemptDelayMs(
    schedule,
    attemptsBefore + 1,
    parseRetryAfter(result.retryAfter, now),
    random,
  );
  return {
    attempt: { at, httpStatus: status, error: reason, durationMs },
    next:
      delay === null
        ? { state: 'dead', disableAccount: false }
        : { state: 'pending', at: new Date(now.getTime() + delay) },
  };
}

/** The outcome as the metrics and the logs name it (`waybill_callback_attempts_total{outcome}`). */
export function outcomeLabel(outcome: AttemptOutcome): 'delivered' | 'failed' | 'dead' | 'gone' {
  const next = outcome.next;
  if (next.state === 'delivered') return 'delivered';
  if (next.state === 'pending') return 'failed';
  return next.disableAccount ? 'gone' : 'dead';
}
