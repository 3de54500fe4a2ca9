/**
 * What retention removes on SQLite, as pieces of SQL: the message records created before the cutoff (the
 * statement's `?`), found through each conversation's range of the history index (messages_history leads with
 * (account_id, conversation_ref, created_at), so only the expired range of each is visited), and their receipt
 * events through the events' index by record. Events and deliveries carry no time of their own record
 * (migration 11): a delivery and its attempts are found by their event's seq. Retention (prune.ts), the review
 * rollup's pruning (rollup.ts) and the outbox's (outbox.ts) walk the same records.
 */

/** The condition on `messages` that selects the expired records. */
export const EXPIRED_RECORDS_WHERE =
  '(account_id, conversation_ref) IN (SELECT account_id, ref FROM conversations) AND created_at < ?';

/** The (account_id, ref) of each expired record. */
export const EXPIRED_RECORD_REFS = `SELECT account_id, ref FROM messages WHERE ${EXPIRED_RECORDS_WHERE}`;

/** The expired records' events, `e`, for a FROM clause. */
export const EXPIRED_EVENTS = `receipt_events e INDEXED BY receipt_events_message
  WHERE (e.account_id, e.message_ref) IN (${EXPIRED_RECORD_REFS})`;
