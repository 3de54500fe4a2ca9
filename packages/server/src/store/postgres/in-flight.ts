import {
  conversationKey,
  identityKey,
  type MessageBatchState,
  type MessagePlan,
  recordKey,
} from '../../domain/ingest/plan-messages.js';
import type { MessageUpsert } from '../../domain/ingest/precedence.js';

/**
 * What this process's message batches in flight are creating, so that a concurrent batch of the same account
 * uses it instead of colliding with it.
 *
 * Two batches that each meet a number new to the account would both create its contact. PostgreSQL lets one
 * insert the identity; the other waits for that one's commit inside its own insert, finds the identity taken
 * and must start over alone (ingest-messages.ts). In a backfill, where every batch meets new numbers, that was
 * a third of the batches, and two streams ran at half the speed of two streams that never met: 5,500 against
 * 11,700 messages/s in the bench. Here the second batch learns the first one's contact and conversation
 * instead, writes its records with them while the first is still writing, and waits for the first one's commit
 * only before its own last statements (the rollup and the events, which serialize anyway) and its commit. Its
 * records then never become visible before the contact they name, and if the first batch fails, the second
 * starts over as before.
 *
 * Within one process only: batches of two instances still meet in the database, as before.
 */
export class InFlight {
  readonly #accounts = new Map<string, AccountInFlight>();
  #clock = 0;

