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

export type Parsed<T> = { ok: true; value: T } | { ok: false; detail: string };

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
  if (Array.isArray(value)) return { ok: false, detail: `${name} must be given at most once` };
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
      if (!isCampaignId(c.value))
        return { ok: false, detail: 'campaignId must be 1-64 characters of A-Z a-z 0-9 . _ : -' };
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
    if (ids.length === 0) return { ok: false, detail: 'messageIds must name at least one message id' };
    if (ids.length > MAX_IDS)
      return { ok: false, detail: `messageIds holds ${ids.length} ids; at most ${MAX_IDS} are allowed` };
    const bad = ids.find((id) => !isMessageId(id));
    if (bad !== undefined) {
      return {
        ok: false,
        detail: `messageIds: "${bad.slice(0, 64)}" is not a message id (1-64 characters of A-Z a-z 0-9 . _ : -)`,
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
    if (!channel)
      return { ok: false, detail: 'channel must be one of WHATSAPP, APPLEMB, VIBER, SMS, TELEGRAM, RBM' };
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
    if (!channel) return { ok: false, detail: 'channel is required with channelUserId or contactId' };
  }
  if (hasUser && channel && !isChannelUserId(channel, fields.channelUserId as string)) {
    return { ok: false, detail: channelUserIdRule(channel) };
  }
  if (hasContact && !isUuid(fields.contactId as string))
    return { ok: false, detail: 'contactId must be a UUID' };

  let size = DEFAULT_PAGE_SIZE;
  if (fields.size !== undefined) {
    size = /^[0-9]{1,4}$/.test(fields.size) ? Number(fields.size) : Number.NaN;
    if (!(size >= 1 && size <= MAX_PAGE_SIZE)) {
      return { ok: false, detail: `size must be an integer from 1 to ${MAX_PAGE_SIZE}` };
    }
  }
  if (fields.cursor === '') return { ok: false, detail: 'cursor is empty; omit it for the first page' };

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
