import { parseDrTime } from '../receipts.js';
import type {
  DlrItem,
  DrStatus,
  DrStatuscode,
  MessagePage,
  MessageRecord,
  ReceiptEvent,
  ReceiptPage,
  SendStatus,
} from '../types.js';

/**
 * Tolerant readers of the wire shapes: the spec lets some strings arrive as JSON numbers, so every
 * identifier-like field is turned into a string and every number-like field into a number.
 */

export type JsonObject = Record<string, unknown>;

export const isObject = (value: unknown): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const text = (value: unknown): string =>
  typeof value === 'string' ? value : typeof value === 'number' ? String(value) : '';

const num = (value: unknown): number => {
  if (typeof value === 'number') return value;
  if (typeof value === 'string' && value.trim() !== '') return Number(value);
  return Number.NaN;
};

/** Reads one delivery receipt item; returns undefined when `raw` is not an object. */
export function normalizeDlrItem(raw: unknown): DlrItem | undefined {
  if (!isObject(raw)) return undefined;
  const base = {
    type: 'dlr' as const,
    messageid: text(raw.messageid),
    to: text(raw.to),
    status: text(raw.status).trim() as SendStatus,
    price: num(raw.price),
    counts: num(raw.counts),
    ...(raw.network === undefined || raw.network === null ? {} : { network: text(raw.network) }),
  };
  const hasReceipt = [raw.drStatus, raw.drStatuscode, raw.drTime].some((v) => v !== undefined && v !== null);
  if (!hasReceipt) return base;
  const drTime = text(raw.drTime);
  return {
    ...base,
    drStatus: num(raw.drStatus) as DrStatus,
    drStatuscode: text(raw.drStatuscode) as DrStatuscode,
    drErrcode: raw.drErrcode === undefined || raw.drErrcode === null ? '0' : text(raw.drErrcode).trim(),
    drTime,
    drTimeDate: parseDrTime(drTime),
  };
}

const nullableText = (value: unknown): string | null =>
  value === null || value === undefined ? null : text(value);

/** Reads one message record; returns undefined when `raw` is not an object. */
export function normalizeMessage(raw: unknown): MessageRecord | undefined {
  if (!isObject(raw)) return undefined;
  return {
    id: text(raw.id),
    channel: text(raw.channel).toUpperCase() as MessageRecord['channel'],
    direction: text(raw.direction) as MessageRecord['direction'],
    contactId: text(raw.contactId),
    channelUserId: text(raw.channelUserId),
    conversationId: text(raw.conversationId),
    campaignId: nullableText(raw.campaignId),
    text: nullableText(raw.text),
    content: isObject(raw.content) ? raw.content : null,
    status: text(raw.status) as MessageRecord['status'],
    createdAt: text(raw.createdAt),
  };
}

function normalizeMessages(list: unknown[]): MessageRecord[] | undefined {
  const out: MessageRecord[] = [];
  for (const raw of list) {
    const record = normalizeMessage(raw);
    if (!record) return undefined;
    out.push(record);
  }
  return out;
}

/**
 * Reads a message query answer: the `{messages, nextCursor, hasMore}` envelope, or the bare array the
 * deprecated endpoint gives in Mode 1. Undefined when the body is neither.
 */
export function readMessagePage(body: unknown): MessagePage | undefined {
  if (Array.isArray(body)) {
    const messages = normalizeMessages(body);
    return messages && { messages, nextCursor: null, hasMore: false };
  }
  if (!isObject(body) || !Array.isArray(body.messages)) return undefined;
  const messages = normalizeMessages(body.messages);
  if (!messages) return undefined;
  const nextCursor = typeof body.nextCursor === 'string' && body.nextCursor !== '' ? body.nextCursor : null;
  const hasMore = (body.hasMore === true || body.hasMore === 'true') && nextCursor !== null;
  return { messages, nextCursor: hasMore ? nextCursor : null, hasMore };
}

/** Reads one receipt event of the feed; undefined when it lacks an id or a receipt item. */
function normalizeReceiptEvent(raw: unknown): ReceiptEvent | undefined {
  if (!isObject(raw)) return undefined;
  const receipt = normalizeDlrItem(raw.receipt);
  const id = text(raw.id);
  if (!receipt || id === '') return undefined;
  return { id, recordedAt: text(raw.recordedAt), receipt };
}

/**
 * Reads a receipt feed answer `{receipts, nextCursor, hasMore}`. Undefined when the body is not one, and
 * when `nextCursor` is missing: the feed always hands one out, and a poller without it would lose its place.
 */
export function readReceiptPage(body: unknown): ReceiptPage | undefined {
  if (!isObject(body) || !Array.isArray(body.receipts)) return undefined;
  if (typeof body.nextCursor !== 'string' || body.nextCursor === '') return undefined;
  const receipts: ReceiptEvent[] = [];
  for (const raw of body.receipts) {
    const event = normalizeReceiptEvent(raw);
    if (!event) return undefined;
    receipts.push(event);
  }
  const hasMore = body.hasMore === true || body.hasMore === 'true';
  return { receipts, nextCursor: body.nextCursor, hasMore };
}

/**
 * The total order of records (CONTRACT §1): `createdAt`, then `id`, then `channelUserId`, compared by code
 * unit as the service does.
 */
export function compareRecords(a: MessageRecord, b: MessageRecord): number {
  const ta = Date.parse(a.createdAt);
  const tb = Date.parse(b.createdAt);
  if (!Number.isNaN(ta) && !Number.isNaN(tb) && ta !== tb) return ta - tb;
  if (Number.isNaN(ta) || Number.isNaN(tb)) {
    const byText = codeUnitOrder(a.createdAt, b.createdAt);
    if (byText !== 0) return byText;
  }
  return codeUnitOrder(a.id, b.id) || codeUnitOrder(a.channelUserId, b.channelUserId);
}

const codeUnitOrder = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
