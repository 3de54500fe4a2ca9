import type { AttemptOutcome } from '../domain/deliveries/attempt-outcome.js';
import type { Delivery, DeliveryDetail, DeliveryState } from '../domain/deliveries/delivery.js';
import type { ReceiptEvent, StoredReceiptEvent } from '../domain/deliveries/events.js';
import type { CarrierReceiptResult, RouteAccounts } from '../domain/ingest/plan-carrier-receipts.js';
import type {
  BatchOutcome,
  CarrierReceiptInput,
  MessageUpsert,
  ReceiptInput,
  ReceiptOutcome,
} from '../domain/ingest/precedence.js';
import type { IntakeRouteRecord } from '../domain/intake/route.js';
import type {
  Account,
  AccountPatch,
  AccountWithSecret,
  CallbackSecrets,
  DlrRecipient,
  ListedMessage,
  NewAccount,
  Position,
  StoredMessage,
} from '../domain/records.js';
import type { ReviewPeriod, ReviewRows } from '../domain/review.js';
import type { Channel } from '../domain/vocabulary.js';

/** What a message batch did: `accepted` items, and `events` recorded by parked receipts it applied. */
export interface MessageBatchResult {
  accepted: number;
  events: number;
}

/** How an ingest batch runs. */
export interface IngestOptions {
  /**
   * Check the batch against the stored state and report its item errors, but write nothing. The operator API
   * uses it to name the state errors of the well-formed items when other items of the batch are malformed.
   * @default false
   */
  dryRun?: boolean;
  /** Parked receipts that arrived before this instant are expired: never applied. @default no expiry */
  parkedSince?: Date;
}

/** How a batch of a route's receipts runs. */
export interface CarrierReceiptOptions {
  /**
   * The accounts the route may touch (its `accounts`, CONTRACT §12): a receipt whose recipient belongs to
   * another account is `forbidden` and writes nothing, and a parked one applies only to a recipient of these.
   * @default any account
   */
  accounts?: RouteAccounts;
}

/**
 * A history query: one contact's conversation on one channel, a campaign, or both. At least one of
 * `contactId` and `campaignId` is set; `contactId` always comes with `channel`, and with `campaignId` alone
 * `channel` is an optional filter.
 */
export interface HistoryQuery {
  contactId?: string;
  channel?: Channel;
  campaignId?: string;
  /** Only records strictly older than this position in the total order. */
  before?: Position;
  limit: number;
}

/** What a relay asks for when it claims due deliveries. */
export interface ClaimRequest {
  now: Date;
  /** At most this many deliveries in all. */
  limit: number;
  /** At most this many of one account, counting `inFlight`. */
  perAccount: number;
  /** Attempts this relay already has in flight, by account id. */
  inFlight: ReadonlyMap<string, number>;
  /** The claim holds until then; after it another relay may take the delivery again (a crash mid-attempt). */
  leaseUntil: Date;
  /** Identifies this claim; only its holder can finish the attempt. */
  lease: string;
}

/** A delivery a relay holds the lease of, with everything its attempt needs. */
export interface ClaimedDelivery {
  accountId: string;
  id: string;
  lease: string;
  /** Attempts made before this one. */
  attempts: number;
  createdAt: Date;
  callbackUrl: string;
  secrets: CallbackSecrets;
  /** The event's `/dlr` item, exactly as recorded: the body is sent as these bytes. */
  body: string;
}

export type { AttemptOutcome };

export interface DeliveryListQuery {
  state?: DeliveryState;
  /** Only deliveries older (smaller `seq`) than this. */
  beforeSeq?: number;
  limit: number;
}

/**
 * What a database remembers of the server pepper its secrets, cursors and sealed callback secrets depend on:
 * never the pepper, only a keyed hash of it, and where and when it was first used.
 */
export interface PepperFingerprint {
  fingerprint: string;
  /** Where the pepper came from, e.g. `the pepper file /srv/waybill/data/waybill.pepper on host web1`. */
  origin: string;
  recordedAt: Date;
}

/** One step of the schema, as `migrate()` reports it. */
export interface AppliedMigration {
  version: number;
  name: string;
}

/** One step of an engine's schema (sqlite/migrations.ts, postgres/migrations.ts). */
export interface Migration extends AppliedMigration {
  sql: string;
}

