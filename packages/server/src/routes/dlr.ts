import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { QueryAccount } from '../auth/account-cache.js';
import { authenticate, type Caller, type HeaderSink } from '../auth/authenticate.js';
import type { AppContext } from '../context.js';
import type { DlrFailureCode } from '../domain/errors.js';
import { parseDlrQuery, type RawQuery } from '../domain/query-params.js';
import { type DlrItem, toDlrItem } from '../domain/wire.js';
import { DLR_ITEMS_EXAMPLE } from '../http/examples.js';
import { PATTERNS } from '../http/patterns.js';
import { sendDlrFailure } from '../http/problem.js';
import { methodNotAllowed } from '../http/protocol.js';
import {
  DlrFailureSchema,
  DlrItemSchema,
  dlrFailureExamples,
  type HeaderName,
  PROTOCOL_STATUSES,
  problemResponses,
  RATE_LIMIT_HEADERS,
  ref,
  response,
  SECURITY,
} from '../http/schemas.js';
import { describedOnly } from '../http/validation.js';

const querystring = Type.Object({
  messageid: Type.String({
    description: 'Message id, 1-64 characters of A-Z a-z 0-9 . _ : -',
    pattern: PATTERNS.messageId,
    examples: ['demo-sms-multi'],
  }),
});

/** A failure status of /dlr, with an example of each spec code it answers with. */
const failure = (
  description: string,
  codes: readonly DlrFailureCode[],
  headers: readonly HeaderName[] = [],
  sometimesHeaders: readonly HeaderName[] = [],
) =>
  response(description, ref(DlrFailureSchema), {
    headers,
    sometimesHeaders,
    examples: dlrFailureExamples(codes),
  });

/**
 * The work of `GET /dlr` after routing: the spec's parameter codes, the credential check, the account's switch
 * and quota, then the items. It answers the items or the failure code to send, and throws the credential
 * check's ApiErrors (domain/errors.ts). The route below and the prepared path of `waybill serve` (http/prepared-dlr.ts)
 * both call it, so the two differ only in how the answer is written.
 *
 * It answers without a promise when the credential check and the store can decide at once (a cached account,
 * limits in this process, SQLite): the prepared path then writes the answer in the turn the request arrived,
 * without the promise and microtask of each step. It may throw synchronously as well as reject.
 */
export function queryDlr(
  ctx: AppContext,
  rawQuery: RawQuery,
  caller: Caller,
  headers: HeaderSink,
): DlrAnswer | Promise<DlrAnswer> {
  const query = parseDlrQuery(rawQuery);
  if (!query.ok) return query.code;
  const account = authenticate(ctx, caller, headers, query);
  return account instanceof Promise
    ? account.then((found) => itemsOf(ctx, found, query.messageId))
    : itemsOf(ctx, account, query.messageId);
}

export type DlrAnswer = DlrItem[] | DlrFailureCode;

/** The account's switch and quota, then its items for the id. */
function itemsOf(ctx: AppContext, account: QueryAccount, messageId: string): DlrAnswer | Promise<DlrAnswer> {
  if (!account.dlrQueryEnabled) return 20;
  if (account.balance + account.creditLimit < 0) return 9;
  const now = ctx.store.findDlrNow?.(account.id, messageId);
  if (now !== undefined) return now.map(toDlrItem);
  return ctx.store.findDlr(account.id, messageId).then((rows) => rows.map(toDlrItem));
}

/** `GET /dlr` — the delivery result of one SMS request (spec §4.1, CONTRACT §2). */
export async function dlrRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  app.get(
    '/dlr',
    {
      config: { errorStyle: 'dlr' },
      // The spec's codes 2 and 3 and their order are checked by parseDlrQuery; the schema documents them.
      validatorCompiler: describedOnly,
      schema: {
        operationId: 'getDlr',
        summary: 'Delivery result of one SMS request',
        description:
          'An array of delivery-receipt items (one per recipient, `[]` for an unknown id) on success, or a ' +
          '`{code, descr}` object on failure, checked in the order of docs/errors.md. The credentials are the ' +
          '`key` and `secret` query parameters, and only they: HTTP Basic (`curl -u KEY:SECRET`), which the ' +
          'other query endpoints accept, is not read here, so such a call answers code 2 Missing parameters.',
        tags: ['status query'],
        security: SECURITY.dlr,
        querystring,
        response: {
          200: response(
            'One item per SMS recipient, in the order they were first sent to',
            Type.Array(ref(DlrItemSchema)),
            { headers: RATE_LIMIT_HEADERS, example: DLR_ITEMS_EXAMPLE },
          ),
          400: failure(
            '2 Missing parameters (key, secret or messageid absent or empty; HTTP Basic is not read here), or 3 Invalid parameters (malformed, or given twice)',
            [2, 3],
          ),
          401: failure('4 Invalid credentials: no account has this key, or the secret is wrong', [4]),
          402: failure('9 Quota exceeded: balance + creditLimit < 0', [9], RATE_LIMIT_HEADERS),
          403: failure(
            '5 Unauthorized IP (not on the whitelist), or 20 Dlr search not support',
            [5, 20],
            RATE_LIMIT_HEADERS,
          ),
          429: failure(
            '429 Too many requests: the key is locked out, or the account is over its rate',
            [429],
            ['Retry-After', ...RATE_LIMIT_HEADERS],
          ),
          500: failure(
            '11 System error: storage unavailable (with Retry-After) or an unexpected fault',
            [11],
            [],
            ['Retry-After', ...RATE_LIMIT_HEADERS],
          ),
          ...problemResponses(PROTOCOL_STATUSES),
        },
      },
    },
    async (request, reply) => {
      const outcome = await queryDlr(ctx, request.query as RawQuery, request, reply);
      return typeof outcome === 'number' ? sendDlrFailure(reply, outcome) : outcome;
    },
  );
  methodNotAllowed(app, '/dlr', ['GET'], { errorStyle: 'dlr' });
}
