import { monotonicFactory } from 'ulid';
import type { DlrItem } from '../wire.js';

/**
 * Receipt events (CONTRACT §9): one for every applied receipt, recorded in the same transaction as the change,
 * carrying the recipient's `/dlr` item as it stands after that receipt.
 */

/** One outbound SMS recipient: the unit that callbacks keep in order and supersede within. */
export interface RecipientRef {
  messageId: string;
  to: string;
}

/** A recorded event, as the feed (`GET /receipts`) and deliveries show it. */
export interface ReceiptEvent {
  /** `evt_` + a ULID: unique, and the `webhook-id` of every delivery of it. */
  id: string;
  /** Position in its account's feed: 1, 2, 3… with no gap, in commit order. */
  seq: number;
  recordedAt: Date;
  item: DlrItem;
}

/**
 * A recorded event with its item as stored: the JSON text written when it was recorded. The feed splices it
 * into its page as it is, instead of parsing it and serializing it again (docs/benchmarks.md).
 */
export interface StoredReceiptEvent extends Omit<ReceiptEvent, 'item'> {
  itemJson: string;
}

export const parseStoredEvent = ({ itemJson, ...event }: StoredReceiptEvent): ReceiptEvent => ({
  ...event,
  item: JSON.parse(itemJson) as DlrItem,
});

/** An event a plan asks the store to record; the store numbers it (`seq`) when it writes. */
export interface PlannedEvent extends RecipientRef {
  id: string;
  recordedAt: Date;
  /** The recipient record's `createdAt`: retention removes the event with its record. */
  messageCreatedAt: Date;
  item: DlrItem;
  /**
   * The callback delivery to queue with it: `pending`, `superseded` when a later event of the same recipient
   * in the same batch carries the newer state, or null when the account has no enabled callback.
   */
  delivery: 'pending' | 'superseded' | null;
}

const nextUlid = monotonicFactory();

/** A new event id: `evt_` and a ULID (monotonic within this process, so ids of one batch sort in order). */
export const newEventId = (): string => `evt_${nextUlid()}`;

/** Matches an event id: `evt_` and 26 characters of Crockford's base32. */
export const EVENT_ID = /^evt_[0-9A-HJKMNP-TV-Z]{26}$/;

const recipientKey = (r: RecipientRef): string => `${r.messageId}\u0000${r.to}`;

/**
 * Decides the delivery of each planned event, once the batch's events are known: only the newest event of a
 * recipient stays pending (it carries the whole current state), so no receiver sees a recipient go
 * backwards. Returns the recipients whose *stored* pending deliveries must become superseded.
 */
export function settleDeliveries(events: PlannedEvent[], callbacks: boolean): RecipientRef[] {
  const newest = new Map<string, PlannedEvent>();
  for (const event of events) newest.set(recipientKey(event), event);
  for (const event of events) {
    event.delivery = !callbacks ? null : newest.get(recipientKey(event)) === event ? 'pending' : 'superseded';
  }
  if (!callbacks) return [];
  return [...newest.values()].map((e) => ({ messageId: e.messageId, to: e.to }));
}
