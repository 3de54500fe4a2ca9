import type { AppContext } from '../context.js';
import type { TranslatedReceipt } from '../domain/intake/translate.js';

/** A translated receipt that names its recipient by the carrier id the route gave it. */
export type CarrierNamedReceipt = TranslatedReceipt & { carrierId: string };

/**
 * Applies one translated receipt from a route by its carrier id (CONTRACT §12 "Correlation"), the one way every
 * intake source does it (the HTTP adapters now, the SMPP binds later): matched by `(route, carrier id)` and
 * applied under the precedence of every receipt, parked while no recipient holds the pair (applied when a
 * message ingest claims it), or `forbidden` — nothing written — when the pair's recipient belongs to an account
 * outside the route's `accounts`. Bumps the receipt-event metric and wakes the relay for an applied receipt, and
 * counts `matched` or `parked` on the route; the source answers `forbidden` its own way.
 */
export async function applyCarrierReceipt(
  ctx: Pick<AppContext, 'store' | 'metrics' | 'now' | 'deliveriesQueued'>,
  route: { name: string; accounts: readonly string[] },
  receipt: CarrierNamedReceipt,
): Promise<'matched' | 'parked' | 'forbidden'> {
  const { carrierId, drStatuscode, drErrcode, drTime } = receipt;
  const [result] = await ctx.store.ingestCarrierReceipts(
    route.name,
    [{ carrierId, drStatuscode, drErrcode, drTime }],
    ctx.now(),
    { accounts: route.accounts },
  );
  if (result === undefined) throw new Error('the store gave no result for the carrier receipt');
  if (result.outcome === 'forbidden') return 'forbidden';
  if (result.outcome === 'applied') {
    ctx.metrics.receiptEvents.inc(1);
    ctx.deliveriesQueued();
  }
  const counted = result.outcome === 'parked' ? 'parked' : 'matched';
  ctx.metrics.countIntake(route.name, counted);
  return counted;
}
