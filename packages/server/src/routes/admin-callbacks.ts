import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { AppContext } from '../context.js';
import { type AttemptRecord, DELIVERY_STATES, type Delivery } from '../domain/deliveries/delivery.js';
import { EVENT_ID } from '../domain/deliveries/events.js';
import { ApiError } from '../domain/errors.js';
import {
  DEFAULT_DELIVERY_LIMIT,
  MAX_DELIVERY_LIMIT,
  parseDeliveriesQuery,
  type RawQuery,
} from '../domain/query-params.js';
import { parseRfc3339 } from '../domain/wire.js';
import { AccountWithCallbackSecretSchema, accountOr404, accountWire, IdParams } from '../http/accounts.js';
import { ATTEMPT_EXAMPLE, DELIVERY_EXAMPLE } from '../http/examples.js';
import { documented } from '../http/openapi-document.js';
import { PATTERNS } from '../http/patterns.js';
import { methodNotAllowed } from '../http/protocol.js';
import {
  adminProblems,
  BODY_STATUSES,
  DlrItemSchema,
  enumOf,
  type NamedSchema,
  ref,
  response,
  SECURITY,
  Timestamp,
} from '../http/schemas.js';
import { describedOnly } from '../http/validation.js';
import { rotateCallbackSecret } from '../operations/accounts.js';
import { deliveryPage, redeliverDead, redeliverOne } from '../operations/deliveries.js';

const AttemptSchema = Type.Object(
  {
    at: Timestamp,
    httpStatus: Type.Union([Type.Integer(), Type.Null()], { description: 'Null when no answer came' }),
    error: Type.Union([Type.String(), Type.Null()], { description: 'Null on success' }),
    durationMs: Type.Integer(),
  },
  {
    $id: 'DeliveryAttempt',
    additionalProperties: false,
    description: 'One attempt to deliver a callback',
    examples: [ATTEMPT_EXAMPLE],
  },
);

const DeliverySchema = Type.Object(
  {
    id: Type.String({
      description: 'The event id (one delivery per event), sent as webhook-id',
      pattern: PATTERNS.eventId,
    }),
    eventId: Type.String({ pattern: PATTERNS.eventId }),
    messageId: Type.String({ pattern: PATTERNS.messageId }),
    to: Type.String({ pattern: PATTERNS.phone }),
    state: enumOf(DELIVERY_STATES),
    attempts: Type.Integer(),
    createdAt: Timestamp,
    nextAttemptAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
      description: 'Null unless pending',
    }),
    lastAttempt: Type.Union([ref(AttemptSchema), Type.Null()]),
    payload: ref(DlrItemSchema),
  },
  {
    $id: 'Delivery',
    additionalProperties: false,
    description: 'The callback delivery of one receipt event',
    examples: [DELIVERY_EXAMPLE],
  },
);

const DeliveryDetailSchema = Type.Object(
  { ...DeliverySchema.properties, attemptLog: Type.Array(ref(AttemptSchema), { description: 'In order' }) },
  {
    $id: 'DeliveryDetail',
    additionalProperties: false,
    description: 'A delivery with every attempt',
    examples: [{ ...DELIVERY_EXAMPLE, attemptLog: [ATTEMPT_EXAMPLE] }],
  },
);

const DeliveryPageSchema = Type.Object(
  {
    deliveries: Type.Array(ref(DeliverySchema), { description: 'Newest first' }),
    nextCursor: Type.Union([Type.String(), Type.Null()], { description: 'Fetches the older ones' }),
    hasMore: Type.Boolean(),
  },
  {
    $id: 'DeliveryPage',
    additionalProperties: false,
    description: 'A page of deliveries',
    examples: [{ deliveries: [DELIVERY_EXAMPLE], nextCursor: null, hasMore: false }],
  },
);

const RedeliveredSchema = Type.Object(
  { redelivered: Type.Integer({ description: 'Dead deliveries made pending again' }) },
  { $id: 'Redelivered', additionalProperties: false, examples: [{ redelivered: 3 }] },
);

const BackfillSchema = Type.Object(
  {
    since: Type.String({
      format: 'date-time',
      description: 'RFC 3339: recipients with an event recorded at or after this instant are caught up',
      examples: ['2026-11-22T10:00:00Z'],
    }),
  },
  { $id: 'BackfillRequest', additionalProperties: false, description: 'Where the backfill starts' },
);