  /** A batch attempt of `accountId` that starts now, before it reads anything. */
  begin(accountId: string): InFlightBatch {
    let account = this.#accounts.get(accountId);
    if (account === undefined) {
      account = {
        active: new Set(),
        committed: [],
        identities: new Map(),
        conversations: new Map(),
        records: new Map(),
      };
      this.#accounts.set(accountId, account);
    }
    const batch = new InFlightBatch(++this.#clock, (committed) => this.#settle(accountId, batch, committed));
    account.active.add(batch);
    return batch;
  }

  /**
   * The state a batch plans with: the one it loaded, plus the contacts and conversations that other batches
   * in flight are creating for its new identities; and the batches it then depends on. A batch that names a
   * contact, or creates a record that another batch in flight creates too, takes nothing: it meets the other
   * one in the database, as before.
   */
  adopt(
    batch: InFlightBatch,
    state: MessageBatchState,
    items: readonly MessageUpsert[],
  ): { state: MessageBatchState; dependencies: InFlightBatch[] } {
    const account = this.#accounts.get(state.accountId);
    const unchanged = { state, dependencies: [] };
    if (account === undefined || account.identities.size === 0) return unchanged;
    if (items.some((i) => i.contactId !== undefined)) return unchanged;
    const creatingRecord = (i: MessageUpsert) => {
      const by = account.records.get(recordKey(i.id, i.channelUserId));
      return by !== undefined && by !== batch;
    };
    if (items.some(creatingRecord)) return unchanged;
    const owners = new Map(state.owners);
    const conversations = new Map(state.conversations);
    const dependencies = new Set<InFlightBatch>();
    for (const item of items) {
      const key = identityKey(item.channel, item.channelUserId);
      if (owners.has(key)) continue;
      const identity = account.identities.get(key);
      if (identity === undefined || identity.by === batch) continue;
      const convKey = conversationKey(identity.value, item.channel);
      const conversation = conversations.has(convKey) ? undefined : account.conversations.get(convKey);
      if (!conversations.has(convKey) && conversation === undefined) continue;
      owners.set(key, identity.value);
      dependencies.add(identity.by);
      if (conversation !== undefined) {
        conversations.set(convKey, conversation.value);
        dependencies.add(conversation.by);
      }
    }
    if (dependencies.size === 0) return unchanged;
    return { state: { ...state, owners, conversations }, dependencies: [...dependencies] };
  }

  /**
   * Tells the batches that start from now on what `batch` (planned with `plan`) creates. Call it right after
   * planning, with no await since {@link adopt}, so two batches cannot both take a creation for their own.
   */
  register(batch: InFlightBatch, accountId: string, plan: MessagePlan): void {
    const account = this.#accounts.get(accountId);
    if (account === undefined || !account.active.has(batch)) return;
    for (const i of plan.identities) {
      const key = identityKey(i.channel, i.channelUserId);
      if (account.identities.has(key)) continue;
      account.identities.set(key, { value: i.contactId, by: batch });
      batch.identities.push(key);
    }
    for (const c of plan.conversations) {
      const key = conversationKey(c.contactId, c.channel);
      if (account.conversations.has(key)) continue;
      account.conversations.set(key, { value: c.id, by: batch });
      batch.conversations.push(key);
    }
    for (const { record, isNew } of plan.records) {
      const key = recordKey(record.id, record.channelUserId);
      if (!isNew || account.records.has(key)) continue;
      account.records.set(key, batch);
      batch.records.push(key);
    }
  }

  /**
   * A committed batch's creations stay while a batch that started before its commit is in flight (it may have
   * read before the commit, and would otherwise create them again), up to KEPT_COMMITTED batches of the
   * account (past that, such a batch meets them in the database, as before); a failed one's go at once.
   */
  #settle(accountId: string, batch: InFlightBatch, committed: boolean): void {
    const account = this.#accounts.get(accountId);
    if (account === undefined) return;
    account.active.delete(batch);
    if (committed) account.committed.push({ stamp: ++this.#clock, batch });
    else forget(account, batch);
    let oldest = Number.POSITIVE_INFINITY;
    for (const b of account.active) oldest = Math.min(oldest, b.begun);
    const excess = account.committed.length - KEPT_COMMITTED;
    account.committed = account.committed.filter((c, n) => {
      if (c.stamp > oldest && n >= excess) return true;
      forget(account, c.batch);
      return false;
    });
    if (account.active.size === 0) this.#accounts.delete(accountId);
  }
}

/**
 * The most committed batches an account keeps known for batches in flight that began before them. It bounds the
 * memory held while one batch of the account is stuck (waiting on a lock) and ingest goes on around it.
 */
const KEPT_COMMITTED = 64;

/** Removes what `batch` registered, where it is still the batch's own. */
function forget(account: AccountInFlight, batch: InFlightBatch): void {
  for (const key of batch.identities)
    if (account.identities.get(key)?.by === batch) account.identities.delete(key);
  for (const key of batch.conversations)
    if (account.conversations.get(key)?.by === batch) account.conversations.delete(key);
  for (const key of batch.records) if (account.records.get(key) === batch) account.records.delete(key);
}

/** One attempt of a message batch, as {@link InFlight} knows it. */
export class InFlightBatch {
  /** True once the attempt committed, false once it rolled back or failed. */
  readonly settled: Promise<boolean>;
  /** The keys of what it registered, by map. */
  readonly identities: string[] = [];
  readonly conversations: string[] = [];
  readonly records: string[] = [];
  /** The {@link InFlight} clock when the attempt began: before it read anything. */
  readonly begun: number;
  readonly #onSettled: (committed: boolean) => void;
  #resolve!: (committed: boolean) => void;
  #done = false;

  constructor(begun: number, onSettled: (committed: boolean) => void) {
    this.begun = begun;
    this.#onSettled = onSettled;
    this.settled = new Promise((resolve) => {
      this.#resolve = resolve;
    });
  }

  /** Ends the attempt; only the first call counts. Call it once the commit (or the rollback) returned. */
  settle(committed: boolean): void {
    if (this.#done) return;
    this.#done = true;
    this.#resolve(committed);
    this.#onSettled(committed);
  }
}

interface Creation<T> {
  value: T;
  by: InFlightBatch;
}

interface AccountInFlight {
  /** Attempts begun and not settled. */
  active: Set<InFlightBatch>;
  /** Committed attempts whose creations a batch in flight may still need, by their commit's stamp. */
  committed: { stamp: number; batch: InFlightBatch }[];
  /** Contact ids of identities being created, by identityKey. */
  identities: Map<string, Creation<string>>;
  /** Conversation ids being created, by conversationKey. */
  conversations: Map<string, Creation<string>>;
  /** Records being created, by recordKey. */
  records: Map<string, InFlightBatch>;
}
