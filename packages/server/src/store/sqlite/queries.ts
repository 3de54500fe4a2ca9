import type Database from 'better-sqlite3';
import { comparePositions, type ListedMessage, positionOf } from '../../domain/records.js';
import type { DlrRow, ListedRow, MessageRow } from '../rows.js';
import type { HistoryQuery, QueryStore } from '../store.js';
import { refOf } from './account-ref.js';
import { isBusy } from './busy.js';
import { type Prepared, preparer } from './database.js';
import { recordsWithConversation } from './record-refs.js';
import {
  type Columns,
  DLR_COLUMNS,
  fromRow,
  LISTED_COLUMNS,
  LISTED_CONVERSATION_COLUMNS,
  MESSAGE_COLUMNS,
} from './rows.js';

/** The parameters of a history page; `before_*` only on the statements that continue from a cursor. */
export interface HistoryParams {
  account: string;
  /** A contact's history: the conversation's ref. */
  conversation_ref?: number;
  campaign?: string;
  channel?: string;
  before_at?: number;
  before_id?: string;
  before_user?: string;
  /** The millisecond whose records `tie` reads. */
  tie_at?: number;
  limit: number;
}

export type HistoryKind = 'conversation' | 'conversationCampaign' | 'campaign' | 'campaignChannel';

/** A history page's row: a campaign's page also reads each record's contact and conversation ids. */
type HistoryRow = ListedRow<Columns> & { contact_id?: string; conversation_id?: string };

// Each filter names its index so the plan cannot drift to a scan-and-sort; a wrong name fails at open. A
// contact's history is one conversation, read first (queries.conversation): its ids are known, not read.
// A conversation's indexes key its records by time alone (migration 11): they are read in (created_at, ref)
// order, and byTime marks that the records of one millisecond are put in the contract's order in JavaScript
// (pageByTime). A campaign's index keeps the whole keyset: one campaign's records at one time are common.
const HISTORY_FILTERS: Record<HistoryKind, { index: string; where: string; byTime: boolean }> = {
  conversation: {
    index: 'messages_history',
    where: 'm.conversation_ref = @conversation_ref',
    byTime: true,
  },
  conversationCampaign: {
    index: 'messages_conversation_campaign',
    where: 'm.conversation_ref = @conversation_ref AND m.campaign_id = @campaign',
    byTime: true,
  },
  campaign: { index: 'messages_campaign', where: 'm.campaign_id = @campaign', byTime: false },
  campaignChannel: {
    index: 'messages_campaign',
    where: 'm.campaign_id = @campaign AND m.channel = @channel',
    byTime: false,
  },
};

/**
 * A page's read: the first page, or the page after a cursor (`keyset`); `tie` reads instead every record of
 * the millisecond `@tie_at` that such a page may hold (byTime only), in no order.
 */
function historyStatement(
  db: Database.Database,
  kind: HistoryKind,
  keyset: boolean,
  tie = false,
): Prepared<[HistoryParams], HistoryRow> {
  const { index, where, byTime } = HISTORY_FILTERS[kind];
  const from = byTime
    ? `${LISTED_COLUMNS} FROM messages m INDEXED BY ${index}`
    : `${LISTED_COLUMNS}, ${LISTED_CONVERSATION_COLUMNS} FROM ${recordsWithConversation(index)}`;
  // Row-value comparison under BINARY collation: the same total order as comparePositions, and an index
  // range rather than OFFSET, so rows arriving between pages cannot shift a later page. The index by time
  // alone takes its range from the first term.
  const after = keyset
    ? `${byTime ? ' AND m.created_at <= @before_at' : ''}
         AND (m.created_at, m.id, m.channel_user_id) < (@before_at, @before_id, @before_user)`
    : '';
  if (tie) {
    return db.prepare<
      [HistoryParams],
      HistoryRow
    >(`SELECT ${from} WHERE m.account_id = ${refOf('@account')} AND ${where}${after}
       AND m.created_at = @tie_at`);
  }
  const order = byTime
    ? 'm.created_at DESC, m.ref DESC'
    : 'm.created_at DESC, m.id DESC, m.channel_user_id DESC';
  return db.prepare<[HistoryParams], HistoryRow>(
    `SELECT ${from}
     WHERE m.account_id = ${refOf('@account')} AND ${where}${after}
     ORDER BY ${order}
     LIMIT @limit`,
  );
}