/** Intake routes (CONTRACT §12), kept by name. Secrets arrive and leave sealed; the store never opens them. */
export interface IntakeRouteStore {
  /** Inserts a route; throws {@link DuplicateKeyError} when its name is taken. */
  insertIntakeRoute(route: IntakeRouteRecord): Promise<void>;
  /** Every route, by name. */
  listIntakeRoutes(): Promise<IntakeRouteRecord[]>;
  getIntakeRoute(name: string): Promise<IntakeRouteRecord | null>;
  /**
   * Replaces the settings of the route of that name (not `name`, `kind`, `createdAt` nor its token); false when
   * there is none.
   */
  updateIntakeRoute(route: IntakeRouteRecord): Promise<boolean>;
  /**
   * Replaces the route's token alone, so that no concurrent change of its settings can write an old token back;
   * false when there is no such route.
   */
  setIntakeRouteToken(name: string, sealedToken: string, tokenDigest: Buffer): Promise<boolean>;
  /** Deletes the route and the unreadable receipts kept for it. */
  deleteIntakeRoute(name: string): Promise<boolean>;
  /** The route whose intake token has this digest, or null. */
  intakeRouteByTokenDigest(digest: Buffer): Promise<IntakeRouteRecord | null>;
  /** Keeps an unreadable receipt of the route, and only the newest `keep` of them. */
  recordGarbledIntake(route: string, entry: GarbledIntake, keep: number): Promise<void>;
  /** The route's kept unreadable receipts, newest first. */
  listGarbledIntake(route: string, limit: number): Promise<GarbledIntake[]>;
}

/** A bind's state as its holder publishes it (CONTRACT §12 `status`). */
export interface BindStatusRecord {
  state: 'bound' | 'connecting' | 'backoff';
  since: Date | null;
  lastError: string | null;
}

/** The unexpired lease of an SMPP route's bind: who holds it, and the status it last published. */
export interface BindLease extends BindStatusRecord {
  holder: string;
  expiresAt: Date;
}

/**
 * Leases of SMPP binds (CONTRACT §12 "SMPP binds"): each route's bind is held by one process at a time. A lease
 * lasts `ttlMs` from its last renewal by the database's clock (SQLite: the machine's); an expired one may be
 * taken by anyone.
 */
export interface LeaseStore {
  /**
   * Takes the route's lease for `holder`, or renews it when `holder` has it already, publishing `status` with
   * it; true when `holder` holds it now. False (nothing written) while another holder's lease runs.
   */
  takeBindLease(route: string, holder: string, ttlMs: number, status: BindStatusRecord): Promise<boolean>;
  /** Gives the lease up at once when `holder` has it (a clean stop): another process may take it. */
  releaseBindLease(route: string, holder: string): Promise<void>;
  /** The route's unexpired lease, or null. */
  getBindLease(route: string): Promise<BindLease | null>;
}

/** A console session (CONTRACT §13) as stored: never its token, only the token's SHA-256. */
export interface ConsoleSession {
  tokenHash: Buffer;
  /** The account signed in; null for the operator. */
  accountId: string | null;
  createdAt: Date;
  /** Pushed forward by every request that uses the session (sliding expiry). */
  expiresAt: Date;
}

/**
 * Console sessions. An account's sessions go with it when it is deleted (the table references the account,
 * ON DELETE CASCADE, on both engines), and a secret rotation ends them through {@link deleteAccountSessions}.
 */
export interface SessionStore {
  /** Stores a new session, and drops the sessions that expired before `now`. */
  createSession(session: ConsoleSession, now: Date): Promise<void>;
  /** The session whose token has this digest, unless it expired at or before `now`. */
  findSession(tokenHash: Buffer, now: Date): Promise<ConsoleSession | null>;
  /** Moves an unexpired session's expiry to `expiresAt` and returns it; null when it is gone or expired. */
  touchSession(tokenHash: Buffer, now: Date, expiresAt: Date): Promise<ConsoleSession | null>;
  /** Ends one session (sign-out). */
  deleteSession(tokenHash: Buffer): Promise<void>;
  /** Ends every session of the account (its secret rotated); returns how many there were. */
  deleteAccountSessions(accountId: string): Promise<number>;
}

