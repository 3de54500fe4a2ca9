/**
 * Every delivery rule in one namespace, for the engines' outboxes (store/sqlite/outbox.ts,
 * store/postgres/outbox.ts): both load rows, ask these, and write what they decide.
 */
export * from './attempt-outcome.js';
export * from './backfill.js';
export * from './claim-policy.js';
export * from './delivery.js';
export * from './finish.js';
export * from './redeliver.js';
