import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../context.js';
import { ApiError } from '../domain/errors.js';
import { isUuid } from '../domain/formats.js';
import {
  digestsMatch,
  INTAKE_TOKEN,
  type IntakeRouteRecord,
  intakeTokenDigest,
  type RouteKind,
} from '../domain/intake/route.js';
import type { Translation } from '../domain/intake/translate.js';
import { StoreUnavailableError } from '../store/store.js';
import { checkReceiptItem } from './ingest-items.js';
import type { IntakeGroups } from './intake-groups.js';
import { sendApiError } from './problem.js';

/**
 * What the HTTP adapters of CONTRACT §12 share: reading a gateway's parameters, finding the route of its token,
 * and handing a translated receipt to the store — by carrier id (operations/intake-receipt.ts), or named
 * directly through the same store call as the operator API's receipts (§5) — so that
 * precedence, events, parking and callbacks are those of every other receipt. Gateways read plain text and
 * retry anything but a 2xx, so every answer here is `text/plain` with the reason in one line.
 */

/** The longest reason a refusal gives: it quotes what arrived, which may be huge. */
const MAX_REASON = 500;

/**
 * A reason as one line: it quotes parameters as they arrived, so line breaks and other control characters are
 * written as escapes (`\n`, `\x00`), and a reason past {@link MAX_REASON} characters is cut.
 */
function oneLine(reason: string): string {
  const line = reason.replace(/[\p{Cc}\u2028\u2029]/gu, (c) =>
    c === '\n' ? '\\n' : `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`,
  );
  if (line.length <= MAX_REASON) return line;
  // Never half of a surrogate pair at the cut.
  return `${line.slice(0, MAX_REASON - 1).replace(/[\uD800-\uDBFF]$/, '')}…`;
}

/** A refusal of an adapter: its status and the line of text the gateway gets (and logs). */
export class IntakeRefusal extends Error {
  override readonly name = 'IntakeRefusal';
  readonly status: number;
  constructor(status: 400 | 401 | 403, reason: string) {
    super(oneLine(reason));
    this.status = status;
  }
}

/** Seconds a gateway is asked to wait while the database is unavailable (its own retry decides). */
const UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

/** Gateways POST forms; each field becomes a parameter like one of the query string. */
export function acceptForms(app: FastifyInstance): void {
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', bodyLimit: 64 * 1024 },
    (_request, body, done) => {
      // No prototype: a field named `toString` or `__proto__` is a field like any other, not Object's.
      const fields: Record<string, string[]> = Object.create(null);
      for (const [key, value] of new URLSearchParams(body as string)) {
        fields[key] = [...(fields[key] ?? []), value];
      }
      done(null, fields);
    },
  );
}

/** Answers adapter refusals and database outages as text; protocol refusals (405, 415…) keep problem bodies. */
export function registerIntakeErrors(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof IntakeRefusal) return plain(reply.code(error.status), error.message);
    if (error instanceof StoreUnavailableError) {
      request.log.warn({ err: error }, 'database unavailable');
      reply.header('retry-after', String(UNAVAILABLE_RETRY_AFTER_SECONDS));
      return plain(reply.code(503), 'the database is unavailable; retry shortly');
    }
    if (error instanceof ApiError) return sendApiError(request, reply, error);
    if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
      return plain(
        reply.code(415),
        'send parameters in the query string or as application/x-www-form-urlencoded',
      );
    }
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return plain(reply.code(413), 'the body is too large');
    if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
      return plain(reply.code(400), 'the request is malformed');
    }
    request.log.error({ err: error }, 'unexpected failure');
    return plain(reply.code(500), 'internal error; the request id identifies it in the log');
  });
}

export const plain = (reply: FastifyReply, text: string) =>
  reply.type('text/plain; charset=utf-8').send(text);

/**
 * The request's parameters: the query string, then (POST) the form body. A parameter given twice with
 * different values is refused: which one the gateway meant cannot be told.
 */
export function readParams(request: FastifyRequest): Record<string, string> {
  // No prototype: a parameter named `constructor` is unknown (ignored), not "given more than once".
  const params: Record<string, string> = Object.create(null);
  const add = (source: unknown) => {
    if (typeof source !== 'object' || source === null) return;
    for (const [key, raw] of Object.entries(source)) {
      const values = (Array.isArray(raw) ? raw : [raw]).map(String);
      for (const value of values) {
        if (params[key] !== undefined && params[key] !== value) {
          throw new IntakeRefusal(400, `the parameter ${key} is given more than once`);
        }
        params[key] = value;
      }
    }
  };
  add(request.query);
  add(request.body);
  return params;
}

/**
 * The route of the `token` parameter. A missing or unknown token, or the token of a route of another kind,
 * is 401; a disabled route's token is 403 (the token is right, the route accepts nothing).
 */
