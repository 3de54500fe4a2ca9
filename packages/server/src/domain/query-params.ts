import { DELIVERY_STATES, type DeliveryState } from './deliveries/delivery.js';
import {
  channelUserIdRule,
  isCampaignId,
  isChannelUserId,
  isCredential,
  isMessageId,
  isUuid,
  parseChannel,
} from './formats.js';
import type { Channel } from './vocabulary.js';

/**
 * Query parameters as the HTTP layer parses them: a name given twice arrives as an array. The query endpoints
 * parse by hand rather than by schema because their rules depend on the mode and on the spec's error codes.
 */
export type RawQuery = Readonly<Record<string, string | string[] | undefined>>;

/** A failure names the one parameter at fault in `param`, when there is one (`detail` always does). */
export type Parsed<T> = { ok: true; value: T } | { ok: false; detail: string; param?: string };

/** The spec's status-query parameters; code 2 (missing or empty) wins over code 3 (malformed or repeated). */
export function parseDlrQuery(
  query: RawQuery,
): { ok: true; key: string; secret: string; messageId: string } | { ok: false; code: 2 | 3; detail: string } {
  const names = ['key', 'secret', 'messageid'] as const;
  const missing = names.filter((n) => query[n] === undefined || query[n] === '');
  if (missing.length > 0) return { ok: false, code: 2, detail: `missing ${missing.join(', ')}` };
  const repeated = names.filter((n) => Array.isArray(query[n]));
  if (repeated.length > 0)
    return { ok: false, code: 3, detail: `${repeated.join(', ')} given more than once` };
  const key = query.key as string;
  const secret = query.secret as string;
  const messageId = query.messageid as string;
  if (!isCredential(key)) return { ok: false, code: 3, detail: 'key must be 8 alphanumeric characters' };
  if (!isCredential(secret))
    return { ok: false, code: 3, detail: 'secret must be 8 alphanumeric characters' };
  if (!isMessageId(messageId)) {
    return { ok: false, code: 3, detail: 'messageid must be 1-64 characters of A-Z a-z 0-9 . _ : -' };
  }
  return { ok: true, key, secret, messageId };
}

export const MAX_IDS = 20;
export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;

export type MessagesQuery =
  | { mode: 'ids'; ids: string[]; campaignId: string | null }
  | {
      mode: 'history';
      channel: Channel | null;
      channelUserId: string | null;
      contactId: string | null;
      campaignId: string | null;
      size: number;
      cursor: string | null;
    };

function single(query: RawQuery, name: string): Parsed<string | undefined> {
  const value = query[name];
  if (Array.isArray(value)) return { ok: false, detail: `${name} must be given at most once`, param: name };
  return { ok: true, value };
}

/**
 * The contact-message query (CONTRACT §3) and its successor (§4, `withCampaign`). In Mode 1 the Mode 2
 * parameters are ignored and not validated. Cursor signatures are checked later, once the binding is known.
 */
