import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { AppContext } from '../context.js';
import { parkedCutoff } from '../domain/deliveries/parking.js';
import { ApiError } from '../domain/errors.js';
import type { BatchOutcome, ItemError } from '../domain/ingest/precedence.js';
import { accountOr404, IdParams } from '../http/accounts.js';
import { MESSAGE_ITEM_EXAMPLE, RECEIPT_ITEM_EXAMPLE } from '../http/examples.js';
import {
  checkMessageItem,
  checkReceiptItem,
  MessageItemSchema,
  ReceiptItemSchema,
} from '../http/ingest-items.js';
import { PATTERNS } from '../http/patterns.js';
import { methodNotAllowed } from '../http/protocol.js';
import { adminProblems, BODY_STATUSES, type NamedSchema, ref, response, SECURITY } from '../http/schemas.js';
import { describedOnly } from '../http/validation.js';
import type { IngestOptions } from '../store/store.js';

export const MAX_BATCH = 1000;

const MessageBatchSchema = Type.Object(
  { messages: Type.Array(ref(MessageItemSchema), { minItems: 1, maxItems: MAX_BATCH }) },
  {
    $id: 'MessageBatch',
    additionalProperties: false,
    description: '1 to 1000 messages, applied in order',
    examples: [{ messages: [MESSAGE_ITEM_EXAMPLE] }],
  },
);
const MessagesAcceptedSchema = Type.Object(
  { accepted: Type.Integer({ minimum: 1, description: 'Items written' }) },
  { $id: 'MessagesAccepted', additionalProperties: false, examples: [{ accepted: 1 }] },
);
const ReceiptBatchSchema = Type.Object(
  { receipts: Type.Array(ref(ReceiptItemSchema), { minItems: 1, maxItems: MAX_BATCH }) },
  {
    $id: 'ReceiptBatch',
    additionalProperties: false,
    description: '1 to 1000 receipts, applied in order',
    examples: [{ receipts: [RECEIPT_ITEM_EXAMPLE] }],
  },
);
const ReceiptsAppliedSchema = Type.Object(
  {
    applied: Type.Integer({ description: 'Receipts that changed a recipient (each recorded an event)' }),
    ignored: Type.Integer({ description: 'Receipts that changed nothing under the precedence rules' }),
    unknown: Type.Array(
      Type.Object(
        {
          messageId: Type.String({ pattern: PATTERNS.messageId }),
          to: Type.Union([Type.String({ pattern: PATTERNS.phone }), Type.Null()]),
        },
        { additionalProperties: false },
      ),
      { description: 'Receipts with no outbound SMS recipient yet: parked until it arrives' },
    ),
  },
  {
    $id: 'ReceiptsApplied',
    additionalProperties: false,
    examples: [{ applied: 1, ignored: 0, unknown: [{ messageId: 'order-1235', to: null }] }],
  },
);

/** The named schemas of the ingest routes, registered in the operator API's scope. */
export const INGEST_SCHEMAS: readonly NamedSchema[] = [
  MessageItemSchema,
  MessageBatchSchema,
  MessagesAcceptedSchema,
  ReceiptItemSchema,
  ReceiptBatchSchema,
  ReceiptsAppliedSchema,
];

interface CheckedBatch<T> {
  /** The well-formed items, each with its index in the request. */
  valid: { index: number; value: T }[];
  errors: ItemError[];
}

/** Checks the body and every item; throws a 400 when the body itself is wrong. */
function checkBatch<T>(
  body: unknown,
  field: 'messages' | 'receipts',
  check: (item: unknown) => { ok: true; value: T } | { ok: false; detail: string; param?: string },
): CheckedBatch<T> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ApiError('invalid_request', `the body must be an object {"${field}": [...]}`);
  }
  const unknown = Object.keys(body).filter((k) => k !== field);
  if (unknown.length > 0) {
    throw new ApiError(
      'invalid_request',
      `unknown field ${unknown.map((k) => `"${k}"`).join(', ')} in the body`,
      {
        param: unknown.length === 1 ? unknown[0] : undefined,
      },
    );
  }
  const list = (body as Record<string, unknown>)[field];
  if (!Array.isArray(list)) {
    throw new ApiError('invalid_request', `the body must be an object {"${field}": [...]}`, { param: field });
  }
  if (list.length < 1 || list.length > MAX_BATCH) {
    throw new ApiError('invalid_request', `${field} must hold 1 to ${MAX_BATCH} items, got ${list.length}`, {
      param: field,
    });
  }
  const valid: { index: number; value: T }[] = [];
  const errors: ItemError[] = [];
  list.forEach((item, index) => {
    const checked = check(item);
    if (checked.ok) valid.push({ index, value: checked.value });
    else
      errors.push({
        index,
        detail: checked.detail,
        ...(checked.param === undefined ? {} : { param: checked.param }),
      });
  });
  return { valid, errors };
}

