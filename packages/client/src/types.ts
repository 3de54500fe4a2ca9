/** The resources of the Waybill API, as the SDK hands them out (normalized; see each field). */

/** Channels a message travels on (CONTRACT §1). */
export type Channel = 'WHATSAPP' | 'APPLEMB' | 'VIBER' | 'SMS' | 'TELEGRAM' | 'RBM';

/** SMS send status: "1" in progress, "0" submitted to the carrier, "400" submission failed (spec §3). */
export type SendStatus = '1' | '0' | '400';

/** Delivery receipt status: 0 normal (`delivered`, `accepted`), 400 abnormal (every other code). */
export type DrStatus = 0 | 400;

/** Detailed receipt status (spec §3). */
export type DrStatuscode =
  | 'delivered'
  | 'accepted'
  | 'rejected'
  | 'failed'
  | 'expired'
  | 'deleted'
  | 'unknown';

/** Operator error codes of spec §2.1; see `describeErrcode`. */
export type DrErrcode = '0' | '1' | '2' | '3' | '4' | '5' | '6' | '7' | '8' | '10' | '11' | '12' | '99';

/** Fields every delivery receipt item has. */
export interface DlrItemBase {
  type: 'dlr';
  /** The queried message id. */
  messageid: string;
  /** Destination number: country code and number, no `+` or leading `00`. */
  to: string;
  /** Send status, always a string (the wire may carry a JSON number). */
  status: SendStatus;
  /** Price of one SMS, in the account's billing currency. */
  price: number;
  /** Billed parts (long messages are split). */
  counts: number;
  /** Operator network (MCC+MNC digits); absent when unknown. */
  network?: string;
}

/** A recipient for which a delivery receipt has been recorded. */
export interface DlrItemWithReceipt extends DlrItemBase {
  drStatus: DrStatus;
  drStatuscode: DrStatuscode;
  /** Operator error code, always a string (the wire may carry a JSON number); `'0'` is normal. */
  drErrcode: DrErrcode | (string & {});
  /** Report time as the service gave it: `yyyy-MM-dd HH:mm:ss.SSS`, UTC. */
  drTime: string;
  /** `drTime` parsed as UTC (an invalid `Date` if the service sent something unreadable). */
  drTimeDate: Date;
}

/** A recipient with no receipt yet. */
export interface DlrItemWithoutReceipt extends DlrItemBase {
  drStatus?: undefined;
  drStatuscode?: undefined;
  drErrcode?: undefined;
  drTime?: undefined;
  drTimeDate?: undefined;
}

/**
 * One SMS recipient of a message, as `GET /dlr` and delivery callbacks describe it. Narrow with
 * `hasReceipt(item)` (or `item.drStatus !== undefined`) to read the receipt fields.
 */
export type DlrItem = DlrItemWithReceipt | DlrItemWithoutReceipt;

/**
 * A recipient whose receipt says delivered; what `isDelivered` narrows to. Narrower than
 * `DlrItemWithReceipt`, so an item that is not delivered may still have a receipt (a failed one, say).
 */
export type DeliveredDlrItem = DlrItemWithReceipt & { drStatus: 0; drStatuscode: 'delivered' };

/** Status of a message record (CONTRACT §3); inbound messages are `received`. */
export type MessageStatus = 'pending' | 'sent' | 'delivered' | 'read' | 'failed' | 'received';

/** Direction of a message record. */
export type Direction = 'outbound' | 'inbound';

/**
 * A stored message. Identified by (`id`, `channelUserId`): an SMS id sent to several numbers is one record
 * per number. Records are ordered by (`createdAt`, `id`, `channelUserId`).
 */
export interface MessageRecord {
  id: string;
  channel: Channel;
  direction: Direction;
  contactId: string;
  channelUserId: string;
  conversationId: string;
  campaignId: string | null;
  text: string | null;
  /** Structured content, stored as the operator sent it. */
  content: Record<string, unknown> | null;
  status: MessageStatus;
  /** RFC 3339 with milliseconds, UTC (`2026-11-22T10:00:00.123Z`). */
  createdAt: string;
}

/** One page of message history, exactly as the service returned it: oldest first. */
export interface MessagePage {
  messages: MessageRecord[];
  /** Fetches the messages just older than this page; `null` when `hasMore` is false. */
  nextCursor: string | null;
  hasMore: boolean;
}

/**
 * One receipt event of the feed (`GET /receipts`): a receipt that was applied, with the recipient's state
 * right after it.
 *
 * @example
 * ```ts
 * for await (const event of client.receipts.list()) {
 *   console.log(event.id, event.recordedAt, event.receipt.messageid, event.receipt.to, event.receipt.drStatuscode);
 * }
 * ```
 */
export interface ReceiptEvent {
  /** `evt_` and 26 letters and digits; the same id is the `webhook-id` of the event's callback. */
  id: string;
  /** When the service recorded the event: RFC 3339 with milliseconds, UTC (`2026-11-22T10:00:00.123Z`). */
  recordedAt: string;
  /** The recipient's `/dlr` item as it stood right after this receipt, normalized like `dlr.get` items. */
  receipt: DlrItem;
}

/**
 * One page of the receipt feed, exactly as the service returned it: events oldest first.
 *
 * @example
 * ```ts
 * for await (const page of client.receipts.list({ limit: 500 }).pages()) {
 *   await store(page.receipts);
 *   await saveCheckpoint(page.nextCursor);
 * }
 * ```
 */
export interface ReceiptPage {
  receipts: ReceiptEvent[];
  /**
   * The position after the last event of this page (after an empty page, the position asked for): pass it
   * as `after` to get what comes next. Always a string, so a poller never loses its place.
   */
  nextCursor: string;
  /** Whether more events exist right now; when false, poll `nextCursor` later for new ones. */
  hasMore: boolean;
}

/** Per-call options of every request method. */
export interface RequestOptions {
  /** Abort the call (rejects with `AbortError`). */
  signal?: AbortSignal | undefined;
  /** Give up after this many milliseconds, retries included (rejects with `TimeoutError`). */
  timeoutMs?: number | undefined;
}

/** Something the caller should know about that is not an error; delivered to the `onWarning` hook. */
export interface WaybillWarning {
  /** `deprecated_endpoint`: the server lacks `GET /messages`; the SDK uses `/api/v1/contacts/messages`. */
  code: 'deprecated_endpoint';
  message: string;
}