/** An unreadable receipt as it arrived: its text and, from SMPP, the PDU in hex. */
export interface GarbledIntake {
  at: Date;
  text: string;
  pdu: string | null;
}

/**
 * Reading accounts: authentication (through the account cache) and the lookups of the operator API and CLI.
 * Account data is read only through these, and every method is scoped to one account.
 */
export interface AccountLookup {
  getAccount(id: string): Promise<Account | null>;
  /**
   * The query endpoints read this through the account cache (account-cache.ts), which keeps an account for
   * WAYBILL_ACCOUNT_CACHE_MS: a route that changes an account runs the write in `ctx.accounts.writing(key, …)`.
   */
  getAccountByKey(key: string): Promise<AccountWithSecret | null>;
  /** The sealed callback signing secrets, or null for an unknown account. */
  getCallbackSecrets(id: string): Promise<CallbackSecrets | null>;
}

/** Accounts: the lookups, and what the operator API, the CLI and start-up change. */
export interface AccountStore extends AccountLookup {
  /**
   * The operator's account search (the console): accounts whose name contains `text` (case-insensitively,
   * ASCII), or whose key or id is `text`; every account when `text` is null. By name, at most `limit`. It reads
   * the whole accounts table: accounts are few, and only the operator searches them.
   */
  searchAccounts(text: string | null, limit: number): Promise<Account[]>;
  /** True once any account exists (a fresh database gets the demo data). */
  hasAccounts(): Promise<boolean>;
  /** Inserts an account; throws {@link DuplicateKeyError} when its key is taken (the caller draws another). */
  createAccount(account: NewAccount): Promise<Account>;
  /**
   * Seals every callback secret still stored in clear (written before secrets were sealed), current and
   * previous, with `seal`; returns how many accounts changed. Safe to run at every start.
   */
  sealCallbackSecrets(seal: (clear: string) => string): Promise<number>;
  /** Makes `sealed` the current callback secret; the current one stays valid beside it until `previousUntil`. */
  rotateCallbackSecret(id: string, sealed: string, previousUntil: Date): Promise<Account | null>;
  /**
   * Changes the given fields. A `callbackUrl` that differs from the stored one also sets `callbackEnabled`
   * back to true, unless the patch sets `callbackEnabled` itself.
   */
  updateAccount(id: string, patch: AccountPatch): Promise<Account | null>;
  setSecretHash(id: string, secretHash: Buffer): Promise<Account | null>;
  /**
   * Deletes the account and everything of it (messages, contacts, identities, conversations, receipt events,
   * deliveries and their attempts, parked receipts) in one transaction; its key is unknown from then on. An
   * ingest batch of the account under way finishes first; one that comes later finds no account
   * ({@link UnknownAccountError}). False when there is no such account.
   */
  deleteAccount(id: string): Promise<boolean>;
}

/** Writing message records and receipts: the operator API's ingest, and the demo data. */
export interface IngestStore {
  /**
   * Applies a batch of messages in order, in one transaction, all or nothing (domain/plan-messages.ts). Returns
   * item errors for every item that cannot apply (an identity owned by another contact, a contact that already
   * has another identity on that channel, a record that exists on another channel, a carrier pair
   * `sms.carrier` that another recipient of any account holds) and then writes nothing. Parked receipts of new
   * recipients, and those parked under a carrier pair a recipient claims, are applied in the same transaction,
   * with their events and deliveries.
   * Throws {@link UnknownAccountError} when the account does not exist.
   */
  ingestMessages(
    accountId: string,
    items: MessageUpsert[],
    now: Date,
    options?: IngestOptions,
  ): Promise<BatchOutcome<MessageBatchResult>>;
  /**
   * Applies a batch of receipts in order, in one transaction, all or nothing, under the precedence of
   * CONTRACT §5 (domain/plan-receipts.ts). The item error is a missing `to` for a message with several
   * recipients. Applied receipts record events (and queue deliveries) in the same transaction; unknown ones
   * are parked. Throws {@link UnknownAccountError} when the account does not exist.
   */
  ingestReceipts(
    accountId: string,
    items: ReceiptInput[],
    now: Date,
    options?: IngestOptions,
  ): Promise<BatchOutcome<ReceiptOutcome>>;
  /**
   * Applies a batch of one route's receipts, each naming its recipient by the carrier id the route gave it
   * (CONTRACT §12 "Correlation"), in order, in one transaction (domain/ingest/plan-carrier-receipts.ts). The
   * recipient holding `(route, carrierId)` may be of any account the route may touch; the receipt goes through
   * the same precedence, events and deliveries as {@link ingestReceipts}. One whose pair no recipient holds yet
   * is parked (a replay is parked once) and applied when a message ingest claims the pair within the park
   * window. Returns what became of each item, in order, with the matched recipient and its account. The one
   * entry point of every intake adapter (SMPP binds, Kannel, Jasmin).
   */
  ingestCarrierReceipts(
    route: string,
    items: CarrierReceiptInput[],
    now: Date,
    options?: CarrierReceiptOptions,
  ): Promise<CarrierReceiptResult[]>;
}

