import { refOf } from './account-ref.js';

/**
 * On SQLite a message record names its conversation by the conversation's integer ref, and a receipt event its
 * recipient by the record's ref (each one's rowid, declared in migration 10), instead of carrying the ids those
 * rows hold: a conversation is one contact's on one channel, and a record is one recipient of one message id.
 * The ids were 72 bytes of every record, 36 of every history index entry and 48 of every event and of its index
 * entry by message (docs/benchmarks.md, "Seventh pass"). As with account refs, the service speaks ids and these
 * pieces of SQL translate at the statement's edge: a write finds a ref with one probe of a unique index, and a
 * read joins the row that holds the ids by its rowid. Ingest is the exception: a batch holds the refs of the
 * conversations and records it read or created, and writes by them (records.ts writeRecords, events.ts).
 */

/** Records with their conversation's row: `m` the record, `c` its conversation. `index` pins the record's index. */
export const recordsWithConversation = (index?: string): string =>
  `messages m${index ? ` INDEXED BY ${index}` : ''} JOIN conversations c ON c.ref = m.conversation_ref`;

/** The ref of the account's conversation whose id is the parameter `param`; NULL for none. */
export const conversationRefOf = (account: string, param: string): string =>
  `(SELECT ref FROM conversations WHERE account_id = ${refOf(account)} AND id = ${param})`;

/** Receipt events with their recipient's record: `e` the event, `m` the record. */
export const eventsWithRecord = 'receipt_events e JOIN messages m ON m.ref = e.message_ref';

/** The ref of the account's record of message id `id` to number `to` (parameters); NULL for none. */
export const recordRefOf = (account: string, id: string, to: string): string =>
  `(SELECT ref FROM messages WHERE account_id = ${refOf(account)} AND id = ${id} AND channel_user_id = ${to})`;
