import type { Receipt, SmsState, StoredMessage } from '../records.js';
import type {
  Channel,
  Direction,
  DrErrcode,
  DrStatuscode,
  SendStatus,
  SettableStatus,
} from '../vocabulary.js';

/**
 * One message of an ingest batch, already checked against the formats of CONTRACT §1 and normalized
 * (channel upper-case, contactId lower-case). Absent fields keep the stored value on a re-send;
 * `null` clears `campaignId`, `text` or `content`.
 */
export interface MessageUpsert {
  id: string;
  channel: Channel;
  channelUserId: string;
  contactId?: string;
  direction?: Direction;
  campaignId?: string | null;
  createdAt?: Date;
  text?: string | null;
  content?: Record<string, unknown> | null;
  status?: SettableStatus;
  sms?: {
    status?: SendStatus;
    network?: string;
    price?: number;
    counts?: number;
    /** The id a route gave this recipient (CONTRACT §12 "Correlation"); replaces the pair it held before. */
    carrier?: CarrierPair;
  };
}

/**
 * A carrier's name for one recipient: the route it went out on and the id that route's SMSC gave it. A pair
 * belongs to at most one recipient of any account (a carrier id is unique per SMSC, and a route may serve several
 * accounts), and a recipient holds at most one pair.
 */
export interface CarrierPair {
  /** The route's name: 1-32 of a-z 0-9 -. */
  route: string;
  /** The carrier's message id: 1-64 printable ASCII characters. */
  messageId: string;
}

/**
 * A receipt that names its recipient only by the carrier id it came with, on the route it came from (SMPP
 * binds, gateways): the route's side of {@link ReceiptInput}.
 */
export interface CarrierReceiptInput extends ReceiptFields {
  /** The carrier's message id on the route. */
  carrierId: string;
}

/** What a receipt says about its recipient, whichever way it names the recipient. */
export interface ReceiptFields {
  drStatuscode: DrStatuscode;
  drErrcode: DrErrcode;
  drTime: Date;
  network?: string;
  price?: number;
  counts?: number;
}

/** One receipt of a batch, checked and normalized (`drErrcode` defaulted to "0", `drTime` to now). */
export interface ReceiptInput extends ReceiptFields {
  messageId: string;
  to?: string;
}

/** A problem with one item of a batch; `index` is 0-based in the request. */
export interface ItemError {
  index: number;
  detail: string;
  /** The field of the item at fault, when it is one (`channelUserId`, `sms.network`). */
  param?: string;
}

export type BatchOutcome<T> = { ok: true; value: T } | { ok: false; errors: ItemError[] };

export interface ReceiptOutcome {
  applied: number;
  ignored: number;
  unknown: { messageId: string; to: string | null }[];
}

/**
 * Merges an ingested message into the stored record (or makes a new one). Fields given replace, fields
 * left out keep theirs, `createdAt` never changes and a send status never goes back from "0"/"400" to "1".
 * Returns a string describing the problem when the item cannot apply to the stored record.
 */
export function mergeMessage(
  existing: StoredMessage | null,
  item: MessageUpsert,
  owner: { contactId: string; conversationId: string },
  now: Date,
): StoredMessage | string {
  if (existing && existing.channel !== item.channel) {
    return `message ${item.id} to ${item.channelUserId} already exists on channel ${existing.channel}`;
  }
  const direction = item.direction ?? existing?.direction ?? 'outbound';
  const outboundSms = item.channel === 'SMS' && direction === 'outbound';
  return {
    id: item.id,
    channel: item.channel,
    direction,
    contactId: owner.contactId,
    channelUserId: item.channelUserId,
    conversationId: owner.conversationId,
    campaignId: item.campaignId !== undefined ? item.campaignId : (existing?.campaignId ?? null),
    text: item.text !== undefined ? item.text : (existing?.text ?? null),
    content: item.content !== undefined ? item.content : (existing?.content ?? null),
    status:
      item.channel === 'SMS' || direction === 'inbound' ? null : (item.status ?? existing?.status ?? 'sent'),
    sms: outboundSms ? mergeSms(existing?.sms ?? null, item.sms) : null,
    createdAt: existing?.createdAt ?? item.createdAt ?? now,
  };
}

function mergeSms(current: SmsState | null, given: MessageUpsert['sms']): SmsState {
  const base: SmsState = current ?? { status: '1', network: null, price: 0, counts: 1, receipt: null };
  let status = given?.status ?? base.status;
  if (status === '1' && base.status !== '1') status = base.status;
  return {
    status,
    network: given?.network ?? base.network,
    price: given?.price ?? base.price,
    counts: given?.counts ?? base.counts,
    receipt: base.receipt,
  };
}

/**
 * The recipient a receipt is for, among the outbound SMS recipients of its message id (in ingest order): the
 * one named by `to`, or the only one. Null when there is none (the receipt is "unknown"); a string describing
 * the item error when the message has several recipients and `to` is missing.
 */
export function receiptTarget(
  recipients: readonly StoredMessage[],
  item: ReceiptInput,
): StoredMessage | null | string {
  if (item.to !== undefined) return recipients.find((r) => r.channelUserId === item.to) ?? null;
  if (recipients.length > 1)
    return `to is required: message ${item.messageId} has ${recipients.length} recipients`;
  return recipients[0] ?? null;
}

/** Precedence rank: no receipt < accepted < any final code. */
function rank(code: DrStatuscode | undefined): number {
  if (code === undefined) return 0;
  return code === 'accepted' ? 1 : 2;
}

/**
 * Applies a receipt to one SMS recipient under the precedence of CONTRACT §5, or returns null when the receipt
 * is ignored (it then changes nothing at all). An applied receipt sets the send status to "0".
 */
export function applyReceipt(current: SmsState, incoming: ReceiptFields): SmsState | null {
  const held = current.receipt;
  const have = rank(held?.drStatuscode);
  const got = rank(incoming.drStatuscode);
  if (got < have) return null;
  if (held && got === have) {
    const later = incoming.drTime.getTime() > held.drTime.getTime();
    const differs = incoming.drStatuscode !== held.drStatuscode || incoming.drErrcode !== held.drErrcode;
    if (!later || !differs) return null;
  }
  const receipt: Receipt = {
    drStatuscode: incoming.drStatuscode,
    drErrcode: incoming.drErrcode,
    drTime: incoming.drTime,
  };
  return {
    status: '0',
    network: incoming.network ?? current.network,
    price: incoming.price ?? current.price,
    counts: incoming.counts ?? current.counts,
    receipt,
  };
}