/** The query endpoints' reads: /dlr, the message queries, the receipt feed. */
export interface QueryStore {
  /** The outbound SMS recipients of one message id, in the order they were first ingested. */
  findDlr(accountId: string, messageId: string): Promise<DlrRecipient[]>;
  /**
   * findDlr's answer at once, when the store can give it without waiting (SQLite, while no other connection
   * holds a lock it needs): the prepared /dlr path then answers in the turn the request arrived. undefined when
   * it cannot: ask findDlr, which waits. Absent on PostgreSQL. Never wrapped in a promise (IMMEDIATE_READS).
   */
  findDlrNow?(accountId: string, messageId: string): DlrRecipient[] | undefined;
  /** Records with these ids (every recipient of each), oldest first, optionally only of one campaign. */
  findMessagesByIds(accountId: string, ids: readonly string[], campaignId?: string): Promise<StoredMessage[]>;
  /** The contact that owns this identity, or null. */
  resolveContact(accountId: string, channel: Channel, channelUserId: string): Promise<string | null>;
  /** Up to `limit` records matching the query, strictly before `before`, NEWEST first (keyset, no OFFSET). */
  listHistory(accountId: string, query: HistoryQuery): Promise<ListedMessage[]>;
  /**
   * The account's receipt events with `seq` greater than `afterSeq`, oldest first. An event is listed only
   * once every event before it is visible too (no gap, even while ingests commit concurrently).
   */
  listReceiptEvents(accountId: string, afterSeq: number, limit: number): Promise<ReceiptEvent[]>;
  /** The same events with their items as stored (JSON text), for the feed to answer as they are. */
  listStoredReceiptEvents(accountId: string, afterSeq: number, limit: number): Promise<StoredReceiptEvent[]>;
  /**
   * The review rollup of a period (domain/review.ts ReviewPeriod: whole UTC days, optionally one campaign):
   * recipients per (day, network, drStatuscode, drErrcode) and the time-to-final-receipt histogram. Reads the
   * rollup only, never the messages; domain/review.ts reviewFigures turns it into the page's figures.
   */
  reviewSummary(accountId: string, period: ReviewPeriod): Promise<ReviewRows>;
}

/** Message records: ingest and the query endpoints' reads. */
export interface MessageStore extends IngestStore, QueryStore {}

/**
 * Store methods that return at once with a subscription rather than calling the database: the wrappers that
 * bound, retry or hold calls (deadline.ts, busy.ts, file-guard.ts, checkpointer.ts) pass them through as they are.
 */
export const SUBSCRIPTIONS: ReadonlySet<string> = new Set(['watchQueuedDeliveries']);

/** Reads that answer synchronously or not at all (undefined): the store's wrappers pass them through as they are. */
export const IMMEDIATE_READS: ReadonlySet<string> = new Set<keyof Store>(['findDlrNow']);

/** Who watchQueuedDeliveries tells. */
export interface QueuedWatcher {
  /** Deliveries may have been queued (or handed back): claim now. */
  queued(): void;
  /** The store stopped listening and tries again; nothing is told until it listens again. */
  lost(error: unknown): void;
}

/** An attempt made on a claim, and what it settles (finishAttempts). */
export interface FinishedAttempt {
  claim: ClaimedDelivery;
  outcome: AttemptOutcome;
}

