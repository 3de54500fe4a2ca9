import { parseArgs } from 'node:util';
import { describeErrcode } from '@waybill/client';
import { DELIVERY_STATES } from '../domain/deliveries/delivery.js';
import { isUuid } from '../domain/formats.js';
import { MAX_DELIVERY_LIMIT } from '../domain/query-params.js';
import { parseRfc3339 } from '../domain/wire.js';
import {
  ADMIN_EXIT_HELP,
  ADMIN_FLAGS,
  ADMIN_OPTIONS_HELP,
  AdminApi,
  adminHint,
  adminTarget,
} from './admin-api.js';
import {
  cell,
  parseCommandLine,
  renderTable,
  reportFailure,
  requestOptions,
  usageError,
} from './client-commands.js';
import { EXIT } from './options.js';
import { unknownWord } from './suggest.js';

/**
 * `waybill deliveries`: the callback deliveries of an account, through the running server's operator API
 * (`/admin/v1`, bearer `WAYBILL_ADMIN_TOKEN`). Not the database: the service owns the delivery queue, and a
 * redelivery through it wakes its relay at once (docs/cli.md).
 */

export const DELIVERIES_USAGE = `waybill deliveries list <accountId> [--state S] [--limit N] [--cursor C] [--json]
waybill deliveries show <accountId> <deliveryId> [--json]
waybill deliveries redeliver <accountId> (<deliveryId> | --dead) [--json]
waybill deliveries backfill <accountId> --since TIME [--json]`;

const USAGE = `Usage:
  waybill deliveries list <accountId> [--state STATE] [--limit N] [--cursor CURSOR] [--json]
  waybill deliveries show <accountId> <deliveryId> [--json]
  waybill deliveries redeliver <accountId> <deliveryId> [--json]
  waybill deliveries redeliver <accountId> --dead [--json]
  waybill deliveries backfill <accountId> --since TIME [--json]

The callback deliveries of an account, through the running server's operator API (/admin/v1). The token
is read from $WAYBILL_ADMIN_TOKEN only (never a flag, so it stays out of shell history and ps).

  list         one page of deliveries, newest first; prints the --cursor of the next page when there is one
  show         one delivery with every attempt and the payload it sends
  redeliver    queue a delivery again (pending, a fresh retry schedule, the same webhook-id); with --dead,
               every dead delivery of the account
  backfill     after the account's callbacks were off (a 410 Gone turns them off): queue the latest event of
               each recipient that had one since --since, unless it is already pending or delivered; turn
               the callbacks back on first (docs/callbacks.md)

  --state STATE    only deliveries in this state: ${DELIVERY_STATES.join(', ')}
  --limit N        deliveries per page, 1-${MAX_DELIVERY_LIMIT} (default: 20)
  --cursor CURSOR  the page after this cursor (printed by the previous page)
  --dead           with redeliver: every dead delivery of the account
  --since TIME     with backfill: an RFC 3339 time, e.g. 2026-11-22T10:00:00Z
  --json           print the API's answer as JSON (for scripts)
${ADMIN_OPTIONS_HELP}

${ADMIN_EXIT_HELP}`;

const OPTIONS = {
  ...ADMIN_FLAGS,
  state: { type: 'string' },
  limit: { type: 'string' },
  cursor: { type: 'string' },
  dead: { type: 'boolean', default: false },
  since: { type: 'string' },
} as const;

interface Attempt {
  at: string;
  httpStatus: number | null;
  error: string | null;
  durationMs: number;
}

interface Delivery {
  id: string;
  eventId: string;
  messageId: string;
  to: string;
  state: string;
  attempts: number;
  createdAt: string;
  nextAttemptAt: string | null;
  lastAttempt: Attempt | null;
  payload: Record<string, unknown>;
}

interface DeliveryDetail extends Delivery {
  attemptLog: Attempt[];
}

interface DeliveryPage {
  deliveries: Delivery[];
  nextCursor: string | null;
  hasMore: boolean;
}

type Parsed = ReturnType<typeof parseDeliveriesArgs>;
type Values = Parsed['values'];