const BackfilledSchema = Type.Object(
  { queued: Type.Integer({ description: 'Deliveries queued: at most one per recipient' }) },
  { $id: 'Backfilled', additionalProperties: false, examples: [{ queued: 12 }] },
);

/** The named schemas of the delivery routes, registered in the operator API's scope. */
export const DELIVERY_SCHEMAS: readonly NamedSchema[] = [
  AttemptSchema,
  DeliverySchema,
  DeliveryDetailSchema,
  DeliveryPageSchema,
  RedeliveredSchema,
  BackfillSchema,
  BackfilledSchema,
];

const attemptWire = (a: AttemptRecord) => ({
  ...a,
  at: a.at.toISOString(),
  durationMs: Math.round(a.durationMs),
});

const deliveryWire = (d: Delivery) => ({
  id: d.id,
  eventId: d.eventId,
  messageId: d.messageId,
  to: d.to,
  state: d.state,
  attempts: d.attempts,
  createdAt: d.createdAt.toISOString(),
  nextAttemptAt: d.nextAttemptAt?.toISOString() ?? null,
  lastAttempt: d.lastAttempt ? attemptWire(d.lastAttempt) : null,
  payload: d.payload,
});

const DeliveryParams = Type.Object({
  ...IdParams.properties,
  // Like the account id: an id that is not an event id names no delivery (404), so its format is the
  // document's only.
  deliveryId: Type.String({
    description: 'Delivery (event) id; a malformed one names no delivery: 404',
    examples: ['evt_01JD0000000000000000000000'],
    ...documented({ pattern: PATTERNS.eventId }),
  }),
});

/** Ids that are not event ids name no delivery; they never reach the store (nor echo back). */
const noDelivery = () => new ApiError('not_found', 'no such delivery in this account');