/** The callback outbox: what the relay works through, and what the operator API shows and redelivers. */
export interface OutboxStore {
  /**
   * Takes the lease of due pending deliveries, oldest due first, never two of one recipient at once (nor one
   * whose recipient has an attempt in flight), and only of accounts whose callbacks are enabled.
   */
  claimDeliveries(request: ClaimRequest): Promise<ClaimedDelivery[]>;
  /**
   * Of these claims, those that may still be sent (domain/deliveries/finish.ts maySend: pending and still leased
   * by the claim); the others are handed back. A relay calls it right before it sends a delivery it held.
   */
  recheckClaims(claims: readonly ClaimedDelivery[]): Promise<ClaimedDelivery[]>;
  /**
   * Records attempts and their consequences (finish.ts settleAttempt), each ignored if its lease was lost
   * meanwhile, and releases their leases: the attempts that ended together in one round trip rather than one
   * each.
   */
  finishAttempts(results: readonly FinishedAttempt[]): Promise<void>;
  /** Gives a claimed delivery back untried (shutdown): it is due again at once. */
  releaseClaim(claim: ClaimedDelivery): Promise<void>;
  /**
   * When the relay should look for due deliveries again (domain/deliveries/claim-policy.ts nextDue): the earliest
   * due time among the pending deliveries of accounts with callbacks on, a delivery held up by a lease (its own,
   * or its recipient's attempt in flight) counting from that lease's end; null when none is pending.
   */
  nextDeliveryDue(): Promise<Date | null>;
  /**
   * Tells `watcher` whenever deliveries may have been queued by any process on the same database, until the
   * returned function is called: on PostgreSQL, LISTEN/NOTIFY on a connection of its own (store/postgres/
   * delivery-notices.ts); never on SQLite, whose relay runs in the one process that writes. Best effort: while
   * it cannot listen (`lost`, retried by the store), the relay finds the deliveries at its next poll.
   */
  watchQueuedDeliveries(watcher: QueuedWatcher): () => Promise<void>;
  /** The account's deliveries, newest first. */
  listDeliveries(accountId: string, query: DeliveryListQuery): Promise<Delivery[]>;
  getDelivery(accountId: string, id: string): Promise<DeliveryDetail | null>;
  /** Every receipt event of one message id (all its recipients), oldest first: the console's timeline. */
  listMessageEvents(accountId: string, messageId: string): Promise<ReceiptEvent[]>;
  /** Every delivery of one message id (all its recipients) with its attempts, oldest first. */
  listMessageDeliveries(accountId: string, messageId: string): Promise<DeliveryDetail[]>;
  /**
   * Makes a delivery pending again with a fresh schedule (due at `now`). `superseded` when it is superseded,
   * or when a newer event of its recipient exists (sending it would take the receiver back in time).
   */
  redeliver(accountId: string, id: string, now: Date): Promise<Delivery | 'superseded' | null>;
  /** Redelivers every dead delivery of the account that is the newest of its recipient; returns how many. */
  redeliverDead(accountId: string, now: Date): Promise<number>;
  /**
   * Queues one delivery, due at `now`, of the latest event of each recipient that had an event at or after
   * `since` and has no pending or delivered delivery of it (domain/deliveries/backfill.ts); returns how many.
   * `callbacks-off` (nothing written) while the account's callbacks are off; null for an unknown account.
   */
  backfillDeliveries(accountId: string, since: Date, now: Date): Promise<number | 'callbacks-off' | null>;

  /** Counts for the metrics: pending and dead deliveries, and parked receipts, of every account. */
  outboxStats(): Promise<{ pending: number; dead: number; parked: number }>;
  /** Drops parked receipts that arrived before `cutoff` (the relay's sweep); returns how many went. */
  dropParkedBefore(cutoff: Date): Promise<number>;
}

/** The database itself: schema, health, retention and shutdown. */
export interface MaintenanceStore {
  readonly engine: 'sqlite' | 'postgres';
  /**
   * Brings the schema up to date and returns the migrations this call applied, oldest first (none when it
   * already was). Safe to call when it already is, and from several processes at once: each migration is
   * reported by the one call that applied it. A store that migrates as it opens (SQLite) reports those on its
   * first call.
   */
  migrate(): Promise<AppliedMigration[]>;
  /** Resolves when the database answers a trivial query; rejects otherwise. */
  ping(): Promise<void>;
  close(): Promise<void>;