/** The statements of the query endpoints' reads, prepared once when the store opens. */
export function prepareQueries(db: Database.Database) {
  const prepare = preparer(db);
  const history = (kind: HistoryKind) => {
    const byTime = HISTORY_FILTERS[kind].byTime;
    return {
      first: historyStatement(db, kind, false),
      next: historyStatement(db, kind, true),
      firstTie: byTime ? historyStatement(db, kind, false, true) : undefined,
      nextTie: byTime ? historyStatement(db, kind, true, true) : undefined,
    };
  };
  return {
    // The primary key finds every recipient of the id; sorting that handful by seq is cheap.
    // No ORDER BY: SQLite's sorter costs ~4× the primary-key lookup even for the 1–3 rows of a message
    // (measured under /dlr load, docs/benchmarks.md), so findDlr orders by `seq` in JavaScript. Only the
    // columns /dlr shows are read.
    dlrItems: prepare<[string, string], DlrRow<Columns> & { seq: number }>(
      `SELECT ${DLR_COLUMNS}, seq FROM messages
       WHERE account_id = ${refOf('?')} AND id = ? AND sms_status IS NOT NULL`,
    ),
    // Ordered in JavaScript, as findDlr is: SQLite's sorter costs more than the rows' lookups. The campaign
    // filter is a statement of its own rather than `(@campaign IS NULL OR …)` on every call.
    messagesByIds: prepare<[string, string], MessageRow<Columns>>(
      `SELECT ${MESSAGE_COLUMNS} FROM ${recordsWithConversation()}
       WHERE m.account_id = ${refOf('?')} AND m.id IN (SELECT value FROM json_each(?))`,
    ),
    messagesByIdsInCampaign: prepare<[string, string, string], MessageRow<Columns>>(
      `SELECT ${MESSAGE_COLUMNS} FROM ${recordsWithConversation()}
       WHERE m.account_id = ${refOf('?')} AND m.id IN (SELECT value FROM json_each(?)) AND m.campaign_id = ?`,
    ),
    identity: prepare<[string, string, string], { contact_id: string }>(
      `SELECT contact_id FROM identities WHERE account_id = ${refOf('?')} AND channel = ? AND channel_user_id = ?`,
    ),
    conversation: prepare<[string, string, string], { ref: number; id: string }>(
      `SELECT ref, id FROM conversations WHERE account_id = ${refOf('?')} AND contact_id = ? AND channel = ?`,
    ),
    history: {
      conversation: history('conversation'),
      conversationCampaign: history('conversationCampaign'),
      campaign: history('campaign'),
      campaignChannel: history('campaignChannel'),
    } satisfies Record<HistoryKind, unknown>,
  };
}

/** The outbound SMS recipients of one id, in ingest order: findDlr's and findDlrNow's one read. */
function dlrRecipients(sql: QueryStatements, accountId: string, messageId: string) {
  const rows = sql.dlrItems.all(accountId, messageId);
  if (rows.length > 1) rows.sort((a, b) => a.seq - b.seq);
  return rows.map(fromRow.dlrRecipient);
}

export type QueryStatements = ReturnType<typeof prepareQueries>;

/** The read paths of the query endpoints on SQLite: /dlr, messages by id, history, resolving a contact. */
export function queries(
  sql: QueryStatements,
): Omit<QueryStore, 'listReceiptEvents' | 'listStoredReceiptEvents' | 'reviewSummary'> {
  return {
    async findDlr(accountId, messageId) {
      return dlrRecipients(sql, accountId, messageId);
    },
    findDlrNow(accountId, messageId) {
      try {
        return dlrRecipients(sql, accountId, messageId);
      } catch (error) {
        // Another connection holds a lock it needs: findDlr waits for it, asynchronously (busy.ts).
        if (isBusy(error)) return undefined;
        throw error;
      }
    },
    async findMessagesByIds(accountId, ids, campaignId) {
      if (ids.length === 0) return [];
      const rows =
        campaignId === undefined
          ? sql.messagesByIds.all(accountId, JSON.stringify(ids))
          : sql.messagesByIdsInCampaign.all(accountId, JSON.stringify(ids), campaignId);
      // Oldest first, in the order of history's positions (created_at, id, channel_user_id, bytewise).
      return rows.map(fromRow.message).sort((a, b) => comparePositions(positionOf(a), positionOf(b)));
    },
    async resolveContact(accountId, channel, channelUserId) {
      return sql.identity.get(accountId, channel, channelUserId)?.contact_id ?? null;
    },
    async listHistory(accountId, query) {
      return listHistory(sql, accountId, query);
    },
  };
}

