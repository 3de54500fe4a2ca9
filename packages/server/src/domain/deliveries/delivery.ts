import type { DlrItem } from '../wire.js';

/**
 * Callback deliveries (CONTRACT §9) as records: their states and what the operator API shows of them. The rules
 * live beside this file: claim-policy.ts (what a relay may take), attempt-outcome.ts (what an answer means),
 * finish.ts (how an outcome lands on the stored delivery), redeliver.ts and backfill.ts (operator requests),
 * schedule.ts, signing.ts, parking.ts; events.ts decides which events queue a delivery.
 */

/**
 * Pending: queued, attempted when due. Delivered: a 2xx answer. Dead: the retry schedule ran out, or the
 * receiver answered 410. Superseded: a newer event of the same recipient was queued before this one was sent;
 * it is never sent from then on (the newer delivery carries the whole current state).
 */
export const DELIVERY_STATES = ['pending', 'delivered', 'dead', 'superseded'] as const;
export type DeliveryState = (typeof DELIVERY_STATES)[number];

/** One attempt as the operator API shows it. */
export interface AttemptRecord {
  at: Date;
  /** Null when no answer came (refused, timed out, refused destination). */
  httpStatus: number | null;
  /** Null on success. */
  error: string | null;
  durationMs: number;
}

/** A delivery of one event to its account's callback; `id` is the event id. */
export interface Delivery {
  id: string;
  eventId: string;
  /** The event's position in the account's feed; deliveries list newest first by it. */
  seq: number;
  messageId: string;
  to: string;
  state: DeliveryState;
  attempts: number;
  createdAt: Date;
  /** Null unless pending. */
  nextAttemptAt: Date | null;
  lastAttempt: AttemptRecord | null;
  payload: DlrItem;
}

export interface DeliveryDetail extends Delivery {
  attemptLog: AttemptRecord[];
}

/**
 * Whether an account's deliveries are queued and sent: it has a callback URL and its callbacks are enabled.
 * While they are off, events are still recorded (for the feed) and pending deliveries wait, paused.
 */
export function callbacksOn(account: { callbackUrl: string | null; callbackEnabled: boolean }): boolean {
  return account.callbackUrl !== null && account.callbackEnabled;
}
