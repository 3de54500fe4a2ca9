import type { AttemptOutcome } from './attempt-outcome.js';
import type { DeliveryState } from './delivery.js';

/**
 * How a claimed delivery's attempt meets the stored delivery: whether it may be sent at all, and what its
 * outcome changes. The stored state can move under a claim: ingest supersedes a pending delivery (leased or not)
 * the moment a newer event of its recipient is queued.
 */

/** A delivery as the store has it when a relay checks or finishes its claim. */
export interface StoredClaim {
  state: DeliveryState;
  /** The lease it is held under, null when none. */
  lease: string | null;
}

/**
 * Whether a claimed delivery may be sent now: only while it is still pending and still leased by this claim.
 * A delivery superseded since it was claimed is never sent (a relay checks again right before each attempt of a
 * delivery it held), nor is one whose lease another relay took over.
 */
export function maySend(stored: StoredClaim | null, lease: string): boolean {
  return stored !== null && stored.lease === lease && stored.state === 'pending';
}

/** What an attempt writes to its delivery; null when the claim's lease is no longer held (nothing is written). */
export interface SettledAttempt {
  state: DeliveryState;
  /** When it is due again; null unless it stays pending. */
  nextAttemptAt: Date | null;
  /** The receiver answered 410 Gone: turn the account's callbacks off. */
  disableCallbacks: boolean;
}

/**
 * What an attempt's outcome makes of the stored delivery. A delivery superseded while its attempt was in flight
 * stays superseded, whatever the answer: a newer delivery of the recipient carries the current state and waits
 * for this attempt to end, and a superseded delivery is never attempted again nor shown as delivered. The
 * attempt is still counted and logged, so the operator sees what was sent. A 410 turns the account's callbacks
 * off either way.
 */
export function settleAttempt(
  stored: StoredClaim | null,
  lease: string,
  outcome: AttemptOutcome,
): SettledAttempt | null {
  if (stored === null || stored.lease !== lease) return null;
  const { next } = outcome;
  const disableCallbacks = next.state === 'dead' && next.disableAccount;
  if (stored.state === 'superseded') return { state: 'superseded', nextAttemptAt: null, disableCallbacks };
  return { state: next.state, nextAttemptAt: next.state === 'pending' ? next.at : null, disableCallbacks };
}
