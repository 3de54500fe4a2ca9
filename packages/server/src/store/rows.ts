import type { AttemptRecord, Delivery, DeliveryState } from '../domain/deliveries/delivery.js';
import type { ReceiptEvent, StoredReceiptEvent } from '../domain/deliveries/events.js';
import type { CarrierClaim } from '../domain/ingest/plan-messages.js';
import { conversationKey, identityKey, recordKey } from '../domain/ingest/plan-messages.js';
import type { ParkedCarrierReceipt, ParkedReceipt } from '../domain/ingest/plan-receipts.js';
import type { CarrierReceiptInput, ReceiptInput } from '../domain/ingest/precedence.js';
import type {
  Account,
  AccountWithSecret,
  CallbackSecrets,
  DlrRecipient,
  ListedMessage,
  SmsState,
  StoredMessage,
} from '../domain/records.js';
import { statusOf } from '../domain/records.js';
import type {
  Channel,
  Direction,
  DrErrcode,
  DrStatuscode,
  SendStatus,
  SettableStatus,
} from '../domain/vocabulary.js';
import { itemJsonOf, itemOf } from './event-item.js';

/**
 * Rows as both engines return them, and their one mapping to the domain. The tables have the same columns on
 * both; what differs is only how a driver hands over three kinds of value, named by {@link ColumnTypes}, and
 * how two of them become domain values ({@link Conversions}). Each engine's rows.ts instantiates the mapping
 * once, with its own conversions.
 */

/** The JavaScript type an engine's driver returns for each kind of column whose type differs between engines. */
export interface ColumnTypes {
  /** A timestamp: epoch milliseconds on SQLite, a Date on PostgreSQL (timestamptz). */
  time: unknown;
  /** A JSON value (a record's content, an IP whitelist, a parked receipt): text on SQLite, parsed on PostgreSQL. */
  json: unknown;
  /** A boolean: 0 or 1 on SQLite, a boolean on PostgreSQL. */
  flag: number | boolean;
}

/** How an engine's timestamps and JSON values become domain values. */
export interface Conversions<C extends ColumnTypes> {
  date(value: C['time']): Date;
  json(value: C['json']): unknown;
}

export interface AccountRow<C extends ColumnTypes> {
  id: string;
  name: string;
  key: string;
  secret_hash: Buffer;
  ip_whitelist: C['json'];
  dlr_query_enabled: C['flag'];
  balance: number;
  credit_limit: number;
  callback_url: string | null;
  callback_enabled: C['flag'];
  created_at: C['time'];
}

export const ACCOUNT_COLUMNS =
  'id, name, key, secret_hash, ip_whitelist, dlr_query_enabled, balance, credit_limit, callback_url, ' +
  'callback_enabled, created_at';

export interface CallbackSecretRow<C extends ColumnTypes> {
  callback_secret: string;
  previous_callback_secret: string | null;
  previous_callback_secret_until: C['time'] | null;
}

export interface MessageRow<C extends ColumnTypes> {
  id: string;
  channel: string;
  direction: string;
  contact_id: string;
  channel_user_id: string;
  conversation_id: string;
  campaign_id: string | null;
  text: string | null;
  content: C['json'] | null;
  status: string | null;
  sms_status: string | null;
  network: string | null;
  price: number | null;
  counts: number | null;
  dr_statuscode: string | null;
  dr_errcode: string | null;
  dr_time: C['time'] | null;
  created_at: C['time'];
}

/** The columns of an outbound SMS recipient's send state and receipt, in table order. */
export const SMS_COLUMN_NAMES = [
  'sms_status',
  'network',
  'price',
  'counts',
  'dr_statuscode',
  'dr_errcode',
  'dr_time',
];

/** A record's columns, in table order; each engine joins them (PostgreSQL qualifies them for its joins). */
export const MESSAGE_COLUMN_NAMES: readonly string[] = [
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
  ...SMS_COLUMN_NAMES,
  'created_at',
];

/** The columns of an outbound SMS recipient's send state and receipt. */
export type SmsColumns<C extends ColumnTypes> = Pick<
  MessageRow<C>,
  'sms_status' | 'network' | 'price' | 'counts' | 'dr_statuscode' | 'dr_errcode' | 'dr_time'
>;

/** Only what /dlr shows: half the columns of a record, none of its text or content. */
export const DLR_COLUMN_NAMES: readonly string[] = ['id', 'channel_user_id', ...SMS_COLUMN_NAMES];
export type DlrRow<C extends ColumnTypes> = Pick<MessageRow<C>, 'id' | 'channel_user_id'> & SmsColumns<C>;

/**
 * What a history page shows of a record (ListedMessage), less its contact's and conversation's ids, which a
 * contact's page knows before it reads and a campaign's reads from the conversation: none of the SMS send
 * state but its status, none of the receipt but its detailed code, which the record's status is derived from.
 */
