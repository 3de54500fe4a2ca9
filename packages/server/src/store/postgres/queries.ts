import type pg from 'pg';
import { isUuid } from '../../domain/formats.js';
import type { DlrRow, ListedRow, MessageRow } from '../rows.js';
import type { HistoryQuery, QueryStore } from '../store.js';
import { ACCOUNT, joinRecord } from './probes.js';
import { type Columns, DLR_COLUMNS, fromRow, LISTED_COLUMNS, MESSAGE_COLUMNS } from './rows.js';

/**
 * Runs one read of an account's data on the pool the read routing picks (read-routing.ts): a replica fit to
 * serve it, else the primary. `run` may be called twice (a failed replica read runs again on the primary).
 */
export type ReadRouter = <T>(accountId: string, run: (pool: pg.Pool) => Promise<T>) => Promise<T>;

/**
 * The read paths of the query endpoints on PostgreSQL: /dlr, messages by id, history, resolving a contact. They
 * read where `read` sends them, a replica when one is fit (the feed, in outbox.ts, reads the primary). Every
 * statement is named, so each connection parses and plans it once.
 */
export function queries(
  read: ReadRouter,
): Omit<QueryStore, 'listReceiptEvents' | 'listStoredReceiptEvents' | 'reviewSummary'> {
  return {
    async findDlr(accountId, messageId) {
      if (!isUuid(accountId)) return [];
      const result = await read(accountId, (pool) =>
        pool.query<DlrRow<Columns>>({
          name: 'wb_dlr',
          text: `SELECT ${DLR_COLUMNS}
               FROM message_keys k
               ${joinRecord('k')}
               WHERE k.account_id = $1 AND k.id = $2 AND m.sms_status IS NOT NULL
               ORDER BY k.seq`,
          values: [accountId, messageId],
        }),
      );
      return result.rows.map(fromRow.dlrRecipient);
    },
    async findMessagesByIds(accountId, ids, campaignId) {
      if (ids.length === 0 || !isUuid(accountId)) return [];
      const values: unknown[] = [accountId, ids];
      if (campaignId !== undefined) values.push(campaignId);
      const result = await read(accountId, (pool) =>
        pool.query<MessageRow<Columns>>({
          name: campaignId === undefined ? 'wb_messages_by_ids' : 'wb_messages_by_ids_campaign',
          // The account behind an InitPlan (probes.ts ACCOUNT): told the account has a handful of keys, the
          // planner would scan them all with the ids as a filter rather than probe each id.
          text: `SELECT ${MESSAGE_COLUMNS}
               FROM message_keys k
               ${joinRecord('k')}
               WHERE k.account_id = ${ACCOUNT} AND k.id = ANY($2::text[])
                 ${campaignId === undefined ? '' : 'AND m.campaign_id = $3'}
               ORDER BY m.created_at, m.id, m.channel_user_id`,
          values,
        }),
      );
      return result.rows.map(fromRow.message);
    },
    async resolveContact(accountId, channel, channelUserId) {
      if (!isUuid(accountId)) return null;
      const result = await read(accountId, (pool) =>
        pool.query<{ contact_id: string }>({
          name: 'wb_resolve_contact',
          text: 'SELECT contact_id FROM identities WHERE account_id = $1 AND channel = $2 AND channel_user_id = $3',
          values: [accountId, channel, channelUserId],
        }),
      );
      return result.rows[0]?.contact_id ?? null;
    },
    async listHistory(accountId, query) {
      if (!isUuid(accountId) || (query.contactId !== undefined && !isUuid(query.contactId))) return [];
      const statement = historyStatement(accountId, query);
      const result = await read(accountId, (pool) =>
        pool.query<ListedRow<Columns> & { contact_id: string; conversation_id: string }>(statement),
      );
      return result.rows.map((row) => fromRow.listed(row, row.contact_id, row.conversation_id));
    },
  };
}

/**
 * The keyset query for one shape of history request. Each shape (contact or campaign, with or without the
 * other filters, first page or next) is its own named statement, so each gets a plan that walks its index
 * backwards from the cursor: one generic statement with `$n IS NULL OR …` would let a generic plan filter
 * instead, and deep pages would then cost their depth.
 */
function historyStatement(accountId: string, query: HistoryQuery): pg.QueryConfig {
  const values: unknown[] = [accountId];
  const param = (value: unknown): string => {
    values.push(value);
    return `$${values.length}`;
  };
  const where = ['m.account_id = $1'];
  const shape: string[] = [];
  if (query.contactId !== undefined) {
    if (query.channel === undefined) throw new Error('a contact history query needs a channel');
    shape.push('contact');
    where.push(
      `m.conversation_id = (SELECT c.id FROM conversations c WHERE c.account_id = $1 AND c.contact_id = ${param(query.contactId)}::uuid AND c.channel = ${param(query.channel)})`,
    );
  } else if (query.campaignId === undefined) {
    throw new Error('a history query needs a contactId or a campaignId');
  } else if (query.channel !== undefined) {
    shape.push('channel');
    where.push(`m.channel = ${param(query.channel)}`);
  }
  if (query.campaignId !== undefined) {
    shape.push('campaign');
    where.push(`m.campaign_id = ${param(query.campaignId)}`);
  }
  if (query.before !== undefined) {
    shape.push('before');
    const at = param(query.before.createdAt.toISOString());
    // The plain bound on created_at lets PostgreSQL skip newer month partitions; the row comparison is the
    // exact keyset.
    where.push(
      `m.created_at <= ${at}::timestamptz`,
      `(m.created_at, m.id, m.channel_user_id) < (${at}::timestamptz, ${param(query.before.id)}, ${param(query.before.channelUserId)})`,
    );
  }
  const limit = param(query.limit);
  return {
    name: `wb_history_${shape.join('_')}`,
    text: `SELECT ${LISTED_COLUMNS} FROM messages m WHERE ${where.join(' AND ')}
           ORDER BY m.created_at DESC, m.id DESC, m.channel_user_id DESC LIMIT ${limit}`,
    values,
  };
}
