import type { RouteAccounts } from '../../domain/ingest/plan-carrier-receipts.js';
import type { CarrierReceiptInput, ReceiptInput } from '../../domain/ingest/precedence.js';
import * as shared from '../rows.js';

/**
 * Rows as node-postgres returns them through our pool (timestamptz → Date, json and arrays → values, numeric and
 * int8 → number), mapped to the domain by the shared mapping (store/rows.ts).
 */

export type Columns = { time: Date; json: unknown; flag: boolean };

// Modules name the shared row types with these column types (`MessageRow<Columns>`); the outbox its own.
export type DeliveryRow = shared.DeliveryRow<Columns>;
export type AttemptRow = shared.AttemptRow<Columns>;
export type EventRow = shared.EventRow<Columns>;

export const fromRow = shared.rowMappers<Columns>({ date: (value) => value, json: (value) => value });
export const {
  attempt: attemptFromRow,
  delivery: deliveryFromRow,
  event: eventFromRow,
  storedEvent: storedEventFromRow,
} = fromRow;

export const ACCOUNT_COLUMNS = shared.ACCOUNT_COLUMNS;
/** The message columns, qualified by the alias `m` so they can sit in a join. */
export const MESSAGE_COLUMNS = shared.MESSAGE_COLUMN_NAMES.map((column) => `m.${column}`).join(', ');
/** What a history page lists of a record (alias `m`), its contact's and conversation's ids included. */
export const LISTED_COLUMNS = [...shared.LISTED_COLUMN_NAMES, 'contact_id', 'conversation_id']
  .map((column) => `m.${column}`)
  .join(', ');
/** Only what /dlr shows (alias `m`). */
export const DLR_COLUMNS = shared.DLR_COLUMN_NAMES.map((column) => `m.${column}`).join(', ');
export const DELIVERY_COLUMNS = shared.DELIVERY_COLUMNS;
export const EVENT_COLUMNS = shared.EVENT_COLUMNS;

/** Key of a message record inside one account, for in-memory maps: the planner's, so loaded maps fit it. */
export { recordKey } from '../../domain/ingest/plan-messages.js';

/** A parked receipt as stored: the normalized item, `drTime` as an ISO string (JSON has no dates). */
export const parkedJson = (r: ReceiptInput): string =>
  JSON.stringify({ ...r, drTime: r.drTime.toISOString() });

/** A parked carrier receipt as stored: the item (`drTime` as an ISO string) and the accounts it may reach. */
export const parkedCarrierJson = (r: CarrierReceiptInput, accounts: RouteAccounts): string =>
  JSON.stringify({ ...r, drTime: r.drTime.toISOString(), accounts });
