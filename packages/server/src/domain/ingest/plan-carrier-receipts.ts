import { planReceipts, type ReceiptBatchState, type ReceiptPlan } from './plan-receipts.js';
import type { CarrierReceiptInput, ReceiptInput } from './precedence.js';

/**
 * The carrier receipt planner (CONTRACT §12 "Correlation"): receipts that name their recipient only by the
 * carrier id a route gave it. Each is matched to the recipient holding `(route, carrierId)`, in whichever account,
 * and goes through the receipt planner of that account (same precedence, events and deliveries as §5); one whose
 * pair no recipient holds yet is parked until a recipient claims it (§9 "Early receipts").
 */

/** The recipient that holds a carrier pair. */
export interface CarrierHolder {
  accountId: string;
  messageId: string;
  to: string;
}

/** What a carrier receipt batch needs loaded. */
export interface CarrierReceiptState {
  /** The holders of the batch's carrier ids on its route, by carrier id. */
  holders: ReadonlyMap<string, CarrierHolder>;
  /** For each holder's account: its recipients of the held message ids, and whether callbacks are on. */
  accounts: ReadonlyMap<string, ReceiptBatchState>;
}

/** Which accounts a route may touch: null or empty, any (CONTRACT §12 "Routes"). */
export type RouteAccounts = readonly string[] | null;

/** What became of one carrier receipt. */
export type CarrierReceiptResult =
  /** Matched: applied under the precedence rules (an event was recorded), or ignored by them. */
  | { outcome: 'applied' | 'ignored'; accountId: string; messageId: string; to: string }
  /** No recipient holds the pair yet: parked (a replay of a parked receipt is parked once). */
  | { outcome: 'parked' }
  /** The pair's recipient belongs to an account the route may not touch: nothing was written. */
  | { outcome: 'forbidden' };

export interface CarrierReceiptPlan {
  results: CarrierReceiptResult[];
  /** The writes of each account the batch matched, as the receipt planner made them. */
  accounts: Map<string, ReceiptPlan>;
  /** Receipts to park under the route's key, each once (by fingerprint). */
  park: CarrierReceiptInput[];
}

/** Whether a route limited to `accounts` may touch the records of this account. */
export const mayTouch = (accounts: RouteAccounts, accountId: string): boolean =>
  accounts === null || accounts.length === 0 || accounts.includes(accountId);

/** A stable identity of a carrier receipt's content: replaying the same receipt parks it once. */
export function carrierReceiptFingerprint(route: string, r: CarrierReceiptInput): string {
  return JSON.stringify([
    route,
    r.carrierId,
    r.drStatuscode,
    r.drErrcode,
    r.drTime.getTime(),
    r.network ?? null,
    r.price ?? null,
    r.counts ?? null,
  ]);
}

/** Plans a batch of one route's receipts: items in order, later ones seeing what earlier ones applied. */
export function planCarrierReceipts(
  state: CarrierReceiptState,
  route: string,
  items: readonly CarrierReceiptInput[],
  accounts: RouteAccounts,
  now: Date,
): CarrierReceiptPlan {
  const results: (CarrierReceiptResult | undefined)[] = items.map(() => undefined);
  const park = new Map<string, CarrierReceiptInput>();
  const byAccount = new Map<string, { index: number; input: ReceiptInput }[]>();
  items.forEach((item, index) => {
    const holder = state.holders.get(item.carrierId);
    if (holder === undefined) {
      park.set(carrierReceiptFingerprint(route, item), item);
      results[index] = { outcome: 'parked' };
      return;
    }
    if (!mayTouch(accounts, holder.accountId)) {
      results[index] = { outcome: 'forbidden' };
      return;
    }
    const { carrierId: _, ...fields } = item;
    const list = byAccount.get(holder.accountId) ?? [];
    list.push({ index, input: { ...fields, messageId: holder.messageId, to: holder.to } });
    byAccount.set(holder.accountId, list);
  });
  const plans = new Map<string, ReceiptPlan>();
  for (const [accountId, list] of byAccount) {
    const loaded = state.accounts.get(accountId) ?? { recipients: new Map(), callbacks: false };
    const planned = planReceipts(
      loaded,
      list.map((l) => l.input),
      now,
    );
    // Every receipt here names its recipient by `to`, the one item error receipts have.
    if (!planned.ok)
      throw new Error(`carrier receipts of account ${accountId}: ${planned.errors[0]?.detail}`);
    plans.set(accountId, planned.plan);
    list.forEach(({ index, input }, i) => {
      const result = planned.plan.results[i];
      // 'unknown' only if the holder's record vanished under its pair (it is parked by message id then).
      results[index] =
        result === 'applied' || result === 'ignored'
          ? { outcome: result, accountId, messageId: input.messageId, to: input.to ?? '' }
          : { outcome: 'parked' };
    });
  }
  return {
    results: results.map((r) => r ?? { outcome: 'parked' }),
    accounts: plans,
    park: [...park.values()],
  };
}