export async function deliveriesCommand(args: string[]): Promise<number> {
  const parsed = parseCommandLine(args, parseDeliveriesArgs, USAGE);
  if (typeof parsed === 'number') return parsed;
  const { values, positionals } = parsed;
  const [action, accountId, ...rest] = positionals;
  const plan = planAction(action, accountId, rest, values);
  if (typeof plan === 'string') return usageError(plan, USAGE);

  const target = adminTarget(values, USAGE);
  if (typeof target === 'number') return target;

  try {
    const api = new AdminApi(target.baseUrl, target.token, requestOptions(values).timeoutMs ?? 30_000);
    const account = `/accounts/${encodeURIComponent(plan.accountId)}`;
    switch (plan.action) {
      case 'list': {
        const query = new URLSearchParams();
        if (plan.state !== undefined) query.set('state', plan.state);
        if (plan.cursor !== undefined) query.set('cursor', plan.cursor);
        if (plan.limit !== undefined) query.set('limit', String(plan.limit));
        const search = query.size === 0 ? '' : `?${query}`;
        const page = await api.request<DeliveryPage>('GET', `${account}/deliveries${search}`);
        print(values.json, page, () => renderList(page, plan));
        return EXIT.ok;
      }
      case 'show': {
        const detail = await api.request<DeliveryDetail>(
          'GET',
          `${account}/deliveries/${encodeURIComponent(plan.deliveryId)}`,
        );
        print(values.json, detail, () => renderDetail(detail));
        return EXIT.ok;
      }
      case 'redeliver': {
        const delivery = await api.request<Delivery>(
          'POST',
          `${account}/deliveries/${encodeURIComponent(plan.deliveryId)}/redeliver`,
          {},
        );
        print(values.json, delivery, () => {
          const due =
            delivery.nextAttemptAt === null ? '' : `; next attempt due at ${delivery.nextAttemptAt}`;
          return `Delivery ${cell(delivery.id)} is ${cell(delivery.state)} again${due}.\n`;
        });
        return EXIT.ok;
      }
      case 'redeliver-dead': {
        const result = await api.request<{ redelivered: number }>(
          'POST',
          `${account}/deliveries/redeliver`,
          {},
        );
        print(values.json, result, () =>
          result.redelivered === 0
            ? 'No dead deliveries to send again.\n'
            : `Queued ${result.redelivered} dead deliver${result.redelivered === 1 ? 'y' : 'ies'} again.\n`,
        );
        return EXIT.ok;
      }
      case 'backfill': {
        const result = await api.request<{ queued: number }>('POST', `${account}/deliveries/backfill`, {
          since: plan.since,
        });
        print(values.json, result, () =>
          result.queued === 0
            ? 'Nothing to backfill: every recipient with an event since then has its latest state queued or delivered.\n'
            : `Queued ${result.queued} deliver${result.queued === 1 ? 'y' : 'ies'}: the latest state of each recipient.\n`,
        );
        return EXIT.ok;
      }
    }
  } catch (err) {
    const code = reportFailure(err);
    adminHint(err);
    return code;
  }
}

function parseDeliveriesArgs(args: string[]) {
  return parseArgs({ args, options: OPTIONS, allowPositionals: true, strict: true });
}

type Plan =
  | { action: 'list'; accountId: string; state?: string; limit?: number; cursor?: string }
  | { action: 'show' | 'redeliver'; accountId: string; deliveryId: string }
  | { action: 'redeliver-dead'; accountId: string }
  | { action: 'backfill'; accountId: string; since: string };

/** Works out what the command line asks for; a string is what is wrong with it. */
function planAction(
  action: string | undefined,
  accountId: string | undefined,
  rest: string[],
  values: Values,
): Plan | string {
  if (action === undefined) return 'say what to do: list, show, redeliver or backfill';
  const actions = ['list', 'show', 'redeliver', 'backfill'];
  if (!actions.includes(action)) return unknownWord('deliveries action', action, actions);
  if (accountId === undefined) return `deliveries ${action} needs an account id`;
  if (!isUuid(accountId)) return `"${accountId}" is not an account id (a UUID)`;
  const listOnly = (['state', 'limit', 'cursor'] as const).filter((name) => values[name] !== undefined);
  if (action !== 'list' && listOnly.length > 0)
    return `--${listOnly.join(', --')} only ${listOnly.length === 1 ? 'applies' : 'apply'} to list`;
  if (action !== 'redeliver' && values.dead) return '--dead only applies to redeliver';
  if (action !== 'backfill' && values.since !== undefined) return '--since only applies to backfill';

  if (action === 'backfill') {
    if (rest.length > 0) return `unexpected argument: ${rest[0]}`;
    const since = values.since?.trim();
    if (!since) return 'backfill needs --since TIME (RFC 3339, e.g. 2026-11-22T10:00:00Z)';
    if (parseRfc3339(since) === null) return `--since must be an RFC 3339 time, got ${JSON.stringify(since)}`;
    return { action, accountId, since };
  }

  if (action === 'list') {
    if (rest.length > 0) return `unexpected argument: ${rest[0]}`;
    const plan: Plan = { action, accountId };
    if (values.state !== undefined) {
      if (!(DELIVERY_STATES as readonly string[]).includes(values.state))
        return `--state must be one of ${DELIVERY_STATES.join(', ')}`;
      plan.state = values.state;
    }
    if (values.limit !== undefined) {
      const limit = Number(values.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > MAX_DELIVERY_LIMIT)
        return `--limit must be a whole number from 1 to ${MAX_DELIVERY_LIMIT}`;
      plan.limit = limit;
    }
    if (values.cursor !== undefined) {
      if (values.cursor.trim() === '') return '--cursor needs a cursor';
      plan.cursor = values.cursor.trim();
    }
    return plan;
  }
  const [deliveryId, ...extra] = rest;
  if (extra.length > 0) return `unexpected argument: ${extra[0]}`;
  if (action === 'redeliver' && values.dead) {
    return deliveryId === undefined
      ? { action: 'redeliver-dead', accountId }
      : 'give a delivery id or --dead, not both';
  }
  if (deliveryId === undefined)
    return action === 'redeliver' ? 'redeliver needs a delivery id, or --dead' : 'show needs a delivery id';
  return { action: action as 'show' | 'redeliver', accountId, deliveryId };
}

