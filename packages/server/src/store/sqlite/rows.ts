import type { RouteAccounts } from '../../domain/ingest/plan-carrier-receipts.js';
import type { CarrierReceiptInput, ReceiptInput } from '../../domain/ingest/precedence.js';
import type { StoredMessage } from '../../domain/records.js';
import * as shared from '../rows.js';

/**
 * Rows as better-sqlite3 returns them (timestamps as epoch milliseconds, JSON as text, booleans as 0 or 1),
 * mapped to the domain by the shared mapping (store/rows.ts), and the values of this engine's writes.
 */

export type Columns = { time: number; json: string; flag: number };

/**
 * An event's item as stored, NULL where the event stands for its record's current item, and that record's SMS
 * and receipt columns (current-item.ts).
 */
export type ItemColumns = { item: string | null } & shared.SmsColumns<Columns>;
/** A delivery's or an event's recipient, from its record `m` (record-refs.ts). */
export const RECIPIENT_COLUMNS = 'm.id AS message_id, m.channel_user_id AS recipient';
/** The columns of {@link ItemColumns}: the event's from `e`, its record's from `m`. */
export const ITEM_COLUMNS = `e.item, ${shared.SMS_COLUMN_NAMES.map((column) => `m.${column}`).join(', ')}`;

// Modules name the shared row types with these column types (`MessageRow<Columns>`); the outbox its own.
export type DeliveryRow = Omit<shared.DeliveryRow<Columns>, 'item'> & ItemColumns;
export type AttemptRow = shared.AttemptRow<Columns>;
export type EventRow = Omit<shared.EventRow<Columns>, 'item'> & ItemColumns;

export const fromRow = shared.rowMappers<Columns>({
  date: (ms) => new Date(ms),
  json: (text) => JSON.parse(text),
});
export const { attempt: attemptFromRow } = fromRow;

export const ACCOUNT_COLUMNS = shared.ACCOUNT_COLUMNS;
/** A record's columns: its own from `m`, the contact's and the conversation's ids from the SQL given. */
const messageColumns = (contact: string, conversation: string): string =>
  shared.MESSAGE_COLUMN_NAMES.map((column) =>
    column === 'contact_id'
      ? `${contact} AS contact_id`
      : column === 'conversation_id'
        ? `${conversation} AS conversation_id`
        : `m.${column}`,
  ).join(', ');

/**
 * A record's columns from `recordsWithConversation()` (record-refs.ts): the contact's and the conversation's
 * ids from its conversation's row `c`.
 */
export const MESSAGE_COLUMNS = messageColumns('c.contact_id', 'c.id');

/**
 * What a history page lists of a record (alias `m`). A contact's page has read its conversation first and knows
 * the two ids; a campaign's page adds them from the conversation's row ({@link LISTED_CONVERSATION_COLUMNS}).
 */
export const LISTED_COLUMNS = shared.LISTED_COLUMN_NAMES.map((column) => `m.${column}`).join(', ');
export const LISTED_CONVERSATION_COLUMNS = 'c.contact_id, c.id AS conversation_id';
export const DLR_COLUMNS = shared.DLR_COLUMN_NAMES.join(', ');
/** A delivery (`d`) with its event (`e`) and their record (`m`). */
export const DELIVERY_COLUMNS = `${shared.deliveryColumns(RECIPIENT_COLUMNS)}, ${ITEM_COLUMNS}`;
/** An event's columns from `eventsWithRecord` (record-refs.ts): the message id and number from its record `m`. */
export const EVENT_COLUMNS = `e.seq, e.id, ${RECIPIENT_COLUMNS}, e.recorded_at, ${ITEM_COLUMNS}`;

/**
 * The named parameters of a message write (everything but the key, the sequence and createdAt); no contact:
 * the conversation's row holds it.
 */
export type MessageParams = Omit<shared.MessageRow<Columns>, 'created_at' | 'contact_id'> & {
  account_id: string;
};

export function messageParams(accountId: string, m: StoredMessage): MessageParams {
  const receipt = m.sms?.receipt ?? null;
  return {
    account_id: accountId,
    id: m.id,
    channel_user_id: m.channelUserId,
    channel: m.channel,
    direction: m.direction,
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
  'account_id, seq, created_at, id, channel, direction, channel_user_id, conversation_ref, ' +
  'campaign_id, text, content, status, sms_status, network, price, counts, dr_statuscode, dr_errcode, dr_time';

/**
 * A new record's values for `insertMessage`: one array, no object per row to build and bind by name. The
 * account and the conversation (whose contact is the record's) by their refs.
 */
export function newMessageValues(
  accountRef: number,
  seq: number,
  m: StoredMessage,
  conversationRef: number,
): SqlValue[] {
  const sms = m.sms;
  const receipt = sms?.receipt ?? null;
  return [
    accountRef,
    seq,
    m.createdAt.getTime(),
    m.id,
    m.channel,
    m.direction,
    m.channelUserId,
    conversationRef,
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

/** A parked receipt as JSON: the normalized item, its time as epoch milliseconds. */
export const parkedJson = (r: ReceiptInput): string => JSON.stringify({ ...r, drTime: r.drTime.getTime() });

/** A parked carrier receipt as JSON: the item (its time as epoch milliseconds) and the accounts it may reach. */
export const parkedCarrierJson = (r: CarrierReceiptInput, accounts: RouteAccounts): string =>
  JSON.stringify({ ...r, drTime: r.drTime.getTime(), accounts });