function listHistory(sql: QueryStatements, accountId: string, query: HistoryQuery): ListedMessage[] {
  const params: HistoryParams = { account: accountId, limit: query.limit };
  let statements: QueryStatements['history'][keyof QueryStatements['history']];
  let listed = fromCampaignRow;
  if (query.contactId !== undefined) {
    if (query.channel === undefined) throw new Error('a contact history query needs a channel');
    const conversation = sql.conversation.get(accountId, query.contactId, query.channel);
    if (!conversation) return [];
    params.conversation_ref = conversation.ref;
    // The page's records are this conversation's: its two ids are the same for every row, so none reads them.
    const contactId = query.contactId;
    listed = (row) => fromRow.listed(row, contactId, conversation.id);
    if (query.campaignId !== undefined) {
      params.campaign = query.campaignId;
      statements = sql.history.conversationCampaign;
    } else {
      statements = sql.history.conversation;
    }
  } else if (query.campaignId !== undefined) {
    params.campaign = query.campaignId;
    if (query.channel !== undefined) {
      params.channel = query.channel;
      statements = sql.history.campaignChannel;
    } else {
      statements = sql.history.campaign;
    }
  } else {
    throw new Error('a history query needs a contactId or a campaignId');
  }
  let page = statements.first;
  let tie = statements.firstTie;
  if (query.before !== undefined) {
    params.before_at = query.before.createdAt.getTime();
    params.before_id = query.before.id;
    params.before_user = query.before.channelUserId;
    page = statements.next;
    tie = statements.nextTie;
  }
  return tie === undefined ? page.all(params).map(listed) : pageByTime(page, tie, params, listed);
}

/** A campaign page's row: its statements read the record's contact and conversation ids from the conversation. */
function fromCampaignRow(row: HistoryRow): ListedMessage {
  if (row.contact_id === undefined || row.conversation_id === undefined) {
    throw new Error('a history row without its contact and conversation');
  }
  return fromRow.listed(row, row.contact_id, row.conversation_id);
}

/**
 * The first `limit` records in the contract's order (created_at, id, channel_user_id, newest first) from an
 * index that orders them by (created_at, ref). Only records of one millisecond can be out of order, and only
 * the page's last millisecond can be cut short: one more record is read to tell, and when it shares that
 * millisecond, all of its records are read (`tie`) and sorted, so the page is the same as the full keyset's.
 */
function pageByTime(
  page: Prepared<[HistoryParams], HistoryRow>,
  tie: Prepared<[HistoryParams], HistoryRow>,
  params: HistoryParams,
  listed: (row: HistoryRow) => ListedMessage,
): ListedMessage[] {
  const limit = params.limit;
  let rows = page.all({ ...params, limit: limit + 1 });
  if (rows.length > limit) {
    const last = rows[limit - 1]?.created_at;
    if (rows[limit]?.created_at === last && last !== undefined) {
      const before = rows.filter((row) => row.created_at !== last);
      rows = before.concat(tie.all({ ...params, tie_at: last }));
    }
  }
  let tied = false;
  for (let i = 1; i < rows.length && !tied; i++) tied = rows[i]?.created_at === rows[i - 1]?.created_at;
  if (rows.length > limit && !tied) rows.length = limit;
  const messages = rows.map(listed);
  if (!tied) return messages;
  messages.sort((a, b) => comparePositions(positionOf(b), positionOf(a)));
  return messages.slice(0, limit);
}
