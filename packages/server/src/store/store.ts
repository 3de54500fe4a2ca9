import type { BatchOutcome, MessageUpsert, ReceiptInput, ReceiptOutcome } from '../domain/ingest.js';
import type {
  Account,
  AccountPatch,
  AccountWithSecret,
  NewAccount,
  Position,
  StoredMessage,
} from '../domain/records.js';
import type { Channel } from '../domain/vocabulary.js';

/**
 * A history query: one contact's conversation on one channel, a campaign, or both. At least one of
 * `contactId` and `campaignId` is set; `contactId` always comes with `channel`, and with `campaignId` alone
 * `channel` is an optional filter.
 */
/** How an ingest batch runs. */
export interface IngestOptions {
  /**
   * Check the batch against the stored state and report its item errors, but write nothing. The operator API
   * uses it to name the state errors of the well-formed items when other items of the batch are malformed.
   * @default false
   */
  dryRun?: boolean;
}

export interface HistoryQuery {
  contactId?: string;
  channel?: Channel;
  campaignId?: string;
  /** Only records strictly older than this position in the total order. */
  before?: Position;
  limit: number;
}

/**
 * Everything the service keeps. Routes and plugins reach storage only through this interface; one
 * conformance suite (test/conformance) runs unchanged against every implementation.
 *
 * Every method is scoped by account where data belongs to one: no call can read another account's rows.
 * Implementations throw on infrastructure failure (the caller maps that to "system error").
 */
export interface Store {
  readonly engine: 'sqlite' | 'postgres';

  /** Brings the schema up to date. Safe to call when it already is, and from several processes at once. */
  migrate(): Promise<void>;
  /** Resolves when the database answers a trivial query; rejects otherwise. */
  ping(): Promise<void>;
  close(): Promise<void>;

  /** True once any account exists (a fresh database gets the demo data). */
  hasAccounts(): Promise<boolean>;
  /** Inserts an account; throws {@link DuplicateKeyError} when its key is taken (the caller draws another). */
  createAccount(account: NewAccount): Promise<Account>;
  getAccount(id: string): Promise<Account | null>;
  getAccountByKey(key: string): Promise<AccountWithSecret | null>;
  /** The clear callback signing secret, or null for an unknown account. */
  getCallbackSecret(id: string): Promise<string | null>;
  updateAccount(id: string, patch: AccountPatch): Promise<Account | null>;
  setSecretHash(id: string, secretHash: Buffer): Promise<Account | null>;

  /**
   * Applies a batch of messages in order, in one transaction, all or nothing. Returns item errors for every
   * item that cannot apply (an identity owned by another contact, a contact that already has another
   * identity on that channel, a record that exists on another channel) and then writes nothing.
   */
  ingestMessages(
    accountId: string,
    items: MessageUpsert[],
    now: Date,
    options?: IngestOptions,
  ): Promise<BatchOutcome<{ accepted: number }>>;
  /**
   * Applies a batch of receipts in order, in one transaction, all or nothing, under the precedence of
   * CONTRACT §5 (domain/ingest.ts `applyReceipt`). The item error is a missing `to` for a message with
   * several recipients.
   */
  ingestReceipts(
    accountId: string,
    items: ReceiptInput[],
    now: Date,
    options?: IngestOptions,
  ): Promise<BatchOutcome<ReceiptOutcome>>;

  /** The outbound SMS recipients of one message id, in the order they were first ingested. */
  findDlr(accountId: string, messageId: string): Promise<StoredMessage[]>;
  /** Records with these ids (every recipient of each), oldest first, optionally only of one campaign. */
  findMessagesByIds(accountId: string, ids: readonly string[], campaignId?: string): Promise<StoredMessage[]>;
  /** The contact that owns this identity, or null. */
  resolveContact(accountId: string, channel: Channel, channelUserId: string): Promise<string | null>;
  /** Up to `limit` records matching the query, strictly before `before`, NEWEST first (keyset, no OFFSET). */
  listHistory(accountId: string, query: HistoryQuery): Promise<StoredMessage[]>;

  /** Retention: deletes message records created before `cutoff`; returns how many went. */
  prune(cutoff: Date): Promise<number>;
}

/** Thrown by {@link Store.createAccount} when the generated key collides with an existing one. */
export class DuplicateKeyError extends Error {
  override readonly name = 'DuplicateKeyError';
}
