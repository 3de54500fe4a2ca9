import type { AttemptRecord, Delivery, DeliveryState } from '../../domain/deliveries/delivery.js';
import type { ParkedReceipt } from '../../domain/ingest/plan-receipts.js';
import type { ReceiptInput } from '../../domain/ingest/precedence.js';
import type {
  Account,
  AccountWithSecret,
  DlrRecipient,
  SmsState,
  StoredMessage,
} from '../../domain/records.js';
import type {
  Channel,
  Direction,
  DrErrcode,
  DrStatuscode,
  SendStatus,
  SettableStatus,
} from '../../domain/vocabulary.js';
import type { DlrItem } from '../../domain/wire.js';

/** Rows as SQLite returns them, and their mapping to and from the domain. Dates are epoch milliseconds. */

export interface AccountRow {
  id: string;
  name: string;
  key: string;
  secret_hash: Buffer;
  ip_whitelist: string;
  dlr_query_enabled: number;
  balance: number;
  credit_limit: number;
  callback_url: string | null;
  callback_enabled: number;
  created_at: number;
}

export const ACCOUNT_COLUMNS =
  'id, name, key, secret_hash, ip_whitelist, dlr_query_enabled, balance, credit_limit, callback_url, ' +
  'callback_enabled, created_at';

export function accountFromRow(row: AccountRow): Account {
  return {
    id: row.id,
    name: row.name,
    key: row.key,
    ipWhitelist: JSON.parse(row.ip_whitelist) as string[],
    dlrQueryEnabled: row.dlr_query_enabled !== 0,
    balance: row.balance,
    creditLimit: row.credit_limit,
    callbackUrl: row.callback_url,
    callbackEnabled: row.callback_enabled !== 0,
    createdAt: new Date(row.created_at),
  };
}

export function accountWithSecretFromRow(row: AccountRow): AccountWithSecret {
  return { ...accountFromRow(row), secretHash: row.secret_hash };
}

export interface MessageRow {
  id: string;
  channel: string;
  direction: string;
  contact_id: string;
  channel_user_id: string;
  conversation_id: string;
  campaign_id: string | null;
  text: string | null;
  content: string | null;
  status: string | null;
  sms_status: string | null;
  network: string | null;
  price: number | null;
  counts: number | null;
  dr_statuscode: string | null;
  dr_errcode: string | null;
  dr_time: number | null;
  created_at: number;
}

export const MESSAGE_COLUMNS =
  'id, channel, direction, contact_id, channel_user_id, conversation_id, campaign_id, text, content, status, ' +
  'sms_status, network, price, counts, dr_statuscode, dr_errcode, dr_time, created_at';

export function messageFromRow(row: MessageRow): StoredMessage {
  return {
    id: row.id,
    channel: row.channel as Channel,
    direction: row.direction as Direction,
    contactId: row.contact_id,
    channelUserId: row.channel_user_id,
    conversationId: row.conversation_id,
    campaignId: row.campaign_id,
    text: row.text,
    content: row.content === null ? null : (JSON.parse(row.content) as Record<string, unknown>),
    status: row.status as SettableStatus | null,
    sms: smsFromRow(row),
    createdAt: new Date(row.created_at),
  };
}

/** The columns of an outbound SMS recipient's send state and receipt. */
type SmsColumns = Pick<
  MessageRow,
  'sms_status' | 'network' | 'price' | 'counts' | 'dr_statuscode' | 'dr_errcode' | 'dr_time'
>;

function smsFromRow(row: SmsColumns): SmsState | null {
  if (row.sms_status === null) return null;
  return {
    status: row.sms_status as SendStatus,
    network: row.network,
    price: row.price ?? 0,
    counts: row.counts ?? 1,
    receipt:
      row.dr_statuscode === null
        ? null
        : {
            drStatuscode: row.dr_statuscode as DrStatuscode,
            drErrcode: (row.dr_errcode ?? '0') as DrErrcode,
            drTime: new Date(row.dr_time ?? 0),
          },
  };
}

/** Only what /dlr shows: half the columns of a record, none of its text or content. */
export const DLR_COLUMNS =
  'id, channel_user_id, sms_status, network, price, counts, dr_statuscode, dr_errcode, dr_time';
export type DlrRow = Pick<MessageRow, 'id' | 'channel_user_id'> & SmsColumns;

export function dlrRecipientFromRow(row: DlrRow): DlrRecipient {
  return { id: row.id, channelUserId: row.channel_user_id, sms: smsFromRow(row) };
}

/** The named parameters of a message write (everything but the key, the sequence and createdAt). */
export interface MessageParams {
  account_id: string;
  id: string;
  channel_user_id: string;
  channel: string;
  direction: string;
  contact_id: string;
  conversation_id: string;
  campaign_id: string | null;
  text: string | null;
  content: string | null;
  status: string | null;
  sms_status: string | null;
  network: string | null;
  price: number | null;
  counts: number | null;
  dr_statuscode: string | null;
  dr_errcode: string | null;
  dr_time: number | null;
}