export const LISTED_COLUMN_NAMES: readonly string[] = [
  'id',
  'channel',
  'direction',
  'channel_user_id',
  'campaign_id',
  'text',
  'content',
  'status',
  'sms_status',
  'dr_statuscode',
  'created_at',
];
export type ListedRow<C extends ColumnTypes> = Pick<
  MessageRow<C>,
  | 'id'
  | 'channel'
  | 'direction'
  | 'channel_user_id'
  | 'campaign_id'
  | 'text'
  | 'content'
  | 'status'
  | 'sms_status'
  | 'dr_statuscode'
  | 'created_at'
>;

/** An event's row as read: its item as stored (store/event-item.ts), with the message id and recipient. */
export interface EventRow<C extends ColumnTypes> {
  seq: number;
  id: string;
  message_id: string;
  recipient: string;
  recorded_at: C['time'];
  item: string;
}

/** The columns of an {@link EventRow}. */
export const EVENT_COLUMNS = 'seq, id, message_id, recipient, recorded_at, item';

export interface DeliveryRow<C extends ColumnTypes> {
  seq: number;
  id: string;
  message_id: string;
  recipient: string;
  state: string;
  attempts: number;
  created_at: C['time'];
  next_attempt_at: C['time'] | null;
  last_at: C['time'] | null;
  last_http_status: number | null;
  last_error: string | null;
  last_duration_ms: number | null;
  item: string;
}

/** A delivery's columns (`d`), its recipient's (`message_id`, `recipient`) as the engine gives them. */
export const deliveryColumns = (recipient: string): string =>
  `d.seq, d.id, ${recipient}, d.state, d.attempts, d.created_at, d.next_attempt_at, d.last_at, ` +
  'd.last_http_status, d.last_error, d.last_duration_ms';
/** A delivery (`d`) with its event's item (`e`). */
export const DELIVERY_COLUMNS = `${deliveryColumns('d.message_id, d.recipient')}, e.item`;

export interface AttemptRow<C extends ColumnTypes> {
  at: C['time'];
  http_status: number | null;
  error: string | null;
  duration_ms: number;
}

/** A parked receipt: the normalized item as JSON (its `drTime` as the engine stores it), and when it parked. */
export interface ParkedRow<C extends ColumnTypes> {
  ref: number;
  receipt: C['json'];
  parked_at: C['time'];
}

/** A parked carrier receipt: as {@link ParkedRow}, with the route it came from (the JSON has the rest). */
export interface ParkedCarrierRow<C extends ColumnTypes> extends ParkedRow<C> {
  route: string;
}

/** A row of `carrier_ids`: a carrier pair and the recipient holding it. */
export interface CarrierRow {
  route: string;
  carrier_id: string;
  account_id: string;
  message_id: string;
  channel_user_id: string;
}

/** A stored carrier pair as the message planner takes it (`MessageBatchState.carriers`). */
export const carrierClaim = (row: CarrierRow): CarrierClaim => ({
  route: row.route,
  carrierId: row.carrier_id,
  accountId: row.account_id,
  messageId: row.message_id,
  to: row.channel_user_id,
});

export interface IdentityRow {
  channel: string;
  channel_user_id: string;
  contact_id: string;
}

export interface ConversationRow {
  contact_id: string;
  channel: string;
  id: string;
}

/** The owners of identities, keyed as the message planner keys them (`MessageBatchState.owners`). */
export function identityOwners(rows: Iterable<IdentityRow>): Map<string, string> {
  const owners = new Map<string, string>();
  for (const row of rows) owners.set(identityKey(row.channel, row.channel_user_id), row.contact_id);
  return owners;
}

/** The identity each contact holds per channel (`MessageBatchState.held`). */
export function heldIdentities(rows: Iterable<IdentityRow>): Map<string, string> {
  const held = new Map<string, string>();
  for (const row of rows) held.set(conversationKey(row.contact_id, row.channel), row.channel_user_id);
  return held;
}

/** The conversation of each contact per channel (`MessageBatchState.conversations`). */
export function conversationIds(rows: Iterable<ConversationRow>): Map<string, string> {
  const conversations = new Map<string, string>();
  for (const row of rows) conversations.set(conversationKey(row.contact_id, row.channel), row.id);
  return conversations;
}

/**
 * The row mappers of one engine, by what they make (`fromRow.message(row)`). Built once per engine at module
 * load: the conversions are plain functions the mappers call, so a row costs what it did when each engine had
 * its own copy.
 */
