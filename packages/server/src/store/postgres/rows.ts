import type { Account, AccountWithSecret, StoredMessage } from '../../domain/records.js';
import type {
  Channel,
  Direction,
  DrErrcode,
  DrStatuscode,
  SendStatus,
  SettableStatus,
} from '../../domain/vocabulary.js';

/**
 * Rows as node-postgres returns them through our pool (timestamptz → Date, json → object, numeric and int8 →
 * number), and their mapping to the domain.
 */

export interface AccountRow {
  id: string;
  name: string;
  key: string;
  secret_hash: Buffer;
  ip_whitelist: string[];
  dlr_query_enabled: boolean;
  balance: number;
  credit_limit: number;
  callback_url: string | null;
  created_at: Date;
}

export const ACCOUNT_COLUMNS =
  'id, name, key, secret_hash, ip_whitelist, dlr_query_enabled, balance, credit_limit, callback_url, created_at';

export function accountFromRow(row: AccountRow): Account {
  return {
    id: row.id,
    name: row.name,
    key: row.key,
    ipWhitelist: row.ip_whitelist,
    dlrQueryEnabled: row.dlr_query_enabled,
    balance: row.balance,
    creditLimit: row.credit_limit,
    callbackUrl: row.callback_url,
    createdAt: row.created_at,
  };
}

export function accountWithSecretFromRow(row: AccountRow): AccountWithSecret {
  return { ...accountFromRow(row), secretHash: row.secret_hash };
}

export interface MessageRow {
  id: string;
  channel: string;
  direction: string;
  contact_id: string;
  channel_user_id: string;
  conversation_id: string;
  campaign_id: string | null;
  text: string | null;
  content: Record<string, unknown> | null;
  status: string | null;
  sms_status: string | null;
  network: string | null;
  price: number | null;
  counts: number | null;
  dr_statuscode: string | null;
  dr_errcode: string | null;
  dr_time: Date | null;
  created_at: Date;
}

/** The message columns, qualified by the alias `m` so they can sit in a join. */
export const MESSAGE_COLUMNS = [
  'id',
  'channel',
  'direction',
  'contact_id',
  'channel_user_id',
  'conversation_id',
  'campaign_id',
  'text',
  'content',
  'status',
  'sms_status',
  'network',
  'price',
  'counts',
  'dr_statuscode',
  'dr_errcode',
  'dr_time',
  'created_at',
]
  .map((column) => `m.${column}`)
  .join(', ');

export function messageFromRow(row: MessageRow): StoredMessage {
  return {
    id: row.id,
    channel: row.channel as Channel,
    direction: row.direction as Direction,
    contactId: row.contact_id,
    channelUserId: row.channel_user_id,
    conversationId: row.conversation_id,
    campaignId: row.campaign_id,
    text: row.text,
    content: row.content,
    status: row.status as SettableStatus | null,
    sms:
      row.sms_status === null
        ? null
        : {
            status: row.sms_status as SendStatus,
            network: row.network,
            price: row.price ?? 0,
            counts: row.counts ?? 1,
            receipt:
              row.dr_statuscode === null
                ? null
                : {
                    drStatuscode: row.dr_statuscode as DrStatuscode,
                    drErrcode: (row.dr_errcode ?? '0') as DrErrcode,
                    drTime: row.dr_time ?? new Date(0),
                  },
          },
    createdAt: row.created_at,
  };
}

/**
 * Joins each row of `keys` (id, channel_user_id, created_at; account `$1`) to its record as `m`. A plain join
 * lets the planner filter on created_at after probing every month partition; a LATERAL subquery fenced with
 * OFFSET 0 stays a parameterized nested loop, whose Append PostgreSQL prunes at run time to the one partition
 * that holds each record. For the few records of a /dlr or by-ids lookup, that is one index probe instead of
 * one per month.
 */
export const joinRecord = (keys: string): string =>
  `CROSS JOIN LATERAL (
     SELECT * FROM messages m
     WHERE m.account_id = $1 AND m.id = ${keys}.id AND m.channel_user_id = ${keys}.channel_user_id
       AND m.created_at = ${keys}.created_at
     OFFSET 0
   ) m`;

/** Key of a message record inside one account, for in-memory maps. */
export const recordKey = (id: string, channelUserId: string): string => `${id}\u0000${channelUserId}`;