/**
 * Applies a checked batch through the store. When some items are malformed, the well-formed ones still go
 * through a dry run, so that the answer names every bad item — malformed or in conflict with the stored
 * state — in one round trip, and nothing is written.
 */
async function applyBatch<T, R>(
  batch: CheckedBatch<T>,
  apply: (items: T[], options: IngestOptions) => Promise<BatchOutcome<R>>,
): Promise<R> {
  const items = batch.valid.map((v) => v.value);
  if (batch.errors.length === 0) return unwrap(await apply(items, {}));
  const errors = [...batch.errors];
  if (items.length > 0) {
    const dryRun = await apply(items, { dryRun: true });
    if (!dryRun.ok) {
      for (const e of dryRun.errors) {
        const original = batch.valid[e.index];
        if (original) errors.push({ ...e, index: original.index });
      }
    }
  }
  errors.sort((a, b) => a.index - b.index);
  throw batchError(errors);
}

const batchError = (errors: ItemError[]) =>
  new ApiError('invalid_request', `${errors.length} item(s) are invalid; nothing was written`, {
    extra: { errors },
  });

function unwrap<T>(outcome: BatchOutcome<T>): T {
  if (!outcome.ok) throw batchError(outcome.errors);
  return outcome.value;
}

/** Counts the items of a batch refused as a whole (400), then lets the refusal through. */
const countRejected =
  (ctx: AppContext, kind: 'messages' | 'receipts', batch: CheckedBatch<unknown>) =>
  (error: unknown): never => {
    if (error instanceof ApiError && error.problem === 'invalid_request') {
      ctx.metrics.ingestItems.inc({ kind, outcome: 'rejected' }, batch.valid.length + batch.errors.length);
    }
    throw error;
  };

/** Batch ingest of messages and receipts (CONTRACT §5): validated whole, applied in order, all or nothing. */
export async function adminIngestRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  const tags = ['operator'];
  const security = SECURITY.admin;
  app.post(
    '/accounts/:id/messages',
    {
      // Items are checked one by one (routes/ingest-items.ts) so that every bad index is reported.
      validatorCompiler: describedOnly,
      schema: {
        operationId: 'ingestMessages',
        summary: 'Ingest up to 1000 messages (idempotent: a re-sent record is updated)',
        tags,
        security,
        params: IdParams,
        body: ref(MessageBatchSchema),
        response: {
          200: response('Every item was written', ref(MessagesAcceptedSchema)),
          ...adminProblems([...BODY_STATUSES, 404]),
        },
      },
    },
    async (request) => {
      const account = await accountOr404(ctx, (request.params as { id: string }).id);
      const batch = checkBatch(request.body, 'messages', checkMessageItem);
      const now = ctx.now();
      // Parked receipts older than the park time are expired, even before the relay's sweep drops them.
      const parkedSince = parkedCutoff(now, ctx.config.receiptParkSeconds);
      const result = await applyBatch(batch, (items, options) =>
        ctx.store.ingestMessages(account.id, items, now, { ...options, parkedSince }),
      ).catch(countRejected(ctx, 'messages', batch));
      ctx.metrics.ingestItems.inc({ kind: 'messages', outcome: 'accepted' }, result.accepted);
      if (result.events > 0) {
        ctx.metrics.receiptEvents.inc(result.events);
        ctx.deliveriesQueued();
      }
      return { accepted: result.accepted };
    },
  );
  methodNotAllowed(app, '/accounts/:id/messages', ['POST']);

  app.post(
    '/accounts/:id/receipts',
    {
      validatorCompiler: describedOnly,
      schema: {
        operationId: 'ingestReceipts',
        summary: 'Ingest up to 1000 delivery receipts, applied under the precedence rules',
        tags,
        security,
        params: IdParams,
        body: ref(ReceiptBatchSchema),
        response: {
          200: response('Every item was taken into account', ref(ReceiptsAppliedSchema)),
          ...adminProblems([...BODY_STATUSES, 404]),
        },
      },
    },
    async (request) => {
      const account = await accountOr404(ctx, (request.params as { id: string }).id);
      const now = ctx.now();
      const batch = checkBatch(request.body, 'receipts', (item) => checkReceiptItem(item, now));
      const result = await applyBatch(batch, (items, options) =>
        ctx.store.ingestReceipts(account.id, items, now, options),
      ).catch(countRejected(ctx, 'receipts', batch));
      const counted = ctx.metrics.ingestItems;
      counted.inc({ kind: 'receipts', outcome: 'applied' }, result.applied);
      counted.inc({ kind: 'receipts', outcome: 'ignored' }, result.ignored);
      counted.inc({ kind: 'receipts', outcome: 'unknown' }, result.unknown.length);
      if (result.applied > 0) {
        ctx.metrics.receiptEvents.inc(result.applied);
        ctx.deliveriesQueued();
      }
      return result;
    },
  );
  methodNotAllowed(app, '/accounts/:id/receipts', ['POST']);
}
