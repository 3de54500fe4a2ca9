import type { AttemptRecord, Delivery, DeliveryState } from '../../domain/deliveries/delivery.js';
import type { ReceiptEvent } from '../../domain/deliveries/events.js';
import type { ParkedReceipt } from '../../domain/ingest/plan-receipts.js';
import type { ReceiptInput } from '../../domain/ingest/precedence.js';
import type {
  Account,
  AccountWithSecret,
  CallbackSecrets,
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

/**
 * Rows as node-postgres returns them through our pool (timestamptz → Date, json → object, numeric and int8 →
 * number), and their mapping to the domain.
 */

export interface AccountRow {
  id: string;
  name: string;
  key: string;
  secret_hash: Buffer;
  ip_whitelist: string[];
  dlr_query_enabled: boolean;
  balance: number;
  credit_limit: number;
  callback_url: string | null;
  callback_enabled: boolean;
  created_at: Date;
}

export const ACCOUNT_COLUMNS =
  'id, name, key, secret_hash, ip_whitelist, dlr_query_enabled, balance, credit_limit, callback_url, ' +
  'callback_enabled, created_at';

export function accountFromRow(row: AccountRow): Account {
  return {
    id: row.id,
    name: row.name,
    key: row.key,
    ipWhitelist: row.ip_whitelist,
    dlrQueryEnabled: row.dlr_query_enabled,
    balance: row.balance,
    creditLimit: row.credit_limit,
    callbackUrl: row.callback_url,
    callbackEnabled: row.callback_enabled,
    createdAt: row.created_at,
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
  content: Record<string, unknown> | null;
  status: string | null;
  sms_status: string | null;
  network: string | null;
  price: number | null;
  counts: number | null;
  dr_statuscode: string | null;
  dr_errcode: string | null;
  dr_time: Date | null;
  created_at: Date;
}

/** The message columns, qualified by the alias `m` so they can sit in a join. */
export const MESSAGE_COLUMNS = [
  'id',
  'channel',
  'direction',
  'contact_id',
  'channel_user_id',
  'conversation_id',
  'campaign_id',
  'text',
  'content',
  'status',
  'sms_status',
  'network',
  'price',
  'counts',
  'dr_statuscode',
  'dr_errcode',
  'dr_time',
  'created_at',
]
  .map((column) => `m.${column}`)
  .join(', ');

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
    content: row.content,
    status: row.status as SettableStatus | null,
    sms: smsFromRow(row),
    createdAt: row.created_at,
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
            drTime: row.dr_time ?? new Date(0),
          },
  };
}

/** Only what /dlr shows (alias `m`): half the columns of a record, none of its text or content. */
export const DLR_COLUMNS = [
  'id',
  'channel_user_id',
  'sms_status',
  'network',
  'price',
  'counts',
  'dr_statuscode',
  'dr_errcode',
  'dr_time',
]
  .map((column) => `m.${column}`)
  .join(', ');
export type DlrRow = Pick<MessageRow, 'id' | 'channel_user_id'> & SmsColumns;

export function dlrRecipientFromRow(row: DlrRow): DlrRecipient {
  return { id: row.id, channelUserId: row.channel_user_id, sms: smsFromRow(row) };
}

/**
 * Joins each row of `keys` (id, channel_user_id, created_at; account `$1`) to its record as `m`. A plain join
 * lets the planner filter on created_at after probing every month partition; a LATERAL subquery fenced with
 * OFFSET 0 stays a parameterized nested loop, whose Append PostgreSQL prunes at run time to the one partition
 * that holds each record. For the few records of a /dlr or by-ids lookup, that is one index probe instead of
 * one per month.
 */
export const joinRecord = (keys: string): string =>
  `CROSS JOIN LATERAL (
     SELECT * FROM messages m
     WHERE m.account_id = $1 AND m.id = ${keys}.id AND m.channel_user_id = ${keys}.channel_user_id
       AND m.created_at = ${keys}.created_at
     OFFSET 0
   ) m`;

/** Key of a message record inside one account, for in-memory maps: the planner's, so loaded maps fit it. */
export { recordKey } from '../../domain/ingest/plan-messages.js';

export interface CallbackSecretRow {
  callback_secret: string;
  previous_callback_secret: string | null;
  previous_callback_secret_until: Date | null;
}

export const callbackSecretsFromRow = (row: CallbackSecretRow): CallbackSecrets => ({
  current: row.callback_secret,
  previous: row.previous_callback_secret,
  previousUntil: row.previous_callback_secret_until,
});

export interface EventRow {
  seq: number;
  id: string;
  recorded_at: Date;
  item: string;
}

export const eventFromRow = (row: EventRow): ReceiptEvent => ({
  id: row.id,
  seq: row.seq,
  recordedAt: row.recorded_at,
  item: JSON.parse(row.item) as DlrItem,
});

export interface DeliveryRow {
  seq: number;
  id: string;
  message_id: string;
  recipient: string;
  state: string;
  attempts: number;
  created_at: Date;
  next_attempt_at: Date | null;
  last_at: Date | null;
  last_http_status: number | null;
  last_error: string | null;
  last_duration_ms: number | null;
  item: string;
}

/** A delivery (`d`) with its event's item (`e`). */
export const DELIVERY_COLUMNS =
  'd.seq, d.id, d.message_id, d.recipient, d.state, d.attempts, d.created_at, d.next_attempt_at, d.last_at, ' +
  'd.last_http_status, d.last_error, d.last_duration_ms, e.item';

export function deliveryFromRow(row: DeliveryRow): Delivery {
  return {
    id: row.id,
    eventId: row.id,
    seq: row.seq,
    messageId: row.message_id,
    to: row.recipient,
    state: row.state as DeliveryState,
    attempts: row.attempts,
    createdAt: row.created_at,
    nextAttemptAt: row.state === 'pending' ? row.next_attempt_at : null,
    lastAttempt:
      row.last_at === null
        ? null
        : {
            at: row.last_at,
            httpStatus: row.last_http_status,
            error: row.last_error,
            durationMs: row.last_duration_ms ?? 0,
          },
    payload: JSON.parse(row.item) as DlrItem,
  };
}

export interface AttemptRow {
  at: Date;
  http_status: number | null;
  error: string | null;
  duration_ms: number;
}

export const attemptFromRow = (row: AttemptRow): AttemptRecord => ({
  at: row.at,
  httpStatus: row.http_status,
  error: row.error,
  durationMs: row.duration_ms,
});

/** A parked receipt as stored: the normalized item, `drTime` as an ISO string (JSON has no dates). */
export const parkedJson = (r: ReceiptInput): string =>
  JSON.stringify({ ...r, drTime: r.drTime.toISOString() });

export interface ParkedRow {
  ref: number;
  receipt: Omit<ReceiptInput, 'drTime'> & { drTime: string };
  parked_at: Date;
}

export const parkedFromRow = (row: ParkedRow): ParkedReceipt => ({
  ref: row.ref,
  receipt: { ...row.receipt, drTime: new Date(row.receipt.drTime) },
  parkedAt: row.parked_at,
});
