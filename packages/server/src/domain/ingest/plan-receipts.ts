import { newEventId, type PlannedEvent, type RecipientRef, settleDeliveries } from '../deliveries/events.js';
import type { StoredMessage } from '../records.js';
import { toDlrItem } from '../wire.js';
import {
  applyReceipt,
  type CarrierReceiptInput,
  type ItemError,
  type ReceiptFields,
  type ReceiptInput,
  type ReceiptOutcome,
  receiptTarget,
} from './precedence.js';

/**
 * The receipt planner: given what the store loaded, the outcome of a receipt batch and the writes it needs.
 * Stores load, write the plan in one transaction, and know none of these rules (ARCHITECTURE "Rules live once").
 */

/** A receipt waiting for its recipient (CONTRACT §9 "Early receipts"). */
export interface ParkedReceipt {
  /** The store's handle of the parked row, to delete it once consumed. */
  ref: number;
  receipt: ReceiptInput;
  parkedAt: Date;
}

/**
 * A receipt from a route whose carrier id no recipient held yet (CONTRACT §12 "Correlation"): it waits for a
 * recipient to claim `(route, receipt.carrierId)`. Not of any account until then.
 */
export interface ParkedCarrierReceipt {
  /** The store's handle of the parked row; parked receipts of either kind share one numbering. */
  ref: number;
  route: string;
  receipt: CarrierReceiptInput;
  /** The accounts the route may touch, as it was when the receipt parked; null: any account. */
  accounts: readonly string[] | null;
  parkedAt: Date;
}

/** What a receipt batch needs loaded. */
export interface ReceiptBatchState {
  /** Outbound SMS recipients by message id, in the order they were first ingested (as /dlr lists them). */
  recipients: ReadonlyMap<string, readonly StoredMessage[]>;
  /** The account has a callback URL and callbacks enabled: applied receipts queue deliveries. */
  callbacks: boolean;
}

export interface ReceiptPlan {
  outcome: ReceiptOutcome;
  /** What became of each item, in order. */
  results: ('applied' | 'ignored' | 'unknown')[];
  /** Recipients whose SMS state changed, once each, in their final state. Only SMS and receipt fields differ. */
  updates: StoredMessage[];
  /** Events to record, in order; the store numbers them and queues their deliveries. */
  events: PlannedEvent[];
  /** Recipients whose stored pending deliveries are now superseded by a delivery of this batch. */
  supersede: RecipientRef[];
  /** Receipts for recipients not (yet) known, to park; a replay of one already parked is parked once. */
  park: ReceiptInput[];
}

export type Planned<P> = { ok: true; plan: P } | { ok: false; errors: ItemError[] };

const recordKey = (m: { id: string; channelUserId: string }) => `${m.id}\u0000${m.channelUserId}`;

/**
 * Collects applied receipts as events. Shared by receipt batches and by parked receipts applied when their
 * message arrives, so both record events the same way.
 */
export class EventLog {
  readonly events: PlannedEvent[] = [];
  constructor(private readonly now: Date) {}

  /** Applies `receipt` to `recipient` under the precedence rule; returns the new state, or null if ignored. */
  apply(recipient: StoredMessage, receipt: ReceiptFields): StoredMessage | null {
    if (!recipient.sms) return null;
    const sms = applyReceipt(recipient.sms, receipt);
    if (sms === null) return null;
    const updated: StoredMessage = { ...recipient, sms };
    this.events.push({
      id: newEventId(),
      recordedAt: this.now,
      messageCreatedAt: updated.createdAt,
      messageId: updated.id,
      to: updated.channelUserId,
      item: toDlrItem(updated),
      delivery: null,
    });
    return updated;
  }
}

/** A stable identity of a receipt's content: replaying the same receipt parks it once. */
export function receiptFingerprint(r: ReceiptInput): string {
  return JSON.stringify([
    r.messageId,
    r.to ?? null,
    r.drStatuscode,
    r.drErrcode,
    r.drTime.getTime(),
    r.network ?? null,
    r.price ?? null,
    r.counts ?? null,
  ]);
}

