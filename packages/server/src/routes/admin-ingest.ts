import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { AppContext } from '../context.js';
import { ApiError } from '../domain/errors.js';
import type { BatchOutcome, ItemError } from '../domain/ingest.js';
import { methodNotAllowed } from '../plugins/protocol.js';
import type { IngestOptions } from '../store/store.js';
import { accountOr404 } from './admin-accounts.js';
import { checkMessageItem, checkReceiptItem, MessageItemSchema, ReceiptItemSchema } from './ingest-items.js';
import { problemResponses } from './schemas.js';
import { describedOnly } from './validation.js';

export const MAX_BATCH = 1000;

interface CheckedBatch<T> {
  /** The well-formed items, each with its index in the request. */
  valid: { index: number; value: T }[];
  errors: ItemError[];
}

/** Checks the body and every item; throws a 400 when the body itself is wrong. */
function checkBatch<T>(
  body: unknown,
  field: 'messages' | 'receipts',
  check: (item: unknown) => { ok: true; value: T } | { ok: false; detail: string },
): CheckedBatch<T> {
  const list = (body as Record<string, unknown> | null)?.[field];
  if (typeof body !== 'object' || body === null || Array.isArray(body) || !Array.isArray(list)) {
    throw new ApiError('invalid_request', `the body must be an object {"${field}": [...]}`);
  }
  const unknown = Object.keys(body).filter((k) => k !== field);
  if (unknown.length > 0)
    throw new ApiError('invalid_request', `unknown field ${unknown.join(', ')} in the body`);
  if (list.length < 1 || list.length > MAX_BATCH) {
    throw new ApiError('invalid_request', `${field} must hold 1 to ${MAX_BATCH} items, got ${list.length}`);
  }
  const valid: { index: number; value: T }[] = [];
  const errors: ItemError[] = [];
  list.forEach((item, index) => {
    const checked = check(item);
    if (checked.ok) valid.push({ index, value: checked.value });
    else errors.push({ index, detail: checked.detail });
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
        if (original) errors.push({ index: original.index, detail: e.detail });
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

/** Batch ingest of messages and receipts (CONTRACT §5): validated whole, applied in order, all or nothing. */
export async function adminIngestRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  const tags = ['operator'];
  const security = [{ adminToken: [] }];
  app.post(
    '/accounts/:id/messages',
    {
      // Items are checked one by one (routes/ingest-items.ts) so that every bad index is reported.
      validatorCompiler: describedOnly,
      schema: {
        summary: 'Ingest up to 1000 messages (idempotent: a re-sent record is updated)',
        tags,
        security,
        params: Type.Object({ id: Type.String() }),
        body: Type.Object({ messages: Type.Array(MessageItemSchema, { minItems: 1, maxItems: MAX_BATCH }) }),
        response: {
          200: Type.Object({ accepted: Type.Integer() }),
          ...problemResponses(400, 401, 404, 413),
        },
      },
    },
    async (request) => {
      const account = await accountOr404(ctx, (request.params as { id: string }).id);
      const batch = checkBatch(request.body, 'messages', checkMessageItem);
      const now = ctx.now();
      return applyBatch(batch, (items, options) => ctx.store.ingestMessages(account.id, items, now, options));
    },
  );
  methodNotAllowed(app, '/accounts/:id/messages', ['POST']);

  app.post(
    '/accounts/:id/receipts',
    {
      validatorCompiler: describedOnly,
      schema: {
        summary: 'Ingest up to 1000 delivery receipts, applied under the precedence rules',
        tags,
        security,
        params: Type.Object({ id: Type.String() }),
        body: Type.Object({ receipts: Type.Array(ReceiptItemSchema, { minItems: 1, maxItems: MAX_BATCH }) }),
        response: {
          200: Type.Object({
            applied: Type.Integer(),
            ignored: Type.Integer(),
            unknown: Type.Array(
              Type.Object({ messageId: Type.String(), to: Type.Union([Type.String(), Type.Null()]) }),
            ),
          }),
          ...problemResponses(400, 401, 404, 413),
        },
      },
    },
    async (request) => {
      const account = await accountOr404(ctx, (request.params as { id: string }).id);
      const now = ctx.now();
      const batch = checkBatch(request.body, 'receipts', (item) => checkReceiptItem(item, now));
      return applyBatch(batch, (items, options) => ctx.store.ingestReceipts(account.id, items, now, options));
    },
  );
  methodNotAllowed(app, '/accounts/:id/receipts', ['POST']);
}
