import type { AppContext } from '../context.js';
import type { TranslatedReceipt } from '../domain/intake/translate.js';

/** A translated receipt that names its recipient by the carrier id the route gave it. */
export type CarrierNamedReceipt = TranslatedReceipt & { carrierId: string };

export type CarrierReceiptOutcome = 'matched' | 'parked' | 'forbidden';

type ReceiptContext = Pick<AppContext, 'store' | 'metrics' | 'now' | 'deliveriesQueued'>;

/**
 * Applies translated receipts of one route by their carrier ids (CONTRACT §12 "Correlation"), the one way every
 * intake source does it, in one transaction (an SMPP bind's group, the HTTP adapters' group): each is matched by
 * `(route, carrier id)` and applied under the precedence of every receipt, parked while no recipient holds the
 * pair (applied when a message ingest claims it), or `forbidden` — nothing written — when the pair's recipient
 * belongs to an account outside the route's `accounts`. All are committed or parked together, or the call throws
 * and none is. Bumps the receipt-event metric and wakes the relay for applied receipts, and counts `matched` or
 * `parked` on the route; the source answers `forbidden` its own way. The outcomes are in input order.
 */
export async function applyCarrierReceipts(
  ctx: ReceiptContext,
  route: { name: string; accounts: readonly string[] },
  receipts: readonly CarrierNamedReceipt[],
): Promise<CarrierReceiptOutcome[]> {
  if (receipts.length === 0) return [];
  const results = await ctx.store.ingestCarrierReceipts(
    route.name,
    receipts.map(({ carrierId, drStatuscode, drErrcode, drTime }) => ({
      carrierId,
      drStatuscode,
      drErrcode,
      drTime,
    })),
    ctx.now(),
    { accounts: route.accounts },
  );
  if (results.length !== receipts.length) {
    throw new Error('the store gave not one result per carrier receipt');
  }
  let applied = 0;
  const outcomes = results.map((result): CarrierReceiptOutcome => {
    if (result.outcome === 'forbidden') return 'forbidden';
    if (result.outcome === 'applied') applied += 1;
    const counted = result.outcome === 'parked' ? 'parked' : 'matched';
    ctx.metrics.countIntake(route.name, counted);
    return counted;
  });
  if (applied > 0) {
    ctx.metrics.receiptEvents.inc(applied);
    ctx.deliveriesQueued();
  }
  return outcomes;
}
