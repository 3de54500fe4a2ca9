import type { Delivery } from '../../domain/deliveries/delivery.js';
import type { DlrRecipient, StoredMessage } from '../../domain/records.js';
import { type DlrItem, toDlrItem } from '../../domain/wire.js';
import { itemJsonOf, itemOf, storedItem } from '../event-item.js';
import { type DeliveryRow, fromRow, type ItemColumns } from './rows.js';

/**
 * On SQLite a receipt event whose item is its record's `/dlr` item as the record stands now stores no item
 * (`receipt_events.item` NULL, migration 12): the record's SMS and receipt columns already hold it, and the item
 * was 66 of an event's 134 bytes (docs/benchmarks.md, "Ninth pass"). Most events are their record's latest.
 *
 * The rule that keeps it true: before a write changes what a record's item is, the record's events that store
 * none get the item as it stood (records.ts, `fillItemsOf*`). An event is written without its item only when
 * the item is the one its record is written with in the same transaction (events.ts), and every read takes
 * the record's columns in the same statement as the event (rows.ts, ItemColumns), so it sees the one state
 * both belong to.
 */

/** The item to store of a recipient as it stands (store/event-item.ts): what an event without one stands for. */
export const currentItemOf = (recipient: DlrRecipient): string =>
  storedItem(toDlrItem(recipient), recipient.id, recipient.channelUserId);

/** What to store for an event's item (stored form): none when it is its record's as written, `written`. */
export const itemToStore = (item: string, written: DlrRecipient | undefined): string | null =>
  written !== undefined && currentItemOf(written) === item ? null : item;

/**
 * The item to give back to a record's events that store none, before the write of `after` changes what `before`
 * stood for; null when nothing changes. Only an applied receipt records an event, and its item carries that
 * receipt: a record without one has no event standing for its current item.
 */
export function itemToKeep(before: StoredMessage | undefined, after: StoredMessage): string | null {
  if (!before?.sms?.receipt) return null;
  const item = currentItemOf(before);
  return item === currentItemOf(after) ? null : item;
}

/** An event read with its message id, recipient and {@link ItemColumns}. */
type ItemRow = { message_id: string; recipient: string } & ItemColumns;

/** The recipient, as it stands, of an event read without its item. */
const recipientOf = (row: ItemRow): DlrRecipient =>
  fromRow.dlrRecipient({
    id: row.message_id,
    channel_user_id: row.recipient,
    sms_status: row.sms_status,
    network: row.network,
    price: row.price,
    counts: row.counts,
    dr_statuscode: row.dr_statuscode,
    dr_errcode: row.dr_errcode,
    dr_time: row.dr_time,
  });

/** The row's item as stored: its own, or its record's current one where the event stores none. */
export const storedItemOf = (row: ItemRow): string => row.item ?? currentItemOf(recipientOf(row));

/**
 * The item's JSON as recorded (store/event-item.ts itemJsonOf): where the event stores none, its record's item
 * as JSON.stringify writes it, which is what itemJsonOf would rebuild from it (the feed's and the relay's path).
 */
export const itemJsonOfRow = (row: ItemRow): string =>
  row.item === null
    ? JSON.stringify(toDlrItem(recipientOf(row)))
    : itemJsonOf(row.message_id, row.recipient, row.item);

/** The item itself (store/event-item.ts itemOf). */
export const itemOfRow = (row: ItemRow): DlrItem =>
  row.item === null ? toDlrItem(recipientOf(row)) : itemOf(row.message_id, row.recipient, row.item);

/** A delivery read with its event's {@link ItemColumns}. */
export const deliveryFromRow = (row: DeliveryRow): Delivery =>
  fromRow.delivery({ ...row, item: storedItemOf(row) });
