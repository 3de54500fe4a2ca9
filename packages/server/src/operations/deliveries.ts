import type { AppContext } from '../context.js';
import { decodeSeqCursor, encodeSeqCursor } from '../domain/cursor.js';
import type { Delivery, DeliveryState } from '../domain/deliveries/delivery.js';
import { EVENT_ID } from '../domain/deliveries/events.js';
import { ApiError } from '../domain/errors.js';

type DeliveryContext = Pick<AppContext, 'store' | 'now' | 'deliveriesQueued'>;

/**
 * Redelivers one delivery of the account (the operator API and the console): pending again, due now, with the
 * same webhook-id. 404 for an id that names no delivery of the account, 409 when it is superseded
 * (domain/deliveries/redeliver.ts).
 */
export async function redeliverOne(
  ctx: DeliveryContext,
  accountId: string,
  deliveryId: string,
): Promise<Delivery> {
  // Ids that are not event ids name no delivery; they never reach the store.
  const result = EVENT_ID.test(deliveryId)
    ? await ctx.store.redeliver(accountId, deliveryId, ctx.now())
    : null;
  if (result === null) throw new ApiError('not_found', 'no such delivery in this account');
  if (result === 'superseded') {
    throw new ApiError(
      'conflict',
      'this delivery is superseded by a newer event of the same recipient, whose delivery carries the current state',
    );
  }
  ctx.deliveriesQueued();
  return result;
}

/** Redelivers every dead delivery of the account that is the newest of its recipient; returns how many. */
export async function redeliverDead(ctx: DeliveryContext, accountId: string): Promise<number> {
  const redelivered = await ctx.store.redeliverDead(accountId, ctx.now());
  if (redelivered > 0) ctx.deliveriesQueued();
  return redelivered;
}

/** One page of the account's deliveries, newest first (the operator API's list and the console's). */
export interface DeliveryPage {
  deliveries: Delivery[];
  nextCursor: string | null;
  hasMore: boolean;
}

/**
 * The page of deliveries a parsed query asks for (domain/query-params.ts parseDeliveriesQuery). The cursor is
 * bound to the account and the state filter; one from another listing is a 400.
 */
export async function deliveryPage(
  ctx: Pick<AppContext, 'store' | 'pepper'>,
  accountId: string,
  query: { state: DeliveryState | null; cursor: string | null; limit: number },
): Promise<DeliveryPage> {
  const binding = ['deliveries', accountId, query.state];
  const spec: { state?: DeliveryState; beforeSeq?: number; limit: number } = { limit: query.limit + 1 };
  if (query.state !== null) spec.state = query.state;
  if (query.cursor !== null) {
    const before = decodeSeqCursor(ctx.pepper, query.cursor, binding);
    if (before === null) {
      throw new ApiError('invalid_request', 'cursor is not valid for this listing; start again without it', {
        param: 'cursor',
      });
    }
    spec.beforeSeq = before;
  }
  const rows = await ctx.store.listDeliveries(accountId, spec);
  const deliveries = rows.slice(0, query.limit);
  const hasMore = rows.length > query.limit;
  const oldest = deliveries.at(-1);
  return {
    deliveries,
    nextCursor: hasMore && oldest ? encodeSeqCursor(ctx.pepper, oldest.seq, binding) : null,
    hasMore,
  };
}
