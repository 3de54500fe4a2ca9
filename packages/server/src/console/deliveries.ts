import type { FastifyInstance } from 'fastify';
import { DELIVERY_STATES } from '../domain/deliveries/delivery.js';
import { ApiError } from '../domain/errors.js';
import { parseDeliveriesQuery, type RawQuery } from '../domain/query-params.js';
import { deliveryPage, redeliverDead, redeliverOne } from '../operations/deliveries.js';
import { pageAccount, signedOnly } from './guards.js';
import { type ConsoleDeps, field, page } from './render.js';

/** Page 3: the account's callback deliveries by state, newest first; redeliver one, or every dead one. */
export async function deliveryPages(app: FastifyInstance, { ctx }: ConsoleDeps): Promise<void> {
  app.get('/deliveries', { schema: { hide: true }, preHandler: signedOnly }, async (request, reply) => {
    const account = await pageAccount(ctx, request);
    const raw: Record<string, string> = {};
    for (const name of ['state', 'cursor'] as const) {
      const value = field(request.query, name);
      if (value !== undefined) raw[name] = value;
    }
    const data = {
      title: 'Deliveries',
      account,
      states: DELIVERY_STATES,
      state: raw.state ?? '',
      notice: field(request.query, 'notice'),
      count: field(request.query, 'count'),
    };
    const query = parseDeliveriesQuery(raw as RawQuery);
    if (!query.ok) return page(request, reply, 'deliveries', { ...data, error: query.detail }, 400);
    let result: Awaited<ReturnType<typeof deliveryPage>>;
    try {
      result = await deliveryPage(ctx, account.id, query.value);
    } catch (error) {
      if (!(error instanceof ApiError) || error.problem !== 'invalid_request') throw error;
      return page(request, reply, 'deliveries', { ...data, error: error.message }, 400);
    }
    const older =
      result.nextCursor === null ? null : new URLSearchParams({ ...raw, cursor: result.nextCursor });
    if (older && request.signed?.kind === 'operator') older.set('account', account.id);
    return page(request, reply, 'deliveries', {
      ...data,
      deliveries: result.deliveries,
      older: older === null ? null : `/console/deliveries?${older}`,
    });
  });

  const back = (request: { signed: unknown }, accountId: string, params: Record<string, string>) => {
    const query = new URLSearchParams(params);
    if ((request.signed as { kind?: string } | null)?.kind === 'operator') query.set('account', accountId);
    return `/console/deliveries?${query}`;
  };

  app.post(
    '/deliveries/redeliver',
    { schema: { hide: true }, preHandler: signedOnly },
    async (request, reply) => {
      const account = await pageAccount(ctx, request);
      const delivery = await redeliverOne(ctx, account.id, field(request.body, 'delivery') ?? '');
      return reply.redirect(back(request, account.id, { notice: 'redelivered', delivery: delivery.id }), 303);
    },
  );

  app.post(
    '/deliveries/redeliver-dead',
    { schema: { hide: true }, preHandler: signedOnly },
    async (request, reply) => {
      const account = await pageAccount(ctx, request);
      const count = await redeliverDead(ctx, account.id);
      return reply.redirect(
        back(request, account.id, { notice: 'redelivered-dead', count: String(count) }),
        303,
      );
    },
  );
}