export function messageParams(accountId: string, m: StoredMessage): MessageParams {
  const receipt = m.sms?.receipt ?? null;
  return {
    account_id: accountId,
    id: m.id,
    channel_user_id: m.channelUserId,
    channel: m.channel,
    direction: m.direction,
    contact_id: m.contactId,
    conversation_id: m.conversationId,
    campaign_id: m.campaignId,
    text: m.text,
    content: m.content === null ? null : JSON.stringify(m.content),
    status: m.status,
    sms_status: m.sms?.status ?? null,
    network: m.sms?.network ?? null,
    price: m.sms?.price ?? null,
    counts: m.sms?.counts ?? null,
    dr_statuscode: receipt?.drStatuscode ?? null,
    dr_errcode: receipt?.drErrcode ?? null,
    dr_time: receipt ? receipt.drTime.getTime() : null,
  };
}

/** A value bound to a positional parameter. */
export type SqlValue = string | number | null;

/** The columns of a new record, in the order of {@link newMessageValues}. */
export const NEW_MESSAGE_COLUMNS =
  'account_id, seq, created_at, id, channel, direction, contact_id, channel_user_id, conversation_id, ' +
  'campaign_id, text, content, status, sms_status, network, price, counts, dr_statuscode, dr_errcode, dr_time';

/** A new record's values for `insertMessage`: one array, no object per row to build and bind by name. */
export function newMessageValues(accountId: string, seq: number, m: StoredMessage): SqlValue[] {
  const sms = m.sms;
  const receipt = sms?.receipt ?? null;
  return [
    accountId,
    seq,
    m.createdAt.getTime(),
    m.id,
    m.channel,
    m.direction,
    m.contactId,
    m.channelUserId,
    m.conversationId,
    m.campaignId,
    m.text,
    m.content === null ? null : JSON.stringify(m.content),
    m.status,
    sms?.status ?? null,
    sms?.network ?? null,
    sms?.price ?? null,
    sms?.counts ?? null,
    receipt?.drStatuscode ?? null,
    receipt?.drErrcode ?? null,
    receipt ? receipt.drTime.getTime() : null,
  ];
}

/** A recipient's SMS and receipt columns, then its rowid: the values of `updateReceipt`. */
export function receiptValues(m: StoredMessage, row: number): SqlValue[] {
  const receipt = m.sms?.receipt ?? null;
  return [
    m.sms?.status ?? null,
    m.sms?.network ?? null,
    m.sms?.price ?? null,
    m.sms?.counts ?? null,
    receipt?.drStatuscode ?? null,
    receipt?.drErrcode ?? null,
    receipt ? receipt.drTime.getTime() : null,
    row,
  ];
}

export interface DeliveryRow {
  account_id: string;
  seq: number;
  id: string;
  message_id: string;
  recipient: string;
  state: string;
  attempts: number;
  created_at: number;
  next_attempt_at: number | null;
  last_at: number | null;
  last_http_status: number | null;
  last_error: string | null;
  last_duration_ms: number | null;
  item: string;
}

export const DELIVERY_COLUMNS =
  'd.account_id, d.seq, d.id, d.message_id, d.recipient, d.state, d.attempts, d.created_at, d.next_attempt_at, ' +
  'd.last_at, d.last_http_status, d.last_error, d.last_duration_ms, e.item';

export function deliveryFromRow(row: DeliveryRow): Delivery {
  return {
    id: row.id,
    eventId: row.id,
    seq: row.seq,
    messageId: row.message_id,
    to: row.recipient,
    state: row.state as DeliveryState,
    attempts: row.attempts,
    createdAt: new Date(row.created_at),
    nextAttemptAt:
      row.state === 'pending' && row.next_attempt_at !== null ? new Date(row.next_attempt_at) : null,
    lastAttempt:
      row.last_at === null
        ? null
        : {
            at: new Date(row.last_at),
            httpStatus: row.last_http_status,
            error: row.last_error,
            durationMs: row.last_duration_ms ?? 0,
          },
    payload: JSON.parse(row.item) as DlrItem,
  };
}

export interface AttemptRow {
  at: number;
  http_status: number | null;
  error: string | null;
  duration_ms: number;
}

export const attemptFromRow = (row: AttemptRow): AttemptRecord => ({
  at: new Date(row.at),
  httpStatus: row.http_status,
  error: row.error,
  durationMs: row.duration_ms,
});

/** A parked receipt as JSON: the normalized item, its time as epoch milliseconds. */
export const parkedJson = (r: ReceiptInput): string => JSON.stringify({ ...r, drTime: r.drTime.getTime() });

export function parkedFromRow(row: { ref: number; receipt: string; parked_at: number }): ParkedReceipt {
  const raw = JSON.parse(row.receipt) as Omit<ReceiptInput, 'drTime'> & { drTime: number };
  return {
    ref: row.ref,
    receipt: { ...raw, drTime: new Date(raw.drTime) },
    parkedAt: new Date(row.parked_at),
  };
}