  /** The fingerprint of the pepper this database was set up with (auth/pepper.ts), or null before the first. */
  pepperFingerprint(): Promise<PepperFingerprint | null>;
  /** Records `candidate` unless a fingerprint is recorded already, and returns the recorded one (first wins). */
  claimPepperFingerprint(candidate: PepperFingerprint): Promise<PepperFingerprint>;
  /** One sealed callback secret of any account, or null: it tells whether a pepper is the accounts' own. */
  sealedCallbackSecret(): Promise<string | null>;
  /**
   * Retention: deletes message records created before `cutoff`, with their events and deliveries; returns how
   * many records went. May throw {@link PruneGaveUpError} when other sessions keep what it must remove locked.
   */
  prune(cutoff: Date, options?: PruneOptions): Promise<number>;
}

/** How {@link MaintenanceStore.prune} reports and bounds its work. */
export interface PruneOptions {
  /** Called as prune goes: each step done, and each time it has to wait for a lock and will retry. */
  onProgress?: (progress: PruneProgress) => void;
  /**
   * How long prune keeps retrying a step whose locks other sessions hold (a long report, `pg_dump`) before it
   * gives up with {@link PruneGaveUpError}, in milliseconds. @default 600000 (10 minutes)
   */
  giveUpAfterMs?: number;
}

export type PruneProgress =
  /** `records` more records went (a month dropped whole, or a batch of rows). */
  | { kind: 'removed'; records: number; total: number }
  /** `target` stayed locked by other sessions; prune tries again in `retryInMs` (attempt `attempt` failed). */
  | { kind: 'waiting'; target: string; attempt: number; waitedMs: number; retryInMs: number };

/**
 * Prune stopped because other sessions kept what it must remove locked past its bound. What it removed before
 * stays removed (`removed` records); running it again later finishes the job. It carries no `cause`, so the
 * store's error mapping leaves it as it is rather than reporting the database as unreachable.
 */
export class PruneGaveUpError extends Error {
  override readonly name = 'PruneGaveUpError';
  constructor(
    message: string,
    readonly removed: number,
  ) {
    super(message);
  }
}

/**
 * Everything the service keeps: every role above. Routes and plugins reach storage only through these
 * interfaces, and a part of the service that needs one role takes only that one (the relay an
 * {@link OutboxStore}, the account cache an {@link AccountLookup}); one conformance suite (test/conformance)
 * runs unchanged against every implementation.
 *
 * Every method is scoped by account where data belongs to one: no call can read another account's rows.
 * Implementations throw on infrastructure failure (the caller maps that to "system error").
 */
export interface Store
  extends AccountStore,
    MessageStore,
    OutboxStore,
    MaintenanceStore,
    IntakeRouteStore,
    LeaseStore,
    SessionStore {
  /** The read replicas (PostgreSQL with DATABASE_READ_URL); absent when every read goes to one database. */
  readonly readReplicas?: ReadReplicas;
}

/** One read replica as /readyz and /metrics show it. */
export interface ReplicaStatus {
  /** host:port, or replica-N: never a credential. */
  name: string;
  /** Answered its last probe. */
  up: boolean;
  /** Replay lag behind the primary when last measured; null while down or not yet measured. */
  lagMs: number | null;
}

/** The read replicas' health, kept up to date in the background (store/postgres/read-routing.ts). */
export interface ReadReplicas {
  /** As last measured (no I/O). */
  status(): ReplicaStatus[];
  /** Measures now, then reports. */
  check(): Promise<ReplicaStatus[]>;
  /** Reads served so far, by node (`primary` and each replica's name). */
  reads(): Record<string, number>;
}

/**
 * Thrown when the database cannot be reached or does not answer within its deadline (WAYBILL_DB_TIMEOUT_MS):
 * the caller answers 503 (code 11 on /dlr) and the service recovers by itself when the database returns.
 */
export class StoreUnavailableError extends Error {
  override readonly name = 'StoreUnavailableError';
}

/** Thrown by {@link Store.createAccount} when the generated key collides with an existing one. */
export class DuplicateKeyError extends Error {
  override readonly name = 'DuplicateKeyError';
}

/**
 * Thrown by {@link Store.ingestMessages} and {@link Store.ingestReceipts} when the account does not exist: it was
 * deleted after the caller looked it up. The batch wrote nothing.
 */
export class UnknownAccountError extends Error {
  override readonly name = 'UnknownAccountError';
}
