import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { AppContext } from '../context.js';
import { ApiError } from '../domain/errors.js';
import type { BatchOutcome, ItemError } from '../domain/ingest.js';
import { methodNotAllowed } from '../plugins/protocol.js';
import { accountOr404 } from './admin-accounts.js';
import { checkMessageItem, checkReceiptItem, MessageItemSchema, ReceiptItemSchema } from './ingest-items.js';
import { problemResponses } from './schemas.js';
import { describedOnly } from './validation.js';

export const MAX_BATCH = 1000;

/** Checks every item; returns the normalized items, or throws a 400 naming every bad index. */
function checkBatch<T>(
  body: unknown,
  field: 'messages' | 'receipts',
  check: (item: unknown) => { ok: true; value: T } | { ok: false; detail: string },
): T[] {
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
  const values: T[] = [];
  const errors: ItemError[] = [];
  list.forEach((item, index) => {
    const checked = check(item);
    if (checked.ok) values.push(checked.value);
    else errors.push({ index, detail: checked.detail });
  });
  if (errors.length > 0) throw batchError(errors);
  return values;
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
  app.post(
    '/accounts/:id/messages',
    {
      // Items are checked one by one (routes/ingest-items.ts) so that every bad index is reported.
      validatorCompiler: describedOnly,
      schema: {
        summary: 'Ingest up to 1000 messages (idempotent: a re-sent record is updated)',
        tags,
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
      const items = checkBatch(request.body, 'messages', checkMessageItem);
      return unwrap(await ctx.store.ingestMessages(account.id, items, ctx.now()));
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
      const items = checkBatch(request.body, 'receipts', (item) => checkReceiptItem(item, now));
      return unwrap(await ctx.store.ingestReceipts(account.id, items, now));
    },
  );
  methodNotAllowed(app, '/accounts/:id/receipts', ['POST']);
}