/** Callback secret rotation and the delivery outbox of an account (CONTRACT §9, operator side). */
export async function adminCallbackRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  const tags = ['operator'];
  const security = SECURITY.admin;

  app.post(
    '/accounts/:id/callback-secret',
    {
      schema: {
        operationId: 'rotateCallbackSecret',
        summary: 'Rotate the callback secret; the previous one keeps signing beside it for the grace period',
        tags,
        security,
        params: IdParams,
        response: {
          200: response('The account with its new callback secret', ref(AccountWithCallbackSecretSchema)),
          ...adminProblems([404, 413, 415]),
        },
      },
    },
    async (request) => {
      const { id } = await accountOr404(ctx, (request.params as { id: string }).id);
      const now = ctx.now();
      const rotated = await rotateCallbackSecret(
        ctx.store,
        ctx.pepper,
        id,
        now,
        ctx.config.callbackSecretGraceSeconds,
      );
      if (!rotated) throw new ApiError('not_found', `no account ${id}`);
      return { ...accountWire(rotated.account), callbackSecret: rotated.callbackSecret };
    },
  );
  methodNotAllowed(app, '/accounts/:id/callback-secret', ['POST']);

  app.get(
    '/accounts/:id/deliveries',
    {
      validatorCompiler: describedOnly,
      schema: {
        operationId: 'listDeliveries',
        summary: 'Callback deliveries of the account, newest first',
        tags,
        security,
        params: IdParams,
        querystring: Type.Object({
          state: Type.Optional(enumOf(DELIVERY_STATES, 'Only deliveries in this state')),
          cursor: Type.Optional(
            Type.String({ minLength: 1, description: 'nextCursor of the previous page' }),
          ),
          limit: Type.Optional(
            Type.Integer({ minimum: 1, maximum: MAX_DELIVERY_LIMIT, default: DEFAULT_DELIVERY_LIMIT }),
          ),
        }),
        response: {
          200: response('One page of deliveries, newest first', ref(DeliveryPageSchema)),
          ...adminProblems([400, 404]),
        },
      },
    },
    async (request) => {
      const { id } = await accountOr404(ctx, (request.params as { id: string }).id);
      const query = parseDeliveriesQuery(request.query as RawQuery);
      if (!query.ok) throw new ApiError('invalid_request', query.detail, { param: query.param });
      const page = await deliveryPage(ctx, id, query.value);
      return { ...page, deliveries: page.deliveries.map(deliveryWire) };
    },
  );
  methodNotAllowed(app, '/accounts/:id/deliveries', ['GET']);

  app.get(
    '/accounts/:id/deliveries/:deliveryId',
    {
      schema: {
        operationId: 'getDelivery',
        summary: 'One delivery with every attempt',
        tags,
        security,
        params: DeliveryParams,
        response: { 200: response('The delivery', ref(DeliveryDetailSchema)), ...adminProblems([404]) },
      },
    },
    async (request) => {
      const params = request.params as { id: string; deliveryId: string };
      const { id } = await accountOr404(ctx, params.id);
      const delivery = EVENT_ID.test(params.deliveryId)
        ? await ctx.store.getDelivery(id, params.deliveryId)
        : null;
      if (!delivery) throw noDelivery();
      return { ...deliveryWire(delivery), attemptLog: delivery.attemptLog.map(attemptWire) };
    },
  );
  methodNotAllowed(app, '/accounts/:id/deliveries/:deliveryId', ['GET']);

  app.post(
    '/accounts/:id/deliveries/:deliveryId/redeliver',
    {
      schema: {
        operationId: 'redeliverDelivery',
        summary: 'Send a delivery again: pending with a fresh schedule and the same webhook-id',
        description:
          '409 when it is superseded, or a newer event of its recipient exists (sending it would go back in time).',
        tags,
        security,
        params: DeliveryParams,
        response: {
          202: response('The delivery, pending again', ref(DeliverySchema)),
          ...adminProblems([404, 409, 413, 415]),
        },
      },
    },
    async (request, reply) => {
      const params = request.params as { id: string; deliveryId: string };
      const { id } = await accountOr404(ctx, params.id);
      return reply.code(202).send(deliveryWire(await redeliverOne(ctx, id, params.deliveryId)));
    },
  );
  methodNotAllowed(app, '/accounts/:id/deliveries/:deliveryId/redeliver', ['POST']);

  app.post(
    '/accounts/:id/deliveries/redeliver',
    {
      schema: {
        operationId: 'redeliverDeadDeliveries',
        summary: 'Send every dead delivery of the account again (those not superseded by a newer event)',
        tags,
        security,
        params: IdParams,
        body: Type.Object({}, { additionalProperties: false, description: 'An empty object' }),
        response: {
          202: response('How many dead deliveries are pending again', ref(RedeliveredSchema)),
          ...adminProblems([...BODY_STATUSES, 404]),
        },
      },
    },
    async (request, reply) => {
      const { id } = await accountOr404(ctx, (request.params as { id: string }).id);
      return reply.code(202).send({ redelivered: await redeliverDead(ctx, id) });
    },
  );
  methodNotAllowed(app, '/accounts/:id/deliveries/redeliver', ['POST']);

  app.post(
    '/accounts/:id/deliveries/backfill',
    {
      schema: {
        operationId: 'backfillDeliveries',
        summary:
          'After callbacks were off: queue the latest event of each recipient that had one since a given instant',
        description:
          'One delivery per recipient with an event at or after `since`: of its latest event, unless that event ' +
          'already has a pending or delivered delivery (so a second backfill queues nothing). Older pending ' +
          'deliveries of the same recipients are superseded. 409 while the account’s callbacks are off (no ' +
          '`callbackUrl`, or `callbackEnabled` false): turn them back on first.',
        tags,
        security,
        params: IdParams,
        body: ref(BackfillSchema),
        response: {
          202: response('How many deliveries were queued', ref(BackfilledSchema)),
          ...adminProblems([...BODY_STATUSES, 404, 409]),
        },
      },
    },
    async (request, reply) => {
      const { id } = await accountOr404(ctx, (request.params as { id: string }).id);
      // The schema checked the shape; this also refuses what it lets through but no calendar has.
      const since = parseRfc3339((request.body as { since: string }).since);
      if (since === null) {
        throw new ApiError('invalid_request', 'since must be an RFC 3339 date-time', { param: 'since' });
      }
      const queued = await ctx.store.backfillDeliveries(id, since, ctx.now());
      if (queued === null) throw new ApiError('not_found', `no account ${id}`);
      if (queued === 'callbacks-off') {
        throw new ApiError(
          'conflict',
          'the account’s callbacks are off (no callbackUrl, or callbackEnabled false): turn them on, then backfill',
        );
      }
      if (queued > 0) ctx.deliveriesQueued();
      return reply.code(202).send({ queued });
    },
  );
  methodNotAllowed(app, '/accounts/:id/deliveries/backfill', ['POST']);
}