/** Plans a receipt batch: items in order, later ones seeing what earlier ones applied. */
export function planReceipts(
  state: ReceiptBatchState,
  items: readonly ReceiptInput[],
  now: Date,
): Planned<ReceiptPlan> {
  const outcome: ReceiptOutcome = { applied: 0, ignored: 0, unknown: [] };
  const errors: ItemError[] = [];
  const log = new EventLog(now);
  const current = new Map<string, StoredMessage[]>();
  const changed = new Map<string, StoredMessage>();
  const park = new Map<string, ReceiptInput>();
  const results: ReceiptPlan['results'] = [];
  items.forEach((item, index) => {
    let list = current.get(item.messageId);
    if (!list) {
      list = [...(state.recipients.get(item.messageId) ?? [])];
      current.set(item.messageId, list);
    }
    const target = receiptTarget(list, item);
    if (typeof target === 'string') {
      errors.push({ index, detail: target });
      return;
    }
    if (!target?.sms) {
      outcome.unknown.push({ messageId: item.messageId, to: item.to ?? null });
      park.set(receiptFingerprint(item), item);
      results.push('unknown');
      return;
    }
    const updated = log.apply(target, item);
    if (updated === null) {
      outcome.ignored++;
      results.push('ignored');
      return;
    }
    results.push('applied');
    list[list.indexOf(target)] = updated;
    changed.set(recordKey(updated), updated);
    outcome.applied++;
  });
  if (errors.length > 0) return { ok: false, errors };
  const supersede = settleDeliveries(log.events, state.callbacks);
  return {
    ok: true,
    plan: {
      outcome,
      results,
      updates: [...changed.values()],
      events: log.events,
      supersede,
      park: [...park.values()],
    },
  };
}

/**
 * Applies parked receipts to the outbound SMS recipients a message batch wrote, oldest `drTime` first, through
 * the same precedence as any receipt. A parked receipt with a `to` waits for that recipient; one without
 * waits for the first recipient of its message id; a carrier receipt waits for the recipient that claimed its
 * pair in this batch (`claimed`: carrier pair key → record key, only pairs the route may reach in this account).
 * Every parked receipt that meets its recipient is consumed, applied or not. Expired ones are the store's to
 * drop (it loads only live ones).
 *
 * @returns the refs of consumed parked receipts; `records` is updated in place and events go to `log`.
 */
export function applyParked(
  parked: readonly ParkedReceipt[],
  records: Map<string, StoredMessage>,
  newRecipients: ReadonlySet<string>,
  log: EventLog,
  carrier: { parked: readonly ParkedCarrierReceipt[]; claimed: ReadonlyMap<string, string> } = {
    parked: [],
    claimed: new Map(),
  },
): number[] {
  if (parked.length === 0 && carrier.parked.length === 0) return [];
  const firstRecipientOf = new Map<string, string>();
  for (const [key, record] of records) {
    if (record.sms && newRecipients.has(key) && !firstRecipientOf.has(record.id)) {
      firstRecipientOf.set(record.id, key);
    }
  }
  const waiting: { ref: number; receipt: ReceiptFields; key: string | undefined }[] = [
    ...parked.map((p) => ({
      ref: p.ref,
      receipt: p.receipt,
      key:
        p.receipt.to === undefined
          ? firstRecipientOf.get(p.receipt.messageId)
          : recordKey({ id: p.receipt.messageId, channelUserId: p.receipt.to }),
    })),
    ...carrier.parked.map((p) => ({
      ref: p.ref,
      receipt: p.receipt,
      key: carrier.claimed.get(carrierPairKey(p.route, p.receipt.carrierId)),
    })),
  ];
  waiting.sort((a, b) => a.receipt.drTime.getTime() - b.receipt.drTime.getTime() || a.ref - b.ref);
  const consumed: number[] = [];
  for (const { ref, receipt, key } of waiting) {
    const recipient = key === undefined ? undefined : records.get(key);
    if (key === undefined || !recipient?.sms) continue;
    consumed.push(ref);
    const updated = log.apply(recipient, receipt);
    if (updated) records.set(key, updated);
  }
  return consumed;
}

/** The key of a carrier pair in the planners' maps. */
export const carrierPairKey = (route: string, carrierId: string): string => `${route}\u0000${carrierId}`;
