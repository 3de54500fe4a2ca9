import type {
  Channel,
  Direction,
  DrErrcode,
  DrStatuscode,
  MessageStatus,
  SendStatus,
  SettableStatus,
} from './vocabulary.js';

/** An account as the operator API shows it (secrets are never part of it). */
export interface Account {
  id: string;
  name: string;
  key: string;
  ipWhitelist: string[];
  dlrQueryEnabled: boolean;
  balance: number;
  creditLimit: number;
  callbackUrl: string | null;
  /** Deliveries are queued only while true; a `410 Gone` from the callback turns it off. */
  callbackEnabled: boolean;
  createdAt: Date;
}

/** What authentication needs: the account plus the HMAC of its secret under the pepper. */
export interface AccountWithSecret extends Account {
  secretHash: Buffer;
}

/** A new account as stored; `callbackSecret` is sealed (domain/secret-box.ts): the server signs with it. */
export interface NewAccount extends Account {
  secretHash: Buffer;
  callbackSecret: string;
}

/**
 * The sealed callback secrets of an account: the current one, and the previous one while its grace period
 * after a rotation lasts.
 */
export interface CallbackSecrets {
  current: string;
  previous: string | null;
  previousUntil: Date | null;
}

/** Fields an operator may change with PATCH; absent means unchanged, `callbackUrl: null` clears. */
export interface AccountPatch {
  name?: string;
  ipWhitelist?: string[];
  dlrQueryEnabled?: boolean;
  balance?: number;
  creditLimit?: number;
  callbackUrl?: string | null;
  callbackEnabled?: boolean;
}

/** A delivery receipt recorded for one SMS recipient. */
export interface Receipt {
  drStatuscode: DrStatuscode;
  drErrcode: DrErrcode;
  /** Report time, millisecond precision, UTC. */
  drTime: Date;
}

/** The SMS-specific state of one outbound SMS recipient. */
export interface SmsState {
  status: SendStatus;
  network: string | null;
  price: number;
  counts: number;
  receipt: Receipt | null;
}

/**
 * One stored message record, identified by (account, id, channelUserId). An SMS id sent to several numbers
 * is one record per number. The total order of records is (createdAt, id, channelUserId) ascending.
 */
export interface StoredMessage {
  id: string;
  channel: Channel;
  direction: Direction;
  contactId: string;
  channelUserId: string;
  conversationId: string;
  campaignId: string | null;
  text: string | null;
  content: Record<string, unknown> | null;
  /** The operator-set status of an outbound non-SMS message; null for SMS (derived) and inbound (received). */
  status: SettableStatus | null;
  /** Present exactly for outbound SMS records. */
  sms: SmsState | null;
  createdAt: Date;
}

/** What `/dlr` shows of a recipient: the store reads only these columns for it. */
export type DlrRecipient = Pick<StoredMessage, 'id' | 'channelUserId' | 'sms'>;

/**
 * A record as a history page lists it: what a message record shows (domain/wire.ts MessageRecord), its status
 * derived, createdAt still a Date. A page reads only the columns these need (not the SMS send state and the
 * receipt beyond its status code) and maps each row once.
 */
export interface ListedMessage extends Omit<StoredMessage, 'status' | 'sms'> {
  status: MessageStatus;
}

/** A place in the total order of records; cursors carry one. */
export interface Position {
  createdAt: Date;
  id: string;
  channelUserId: string;
}

export const positionOf = (m: Position): Position => ({
  createdAt: m.createdAt,
  id: m.id,
  channelUserId: m.channelUserId,
});

/**
 * Compares two positions in the total order (createdAt, id, channelUserId). Strings compare as UTF-8 bytes,
 * as SQLite BINARY and PostgreSQL COLLATE "C" do (JavaScript's `<` compares UTF-16 code units, which differs
 * above U+FFFF).
 */
export function comparePositions(a: Position, b: Position): number {
  const t = a.createdAt.getTime() - b.createdAt.getTime();
  if (t !== 0) return t;
  return (
    Buffer.compare(Buffer.from(a.id), Buffer.from(b.id)) ||
    Buffer.compare(Buffer.from(a.channelUserId), Buffer.from(b.channelUserId))
  );
}

/**
 * Record status as the contract derives it (CONTRACT §3), from the columns it depends on: the direction, the
 * operator-set status, an outbound SMS recipient's send status and its receipt's detailed code (null where
 * there is none).
 */
export function statusOf(
  direction: Direction,
  status: SettableStatus | null,
  sendStatus: SendStatus | null,
  drStatuscode: DrStatuscode | null,
): MessageStatus {
  if (direction === 'inbound') return 'received';
  if (sendStatus === null) return status ?? 'sent';
  switch (sendStatus) {
    case '1':
      return 'pending';
    case '400':
      return 'failed';
    default:
      if (drStatuscode === null || drStatuscode === 'accepted') return 'sent';
      return drStatuscode === 'delivered' ? 'delivered' : 'failed';
  }
}

/** A stored record's status (CONTRACT §3). */
export const messageStatus = (m: StoredMessage): MessageStatus =>
  statusOf(m.direction, m.status, m.sms?.status ?? null, m.sms?.receipt?.drStatuscode ?? null);

/** A stored record as a page lists it ({@link ListedMessage}). */
export const listedMessage = (m: StoredMessage): ListedMessage => ({
  id: m.id,
  channel: m.channel,
  direction: m.direction,
  contactId: m.contactId,
  channelUserId: m.channelUserId,
  conversationId: m.conversationId,
  campaignId: m.campaignId,
  text: m.text,
  content: m.content,
  status: messageStatus(m),
  createdAt: m.createdAt,
});
