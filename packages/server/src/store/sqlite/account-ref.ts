/**
 * On SQLite every table of an account's data (its records, receipt events, deliveries, parked receipts,
 * carrier pairs and review rollup) keys the account by a small integer, its ref in `account_refs`, instead of
 * its 36-character id: the id was in every row and every index entry, 27% of the file
 * (docs/benchmarks.md, "Sixth pass"). The service speaks ids; these two pieces of SQL translate at the
 * statement's edge, so the translation is one indexed read per execution and no process keeps a cache that
 * another could make stale. An ingest batch reads its account's ref once, inside its transaction
 * (events.ts accountOfBatch), and binds the number in the rows it writes. `accounts` itself and
 * `console_sessions` (whose foreign key removes a deleted account's sessions) keep the id.
 *
 * A ref is given by a trigger when the account's row is inserted and never changes or goes: the row stays when
 * the account is deleted, so an id re-created later gets its old ref back and no ref ever names two ids.
 */

/** The ref of the account whose id is the statement parameter `param` (`?` or `@name`); NULL for none. */
export const refOf = (param: string): string => `(SELECT ref FROM account_refs WHERE id = ${param})`;

/** The id of the account whose ref is in `column`, for rows the service reads across accounts. */
export const idOfRef = (column: string): string => `(SELECT id FROM account_refs WHERE ref = ${column})`;