function print(json: boolean, value: unknown, render: () => string): void {
  process.stdout.write(json ? `${JSON.stringify(value, null, 2)}\n` : render());
}

const lastAttemptText = (a: Attempt | null): string => {
  if (a === null) return '-';
  const outcome = a.httpStatus === null ? 'no answer' : `HTTP ${a.httpStatus}`;
  const text = a.error === null ? outcome : `${outcome}: ${a.error}`;
  return text.length > 60 ? `${text.slice(0, 59)}…` : text;
};

function renderList(page: DeliveryPage, plan: Extract<Plan, { action: 'list' }>): string {
  const filter = plan.state === undefined ? '' : ` ${plan.state}`;
  let out =
    page.deliveries.length === 0
      ? `No${filter} deliveries${plan.cursor === undefined ? '' : ' after this cursor'}.\n`
      : renderTable(
          [
            'ID',
            'STATE',
            'MESSAGEID',
            'TO',
            'ATTEMPTS',
            'CREATED (UTC)',
            'NEXT ATTEMPT (UTC)',
            'LAST ATTEMPT',
          ],
          page.deliveries.map((d) => [
            d.id,
            d.state,
            d.messageId,
            d.to,
            String(d.attempts),
            d.createdAt,
            d.nextAttemptAt ?? '-',
            lastAttemptText(d.lastAttempt),
          ]),
        );
  if (page.hasMore && page.nextCursor !== null) {
    const state = plan.state === undefined ? '' : ` --state ${plan.state}`;
    const limit = plan.limit === undefined ? '' : ` --limit ${plan.limit}`;
    out += `\nOlder deliveries: waybill deliveries list ${plan.accountId}${state}${limit} --cursor ${page.nextCursor}\n`;
  }
  return out;
}

function renderDetail(d: DeliveryDetail): string {
  const p = d.payload;
  const str = (v: unknown) => (typeof v === 'string' || typeof v === 'number' ? String(v) : undefined);
  const code = str(p.drStatuscode);
  const errcode = str(p.drErrcode);
  const receipt =
    code === undefined
      ? '-'
      : `${code}, errcode ${errcode ?? '0'} ${describeErrcode(errcode ?? '0') ?? '(unlisted code)'}, drTime ${str(p.drTime) ?? '-'}`;
  const fields: [string, string][] = [
    ['Delivery', d.id],
    ['Message', `${d.messageId} to ${d.to}`],
    ['State', d.state],
    ['Attempts', String(d.attempts)],
    ['Created', d.createdAt],
    ['Next attempt', d.nextAttemptAt ?? '-'],
    ['Receipt', receipt],
    ['Payload', JSON.stringify(d.payload)],
  ];
  const width = Math.max(...fields.map(([name]) => name.length));
  const head = fields.map(([name, value]) => `${`${name}:`.padEnd(width + 2)}${cell(value)}\n`).join('');
  if (d.attemptLog.length === 0) return `${head}\nNo attempts yet.\n`;
  const log = renderTable(
    ['#', 'AT (UTC)', 'HTTP', 'MS', 'ERROR'],
    d.attemptLog.map((a, i) => [
      String(i + 1),
      a.at,
      a.httpStatus === null ? '-' : String(a.httpStatus),
      String(a.durationMs),
      a.error ?? '',
    ]),
  );
  return `${head}\nAttempts:\n${log}`;
}
