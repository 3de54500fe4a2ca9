import type { DeliveryState } from './delivery.js';

/**
 * Operator redeliveries (CONTRACT §9): a delivery made pending again with a fresh schedule and the same
 * webhook-id, unless sending it would take the receiver back in time.
 */

/** A delivery as loaded for a redelivery. */
export interface RedeliveryCandidate {
  state: DeliveryState;
  /** A later delivery of the same recipient exists (a newer event was queued after this one). */
  newerOfRecipient: boolean;
}

/**
 * Why a delivery may not be redelivered: `superseded` when it is superseded, or when a newer delivery of its
 * recipient exists (that one carries the current state; this one would take the receiver back in time). Null
 * when it may be.
 */
export function redeliveryRefusal(delivery: RedeliveryCandidate): 'superseded' | null {
  return delivery.state === 'superseded' || delivery.newerOfRecipient ? 'superseded' : null;
}

/** Those of an account's deliveries that a bulk redelivery makes pending again: the dead ones that may be. */
export function redeliverableDead<D extends RedeliveryCandidate>(deliveries: readonly D[]): D[] {
  return deliveries.filter((d) => d.state === 'dead' && redeliveryRefusal(d) === null);
}