export async function routeOfToken(
  ctx: AppContext,
  token: string | undefined,
  kind: RouteKind,
): Promise<IntakeRouteRecord> {
  if (token === undefined || token === '') throw new IntakeRefusal(401, 'the token parameter is missing');
  if (!INTAKE_TOKEN.test(token)) throw new IntakeRefusal(401, 'the token is not a valid intake token');
  const digest = intakeTokenDigest(ctx.pepper, token);
  const route = await ctx.store.intakeRouteByTokenDigest(digest);
  if (
    !route ||
    route.tokenDigest === null ||
    !digestsMatch(route.tokenDigest, digest) ||
    route.kind !== kind
  ) {
    throw new IntakeRefusal(401, `the token is not the token of a ${kind} route`);
  }
  if (!route.enabled) throw new IntakeRefusal(403, `the route ${route.name} is disabled`);
  return route;
}

/** How many unreadable receipts are kept per route (CONTRACT §12). */
export const KEEP_GARBLED = 1000;

/** What arrived, as the query string of its parameters, without the token; at most 4 KiB. */
function garbledText(params: Record<string, string>): string {
  const { token: _token, ...rest } = params;
  const text = new URLSearchParams(rest).toString();
  return text.length > 4096 ? `${text.slice(0, 4095)}…` : text;
}

/**
 * Applies a translated receipt from a route and counts it on the route: `matched` when a recipient held it
 * (applied, or ignored under precedence), `parked` when none did yet. The recipient is named directly
 * (`account`, `messageid`, `to`) when any of those parameters is given; otherwise by the carrier id the route
 * gave it (`carrierParam`: Kannel's `carrierId`, Jasmin's `id`; CONTRACT §12 "Correlation"). An unreadable
 * receipt is counted `garbled` and refused (400) with the reason; a recipient of an account the route may not
 * touch is refused (403) with nothing written. Receipts are committed through `groups` (http/intake-groups.ts):
 * with those of other requests arriving together, and answered once committed.
 */
export async function applyIntakeReceipt(
  ctx: AppContext,
  groups: IntakeGroups,
  route: IntakeRouteRecord,
  translated: Translation,
  params: Record<string, string>,
  carrierParam: string,
): Promise<'matched' | 'parked' | 'ignored'> {
  if (translated.kind === 'garbled') {
    // Kept for the operator before the refusal: if it cannot be kept (503), the gateway sends it again.
    await ctx.store.recordGarbledIntake(
      route.name,
      { at: ctx.now(), text: garbledText(params), pdu: null },
      KEEP_GARBLED,
    );
    ctx.metrics.countIntake(route.name, 'garbled');
    throw new IntakeRefusal(400, `the receipt cannot be read: ${translated.reason}`);
  }
  if (translated.kind === 'ignored') {
    ctx.metrics.countIntake(route.name, 'ignored');
    return 'ignored';
  }
  const { account, messageid, to } = params;
  if (account === undefined && messageid === undefined && to === undefined) {
    const given = params[carrierParam];
    if (given === undefined) {
      throw new IntakeRefusal(
        400,
        `the recipient is not named: give account, messageid and to, or ${carrierParam}`,
      );
    }
    // The translation reads the carrier id from the parameter first; anything else means it was not one.
    const { carrierId } = translated;
    if (carrierId === null || carrierId !== given.trim()) {
      throw new IntakeRefusal(400, `the parameter ${carrierParam} must be 1-64 printable ASCII characters`);
    }
    const outcome = await groups.byCarrier(route, { ...translated, carrierId });
    if (outcome === 'forbidden') {
      throw new IntakeRefusal(
        403,
        `the route ${route.name} may not touch the account holding ${carrierParam} ${carrierId}`,
      );
    }
    return outcome;
  }
  const missing = (['account', 'messageid', 'to'] as const).filter((p) => params[p] === undefined);
  if (missing.length > 0) throw new IntakeRefusal(400, `the parameter ${missing.join(' and ')} is missing`);
  const accountId = String(account).toLowerCase();
  if (route.accounts.length > 0 && !route.accounts.includes(accountId)) {
    throw new IntakeRefusal(403, `the route ${route.name} may not touch account ${account}`);
  }
  if (!isUuid(accountId) || !(await ctx.store.getAccount(accountId))) {
    throw new IntakeRefusal(400, `no account ${account}`);
  }
  const now = ctx.now();
  // The operator API's own item check: one rule for what a receipt may hold, wherever it comes from.
  const checked = checkReceiptItem(
    {
      messageId: messageid,
      to,
      drStatuscode: translated.drStatuscode,
      drErrcode: translated.drErrcode,
      drTime: translated.drTime.toISOString(),
    },
    now,
  );
  if (!checked.ok) throw new IntakeRefusal(400, paramNames(checked.detail));
  const outcome = await groups.direct(accountId, checked.value, now);
  if (!outcome.ok) throw new IntakeRefusal(400, outcome.detail);
  ctx.metrics.countIntake(route.name, outcome.result);
  return outcome.result;
}

/** The item check names the operator API's fields; a gateway knows them by its parameters. */
const paramNames = (detail: string) => detail.replace(/^messageId\b/, 'messageid');
