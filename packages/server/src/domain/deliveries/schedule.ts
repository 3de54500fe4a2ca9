/** The retry schedule of callback deliveries (CONTRACT §9): WAYBILL_CALLBACK_RETRY_SCHEDULE and Retry-After. */

/** The default of WAYBILL_CALLBACK_RETRY_SCHEDULE: 10 attempts over about 76 hours. */
export const DEFAULT_RETRY_SCHEDULE: readonly number[] = [
  5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400,
];

/** How far a delay may stray from the schedule either way, so retries of many deliveries spread out. */
export const RETRY_JITTER = 0.2;

/**
 * When the next attempt is due after a failed one, or null when the schedule is spent (the delivery is dead).
 * `attemptsMade` counts the attempt that just failed. The delay is the schedule's, ±20% jitter, and never
 * shorter than the receiver's `Retry-After` (which is capped at the schedule's longest delay, so a receiver
 * cannot park a delivery for a year).
 *
 * @param random a number in [0, 1); injectable so tests can pin the jitter
 */
export function nextAttemptDelayMs(
  schedule: readonly number[],
  attemptsMade: number,
  retryAfterSeconds: number | null,
  random: number = Math.random(),
): number | null {
  const base = schedule[attemptsMade - 1];
  if (base === undefined) return null;
  const jittered = base * 1000 * (1 - RETRY_JITTER + 2 * RETRY_JITTER * random);
  if (retryAfterSeconds === null) return Math.round(jittered);
  const cap = Math.max(...schedule) * 1000;
  return Math.round(Math.max(jittered, Math.min(retryAfterSeconds * 1000, cap)));
}

/**
 * A `Retry-After` value in seconds (delay-seconds or an HTTP date), or null when absent or unreadable.
 */
export function parseRetryAfter(value: string | undefined, now: Date): number | null {
  if (value === undefined) return null;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  // Date.parse reads almost anything ("-5" is a date in year -5); only an IMF-fixdate is an HTTP date here.
  if (!/^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/.test(trimmed)) return null;
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return null;
  return Math.max(0, Math.ceil((date - now.getTime()) / 1000));
}
