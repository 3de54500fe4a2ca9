import type { FastifyInstance } from 'fastify';
import type { DeliveryDetail } from '../domain/deliveries/delivery.js';
import { isMessageId } from '../domain/formats.js';
import {
  DR_ERRCODES,
  DR_STATUS_MEANINGS,
  DR_STATUSCODE_MEANINGS,
  type DrErrcode,
  SEND_STATUS_MEANINGS,
} from '../domain/vocabulary.js';
import { type DlrItem, toDlrItem } from '../domain/wire.js';
import { redeliverOne } from '../operations/deliveries.js';
import { pageAccount, signedOnly } from './guards.js';
import { type ConsoleDeps, field, page } from './render.js';

/** Every field of a `/dlr` item with the spec's meaning of its code, for the lookup page. */
export function meanings(item: DlrItem) {
  return {
    status: SEND_STATUS_MEANINGS[item.status],
    drStatus: item.drStatus === undefined ? null : DR_STATUS_MEANINGS[item.drStatus],
    drStatuscode: item.drStatuscode === undefined ? null : DR_STATUSCODE_MEANINGS[item.drStatuscode],
    drErrcode: item.drErrcode === undefined ? null : DR_ERRCODES[item.drErrcode as DrErrcode],
  };
}

/**
 * A delivery card's count, agreeing with the attempt table under it: `attempts` counts those since the last
 * redelivery (the relay's retry schedule restarts there), the log holds every attempt. When they differ the
 * label says both: `3 attempts (1 since redelivery)`.
 */
export function attemptsLabel(delivery: Pick<DeliveryDetail, 'attempts' | 'attemptLog'>): string {
  const all = Math.max(delivery.attemptLog.length, delivery.attempts);
  const label = `${all} attempt${all === 1 ? '' : 's'}`;
  if (delivery.attempts === all) return label;
  return `${label} (${delivery.attempts === 0 ? 'none' : delivery.attempts} since redelivery)`;
}

/** Page 1: a message id's recipients as /dlr shows them, each with its receipt timeline and callback deliveries. */
export async function messagePages(app: FastifyInstance, { ctx }: ConsoleDeps): Promise<void> {
  app.get('/messages', { schema: { hide: true }, preHandler: signedOnly }, async (request, reply) => {
    const account = await pageAccount(ctx, request);
    const id = field(request.query, 'id');
    const notice = field(request.query, 'notice');
    if (id === undefined)
      return page(request, reply, 'messages', { title: 'Message lookup', account, id: '' });
    if (!isMessageId(id)) {
      return page(
        request,
        reply,
        'messages',
        { title: 'Message lookup', account, id, error: 'A message id is 1–64 of A–Z a–z 0–9 . _ : -' },
        400,
      );
    }
    const [rows, events, deliveries] = await Promise.all([
      ctx.store.findDlr(account.id, id),
      ctx.store.listMessageEvents(account.id, id),
      ctx.store.listMessageDeliveries(account.id, id),
    ]);
    const recipients = rows.map(toDlrItem).map((item) => ({
      item,
      meaning: meanings(item),
      events: events.filter((e) => e.item.to === item.to).map((e) => ({ ...e, meaning: meanings(e.item) })),
      deliveries: deliveries
        .filter((d) => d.to === item.to)
        .map((d) => ({ ...d, attemptsLabel: attemptsLabel(d) })),
    }));
    return page(request, reply, 'messages', { title: `Message ${id}`, account, id, recipients, notice });
  });

  app.post(
    '/messages/redeliver',
    { schema: { hide: true }, preHandler: signedOnly },
    async (request, reply) => {
      const account = await pageAccount(ctx, request);
      const delivery = await redeliverOne(ctx, account.id, field(request.body, 'delivery') ?? '');
      const back = new URLSearchParams({ id: delivery.messageId, notice: 'redelivered' });
      if (request.signed?.kind === 'operator') back.set('account', account.id);
      return reply.redirect(`/console/messages?${back}`, 303);
    },
  );
}
