import type { DeliveryState } from './delivery.js';
import type { RecipientRef } from './events.js';

/**
 * Backfill (CONTRACT §9, `POST …/deliveries/backfill`): after an account's callbacks were off for a while (no
 * deliveries were queued for its events then), one delivery of the latest event of each recipient that had an
 * event since a given instant, unless that event already has a pending or delivered delivery. The latest event
 * carries the recipient's whole current state, so one per recipient catches a receiver up.
 */

/** An event of a recipient that had one since the backfill's `since`, with its delivery's state. */
export interface BackfillEvent extends RecipientRef {
  seq: number;
  recordedAt: Date;
  /** The state of the event's delivery; null when none was queued (callbacks were off). */
  delivery: DeliveryState | null;
}

/** What a backfill writes, by event position (`seq`). */
export interface BackfillPlan {
  /** Latest events without a delivery: queue one, due at once. */
  queue: number[];
  /** Latest events whose delivery is dead (or superseded): pending again with a fresh schedule. */
  requeue: number[];
  /** Older pending deliveries of the same recipients: superseded by the one queued now. */
  supersede: number[];
}

const recipientKey = (r: RecipientRef): string => `${r.messageId}\u0000${r.to}`;

/**
 * Plans a backfill from every event of the recipients that may qualify (an engine may load more; only those
 * with an event recorded at or after `since` count).
 */
export function planBackfill(events: readonly BackfillEvent[], since: Date): BackfillPlan {
  const byRecipient = new Map<string, BackfillEvent[]>();
  for (const event of events) {
    const list = byRecipient.get(recipientKey(event));
    if (list) list.push(event);
    else byRecipient.set(recipientKey(event), [event]);
  }
  const plan: BackfillPlan = { queue: [], requeue: [], supersede: [] };
  for (const list of byRecipient.values()) {
    if (!list.some((e) => e.recordedAt.getTime() >= since.getTime())) continue;
    list.sort((a, b) => a.seq - b.seq);
    const latest = list[list.length - 1] as BackfillEvent;
    if (latest.delivery === 'pending' || latest.delivery === 'delivered') continue;
    if (latest.delivery === null) plan.queue.push(latest.seq);
    else plan.requeue.push(latest.seq);
    for (const older of list) {
      if (older !== latest && older.delivery === 'pending') plan.supersede.push(older.seq);
    }
  }
  return plan;
}

/** How many deliveries a plan queues. */
export const queuedBy = (plan: BackfillPlan): number => plan.queue.length + plan.requeue.length;