export function parseMessagesQuery(query: RawQuery, withCampaign: boolean): Parsed<MessagesQuery> {
  let campaignId: string | null = null;
  if (withCampaign) {
    const c = single(query, 'campaignId');
    if (!c.ok) return c;
    if (c.value !== undefined) {
      if (!isCampaignId(c.value)) {
        return {
          ok: false,
          detail: 'campaignId must be 1-64 characters of A-Z a-z 0-9 . _ : -',
          param: 'campaignId',
        };
      }
      campaignId = c.value;
    }
  }

  const idsParam = single(query, 'messageIds');
  if (!idsParam.ok) return idsParam;
  if (idsParam.value !== undefined) {
    const ids = [
      ...new Set(
        idsParam.value
          .split(',')
          .map((s) => s.trim())
          .filter((s) => s !== ''),
      ),
    ];
    if (ids.length === 0) {
      return { ok: false, detail: 'messageIds must name at least one message id', param: 'messageIds' };
    }
    if (ids.length > MAX_IDS) {
      return {
        ok: false,
        detail: `messageIds holds ${ids.length} ids; at most ${MAX_IDS} are allowed`,
        param: 'messageIds',
      };
    }
    const bad = ids.find((id) => !isMessageId(id));
    if (bad !== undefined) {
      return {
        ok: false,
        detail: `messageIds: "${bad.slice(0, 64)}" is not a message id (1-64 characters of A-Z a-z 0-9 . _ : -)`,
        param: 'messageIds',
      };
    }
    return { ok: true, value: { mode: 'ids', ids, campaignId } };
  }

  const fields: Record<'channel' | 'channelUserId' | 'contactId' | 'size' | 'cursor', string | undefined> = {
    channel: undefined,
    channelUserId: undefined,
    contactId: undefined,
    size: undefined,
    cursor: undefined,
  };
  for (const name of Object.keys(fields) as (keyof typeof fields)[]) {
    const v = single(query, name);
    if (!v.ok) return v;
    fields[name] = v.value;
  }

  let channel: Channel | null = null;
  if (fields.channel !== undefined) {
    channel = parseChannel(fields.channel);
    if (!channel) {
      return {
        ok: false,
        detail: 'channel must be one of WHATSAPP, APPLEMB, VIBER, SMS, TELEGRAM, RBM',
        param: 'channel',
      };
    }
  }
  const hasUser = fields.channelUserId !== undefined;
  const hasContact = fields.contactId !== undefined;
  if (hasUser && hasContact)
    return { ok: false, detail: 'give exactly one of channelUserId and contactId, not both' };
  const campaignOnly = campaignId !== null && !hasUser && !hasContact;
  if (!campaignOnly) {
    if (!hasUser && !hasContact) {
      return {
        ok: false,
        detail: withCampaign
          ? 'give messageIds, or exactly one of channelUserId and contactId with channel, or campaignId'
          : 'give messageIds, or exactly one of channelUserId and contactId with channel',
      };
    }
    if (!channel) {
      return { ok: false, detail: 'channel is required with channelUserId or contactId', param: 'channel' };
    }
  }
  if (hasUser && channel && !isChannelUserId(channel, fields.channelUserId as string)) {
    return { ok: false, detail: channelUserIdRule(channel), param: 'channelUserId' };
  }
  if (hasContact && !isUuid(fields.contactId as string))
    return { ok: false, detail: 'contactId must be a UUID', param: 'contactId' };

  let size = DEFAULT_PAGE_SIZE;
  if (fields.size !== undefined) {
    size = /^[0-9]{1,4}$/.test(fields.size) ? Number(fields.size) : Number.NaN;
    if (!(size >= 1 && size <= MAX_PAGE_SIZE)) {
      return { ok: false, detail: `size must be an integer from 1 to ${MAX_PAGE_SIZE}`, param: 'size' };
    }
  }
  if (fields.cursor === '') {
    return { ok: false, detail: 'cursor is empty; omit it for the first page', param: 'cursor' };
  }

  return {
    ok: true,
    value: {
      mode: 'history',
      channel,
      channelUserId: fields.channelUserId ?? null,
      contactId: fields.contactId?.toLowerCase() ?? null,
      campaignId,
      size,
      cursor: fields.cursor ?? null,
    },
  };
}

/** An integer page size from `min` to `max`, or the default when absent. */
function pageLimit(raw: string | undefined, name: string, fallback: number, max: number): Parsed<number> {
  if (raw === undefined) return { ok: true, value: fallback };
  const n = /^[0-9]{1,7}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(n >= 1 && n <= max)) {
    return { ok: false, detail: `${name} must be an integer from 1 to ${max}`, param: name };
  }
  return { ok: true, value: n };
}

export const DEFAULT_FEED_LIMIT = 100;
export const MAX_FEED_LIMIT = 1000;

/** `GET /receipts` (CONTRACT §10): `after` (a cursor, checked later against its binding) and `limit`. */
export function parseFeedQuery(query: RawQuery): Parsed<{ after: string | null; limit: number }> {
  const after = single(query, 'after');
  if (!after.ok) return after;
  if (after.value === '') {
    return { ok: false, detail: 'after is empty; omit it to start at the oldest event', param: 'after' };
  }
  const limit = single(query, 'limit');
  if (!limit.ok) return limit;
  const parsed = pageLimit(limit.value, 'limit', DEFAULT_FEED_LIMIT, MAX_FEED_LIMIT);
  if (!parsed.ok) return parsed;
  return { ok: true, value: { after: after.value ?? null, limit: parsed.value } };
}

export const DEFAULT_DELIVERY_LIMIT = 20;
export const MAX_DELIVERY_LIMIT = 100;

/** The operator's delivery list (CONTRACT §9): `state`, `cursor` and `limit`. */
export function parseDeliveriesQuery(
  query: RawQuery,
): Parsed<{ state: DeliveryState | null; cursor: string | null; limit: number }> {
  const state = single(query, 'state');
  if (!state.ok) return state;
  if (state.value !== undefined && !(DELIVERY_STATES as readonly string[]).includes(state.value)) {
    return { ok: false, detail: `state must be one of ${DELIVERY_STATES.join(', ')}`, param: 'state' };
  }
  const cursor = single(query, 'cursor');
  if (!cursor.ok) return cursor;
  if (cursor.value === '') {
    return { ok: false, detail: 'cursor is empty; omit it for the first page', param: 'cursor' };
  }
  const limit = single(query, 'limit');
  if (!limit.ok) return limit;
  const parsed = pageLimit(limit.value, 'limit', DEFAULT_DELIVERY_LIMIT, MAX_DELIVERY_LIMIT);
  if (!parsed.ok) return parsed;
  return {
    ok: true,
    value: {
      state: (state.value as DeliveryState | undefined) ?? null,
      cursor: cursor.value ?? null,
      limit: parsed.value,
    },
  };
}