export function rowMappers<C extends ColumnTypes>({ date, json }: Conversions<C>) {
  const account = (row: AccountRow<C>): Account => ({
    id: row.id,
    name: row.name,
    key: row.key,
    ipWhitelist: json(row.ip_whitelist) as string[],
    dlrQueryEnabled: Boolean(row.dlr_query_enabled),
    balance: row.balance,
    creditLimit: row.credit_limit,
    callbackUrl: row.callback_url,
    callbackEnabled: Boolean(row.callback_enabled),
    createdAt: date(row.created_at),
  });

  const sms = (row: SmsColumns<C>): SmsState | null => {
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
              drTime: row.dr_time === null ? new Date(0) : date(row.dr_time),
            },
    };
  };

  return {
    account,
    accountWithSecret: (row: AccountRow<C>): AccountWithSecret => ({
      ...account(row),
      secretHash: row.secret_hash,
    }),
    callbackSecrets: (row: CallbackSecretRow<C>): CallbackSecrets => ({
      current: row.callback_secret,
      previous: row.previous_callback_secret,
      previousUntil:
        row.previous_callback_secret_until === null ? null : date(row.previous_callback_secret_until),
    }),
    message: (row: MessageRow<C>): StoredMessage => ({
      id: row.id,
      channel: row.channel as Channel,
      direction: row.direction as Direction,
      contactId: row.contact_id,
      channelUserId: row.channel_user_id,
      conversationId: row.conversation_id,
      campaignId: row.campaign_id,
      text: row.text,
      content: row.content === null ? null : (json(row.content) as Record<string, unknown>),
      status: row.status as SettableStatus | null,
      sms: sms(row),
      createdAt: date(row.created_at),
    }),
    /** A listed record's row, with its contact's and its conversation's ids. */
    listed: (row: ListedRow<C>, contactId: string, conversationId: string): ListedMessage => ({
      id: row.id,
      channel: row.channel as Channel,
      direction: row.direction as Direction,
      contactId,
      channelUserId: row.channel_user_id,
      conversationId,
      campaignId: row.campaign_id,
      text: row.text,
      content: row.content === null ? null : (json(row.content) as Record<string, unknown>),
      status: statusOf(
        row.direction as Direction,
        row.status as SettableStatus | null,
        row.sms_status as SendStatus | null,
        row.dr_statuscode as DrStatuscode | null,
      ),
      createdAt: date(row.created_at),
    }),
    dlrRecipient: (row: DlrRow<C>): DlrRecipient => ({
      id: row.id,
      channelUserId: row.channel_user_id,
      sms: sms(row),
    }),
    event: (row: EventRow<C>): ReceiptEvent => ({
      id: row.id,
      seq: row.seq,
      recordedAt: date(row.recorded_at),
      item: itemOf(row.message_id, row.recipient, row.item),
    }),
    storedEvent: (row: EventRow<C>): StoredReceiptEvent => ({
      id: row.id,
      seq: row.seq,
      recordedAt: date(row.recorded_at),
      itemJson: itemJsonOf(row.message_id, row.recipient, row.item),
    }),
    delivery: (row: DeliveryRow<C>): Delivery => ({
      id: row.id,
      eventId: row.id,
      seq: row.seq,
      messageId: row.message_id,
      to: row.recipient,
      state: row.state as DeliveryState,
      attempts: row.attempts,
      createdAt: date(row.created_at),
      nextAttemptAt:
        row.state === 'pending' && row.next_attempt_at !== null ? date(row.next_attempt_at) : null,
      lastAttempt:
        row.last_at === null
          ? null
          : {
              at: date(row.last_at),
              httpStatus: row.last_http_status,
              error: row.last_error,
              durationMs: row.last_duration_ms ?? 0,
            },
      payload: itemOf(row.message_id, row.recipient, row.item),
    }),
    attempt: (row: AttemptRow<C>): AttemptRecord => ({
      at: date(row.at),
      httpStatus: row.http_status,
      error: row.error,
      durationMs: row.duration_ms,
    }),
    parked: (row: ParkedRow<C>): ParkedReceipt => {
      // drTime is epoch milliseconds on SQLite and an ISO string on PostgreSQL: Date takes either.
      const raw = json(row.receipt) as Omit<ReceiptInput, 'drTime'> & { drTime: number | string };
      return {
        ref: row.ref,
        receipt: { ...raw, drTime: new Date(raw.drTime) },
        parkedAt: date(row.parked_at),
      };
    },
    parkedCarrier: (row: ParkedCarrierRow<C>): ParkedCarrierReceipt => {
      const { accounts, ...raw } = json(row.receipt) as Omit<CarrierReceiptInput, 'drTime'> & {
        drTime: number | string;
        accounts: string[] | null;
      };
      return {
        ref: row.ref,
        route: row.route,
        receipt: { ...raw, drTime: new Date(raw.drTime) },
        accounts: accounts ?? null,
        parkedAt: date(row.parked_at),
      };
    },
  };
}

/**
 * The stored state of each recipient a receipt plan may update, from the recipients its batch loaded by message
 * id: the "before" of the review rollup's delta (the engines' rollup.ts).
 */
export function storedRecipients(
  byId: ReadonlyMap<string, readonly StoredMessage[]>,
): (updated: StoredMessage) => StoredMessage | undefined {
  const byKey = new Map<string, StoredMessage>();
  for (const list of byId.values()) for (const r of list) byKey.set(recordKey(r.id, r.channelUserId), r);
  return (updated) => byKey.get(recordKey(updated.id, updated.channelUserId));
}
