import { type PlannedEvent, type RecipientRef, settleDeliveries } from '../deliveries/events.js';
import { newId } from '../ids.js';
import type { StoredMessage } from '../records.js';
import type { Channel } from '../vocabulary.js';
import { mayTouch } from './plan-carrier-receipts.js';
import {
  applyParked,
  carrierPairKey,
  EventLog,
  type ParkedCarrierReceipt,
  type ParkedReceipt,
  type Planned,
} from './plan-receipts.js';
import { type ItemError, type MessageUpsert, mergeMessage } from './precedence.js';

/**
 * The message planner: given what the store loaded for a batch, every item error, or the writes that apply the
 * batch in order exactly as if its items had been sent one by one (later items see what earlier ones linked
 * and wrote).
 */

export const identityKey = (channel: string, channelUserId: string): string =>
  `${channel}\u0000${channelUserId}`;
export const conversationKey = (contactId: string, channel: string): string => `${contactId}\u0000${channel}`;
export const recordKey = (id: string, channelUserId: string): string => `${id}\u0000${channelUserId}`;

/** A stored carrier pair and the recipient that holds it (CONTRACT §12 "Correlation"). */
export interface CarrierClaim {
  route: string;
  carrierId: string;
  accountId: string;
  messageId: string;
  to: string;
}

/** What a store must load for a batch; {@link messageBatchKeys} says which rows. */
export interface MessageBatchState {
  /** The account the batch is for. */
  accountId: string;
  /** The owning contact of each identity the batch names, by {@link identityKey}. */
  owners: ReadonlyMap<string, string>;
  /** The identity each contact named by the batch holds per channel, by {@link conversationKey}. */
  held: ReadonlyMap<string, string>;
  /** Conversation ids of the contacts that own or are named by the batch, by {@link conversationKey}. */
  conversations: ReadonlyMap<string, string>;
  /** The stored records of the batch's keys, by {@link recordKey}. */
  records: ReadonlyMap<string, StoredMessage>;
  /** Live (unexpired) parked receipts of the batch's message ids. */
  parked: readonly ParkedReceipt[];
  /**
   * The stored claims of the batch's carrier pairs (whichever account holds them), and those held by the
   * batch's `carrierRecords` in this account.
   */
  carriers: readonly CarrierClaim[];
  /** Live parked carrier receipts of the batch's carrier pairs. */
  parkedCarrier: readonly ParkedCarrierReceipt[];
  /** The account has a callback URL and callbacks enabled. */
  callbacks: boolean;
}

/** The rows a message batch reads. Conversations: those of the named contacts and of the identities' owners. */
export function messageBatchKeys(items: readonly MessageUpsert[]) {
  const identities = new Map<string, { channel: Channel; channelUserId: string }>();
  const records = new Map<string, { id: string; channelUserId: string }>();
  for (const i of items) {
    identities.set(identityKey(i.channel, i.channelUserId), {
      channel: i.channel,
      channelUserId: i.channelUserId,
    });
    records.set(recordKey(i.id, i.channelUserId), { id: i.id, channelUserId: i.channelUserId });
  }
  const pairs = new Map<string, { route: string; carrierId: string }>();
  const carrierRecords = new Map<string, { id: string; channelUserId: string }>();
  for (const i of items) {
    const pair = i.sms?.carrier;
    if (pair !== undefined) {
      pairs.set(carrierPairKey(pair.route, pair.messageId), { route: pair.route, carrierId: pair.messageId });
    }
    // The records that may give up the pair they hold: those given another, and SMS records turned inbound.
    if (pair !== undefined || (i.channel === 'SMS' && i.direction === 'inbound')) {
      carrierRecords.set(recordKey(i.id, i.channelUserId), { id: i.id, channelUserId: i.channelUserId });
    }
  }
  return {
    identities: [...identities.values()],
    namedContacts: [...new Set(items.flatMap((i) => (i.contactId === undefined ? [] : [i.contactId])))],
    records: [...records.values()],
    messageIds: [...new Set(items.map((i) => i.id))],
    /** Carrier pairs the batch claims: load their holders and their parked receipts. */
    carrierPairs: [...pairs.values()],
    /** Records whose held pair (if any) the batch needs to know. */
    carrierRecords: [...carrierRecords.values()],
  };
}

export interface MessagePlan {
  /**
   * Contacts to create: those minted for new numbers (fresh UUIDv7s, stored nowhere yet), and those the items
   * name (which may exist already, then are kept as they are).
   */
  contacts: { minted: string[]; named: string[] };
  identities: { channel: Channel; channelUserId: string; contactId: string }[];
  conversations: { contactId: string; channel: Channel; id: string }[];
  /**
   * Records to write, each once and in its final state, in the order first written: new ones take their
   * ingest sequence (the /dlr recipient order) in this order.
   */
  records: { record: StoredMessage; isNew: boolean }[];
  /** Events of parked receipts applied to recipients of this batch. */
  events: PlannedEvent[];
  supersede: RecipientRef[];
  /** Parked receipts consumed by this batch (the store's refs), of either kind. */
  unparked: number[];
  /**
   * Carrier pairs to give up (delete, by pair), then pairs to claim (insert): a recipient given another pair
   * gives up its old one, and one claiming a pair given up in the same batch follows its release.
   */
  carriers: {
    release: { route: string; carrierId: string }[];
    claim: (CarrierClaim & { createdAt: Date })[];
  };
}

export function planMessages(
  state: MessageBatchState,
  items: readonly MessageUpsert[],
  now: Date,
): Planned<MessagePlan> {
  const errors: ItemError[] = [];
  const owners = new Map(state.owners);
  const held = new Map(state.held);
  const conversations = new Map(state.conversations);
  const minted = new Set<string>();
  const named = new Set<string>();
  const plan: MessagePlan = {
    contacts: { minted: [], named: [] },
    identities: [],
    conversations: [],
    records: [],
    events: [],
    supersede: [],
    unparked: [],
    carriers: { release: [], claim: [] },
  };
  const carriers = new CarrierLedger(state.accountId, state.carriers);

  const contactOf = (item: MessageUpsert, index: number): string | null => {
    const idKey = identityKey(item.channel, item.channelUserId);
    const owner = owners.get(idKey);
    let contactId: string;
    if (item.contactId === undefined) {
      if (owner !== undefined) return owner;
      contactId = newId();
    } else {
      if (owner !== undefined) {
        if (owner === item.contactId) return owner;
        errors.push({
          index,
          detail: `${item.channel} identity ${item.channelUserId} belongs to another contact`,
        });
        return null;
      }
      const holding = held.get(conversationKey(item.contactId, item.channel));
      if (holding !== undefined) {
        errors.push({
          index,
          detail: `contact ${item.contactId} already has the ${item.channel} identity ${holding}`,
        });
        return null;
      }
      contactId = item.contactId;
    }
    (item.contactId === undefined ? minted : named).add(contactId);
    plan.identities.push({ channel: item.channel, channelUserId: item.channelUserId, contactId });
    owners.set(idKey, contactId);
    held.set(conversationKey(contactId, item.channel), item.channelUserId);
    return contactId;
  };

  const records = new Map(state.records);
  // A Map keeps a key where it was first set: new records stay in first-ingested order.
  const written = new Map<string, StoredMessage>();
  items.forEach((item, index) => {
    const contactId = contactOf(item, index);
    if (contactId === null) return;
    const convKey = conversationKey(contactId, item.channel);
    let conversationId = conversations.get(convKey);
    if (conversationId === undefined) {
      conversationId = newId();
      conversations.set(convKey, conversationId);
      plan.conversations.push({ contactId, channel: item.channel, id: conversationId });
    }
    const key = recordKey(item.id, item.channelUserId);
    const merged = mergeMessage(records.get(key) ?? null, item, { contactId, conversationId }, now);
    if (typeof merged === 'string') {
      errors.push({ index, detail: merged });
      return;
    }
    const problem = carriers.hold(key, merged, item.sms?.carrier);
    if (problem !== null) {
      errors.push({ index, detail: problem, param: 'sms.carrier' });
      return;
    }
    records.set(key, merged);
    written.set(key, merged);
  });
  if (errors.length > 0) {
    errors.sort((a, b) => a.index - b.index);
    return { ok: false, errors };
  }

  plan.contacts = { minted: [...minted], named: [...named] };
  const fresh = new Set([...written.keys()].filter((key) => !state.records.has(key)));
  const log = new EventLog(now);
  plan.carriers = carriers.changes(written);
  plan.unparked = applyParked(state.parked, written, fresh, log, {
    // A receipt parked by a route limited to some accounts waits for a recipient of one of them.
    parked: state.parkedCarrier.filter((p) => mayTouch(p.accounts, state.accountId)),
    claimed: new Map(
      plan.carriers.claim.map((c) => [carrierPairKey(c.route, c.carrierId), recordKey(c.messageId, c.to)]),
    ),
  });
  plan.events = log.events;
  plan.supersede = settleDeliveries(log.events, state.callbacks);
  plan.records = [...written].map(([key, record]) => ({ record, isNew: fresh.has(key) }));
  return { ok: true, plan };
}

/**
 * The carrier pairs as a batch goes: who holds each pair the batch touches, and which pair each of its records
 * holds. A pair belongs to one recipient of any account; a recipient holds at most one, and a new one given
 * replaces it (fields given replace the stored ones, CONTRACT §5). A record that stops being an outbound SMS
 * recipient gives its pair up.
 */
class CarrierLedger {
  private readonly holders = new Map<string, CarrierClaim>();
  private readonly held = new Map<string, string>();
  private readonly stored: ReadonlyMap<string, CarrierClaim>;

  constructor(
    private readonly accountId: string,
    claims: readonly CarrierClaim[],
  ) {
    for (const c of claims) {
      const pair = carrierPairKey(c.route, c.carrierId);
      this.holders.set(pair, c);
      if (c.accountId === accountId) this.held.set(recordKey(c.messageId, c.to), pair);
    }
    this.stored = new Map(this.holders);
  }

  /** Records that `record` (under `key`) holds `pair` (when given); a description of the item error, or null. */
  hold(
    key: string,
    record: StoredMessage,
    pair: { route: string; messageId: string } | undefined,
  ): string | null {
    const current = this.held.get(key);
    if (record.sms === null) {
      if (current !== undefined) this.release(key, current);
      return null;
    }
    if (pair === undefined) return null;
    const wanted = carrierPairKey(pair.route, pair.messageId);
    const holder = this.holders.get(wanted);
    if (holder !== undefined) {
      const mine = holder.accountId === this.accountId && recordKey(holder.messageId, holder.to) === key;
      if (mine) return null;
      const whose =
        holder.accountId === this.accountId
          ? `message ${holder.messageId} to ${holder.to}`
          : 'a recipient of another account';
      return `carrier id ${JSON.stringify(pair.messageId)} on route ${pair.route} already belongs to ${whose}`;
    }
    if (current !== undefined) this.release(key, current);
    this.holders.set(wanted, {
      route: pair.route,
      carrierId: pair.messageId,
      accountId: this.accountId,
      messageId: record.id,
      to: record.channelUserId,
    });
    this.held.set(key, wanted);
    return null;
  }

  private release(key: string, pair: string): void {
    this.holders.delete(pair);
    this.held.delete(key);
  }

  /** The writes that take the stored pairs to where the batch left them; claims carry their record's createdAt. */
  changes(records: ReadonlyMap<string, StoredMessage>): MessagePlan['carriers'] {
    const same = (a: CarrierClaim, b: CarrierClaim) =>
      a.accountId === b.accountId && a.messageId === b.messageId && a.to === b.to;
    const release: MessagePlan['carriers']['release'] = [];
    const claim: MessagePlan['carriers']['claim'] = [];
    for (const [pair, before] of this.stored) {
      const after = this.holders.get(pair);
      if (after === undefined || !same(before, after)) {
        release.push({ route: before.route, carrierId: before.carrierId });
      }
    }
    for (const [pair, after] of this.holders) {
      const before = this.stored.get(pair);
      if (before !== undefined && same(before, after)) continue;
      const record = records.get(recordKey(after.messageId, after.to));
      // Only records of this batch ever claim a pair.
      if (record === undefined) throw new Error(`carrier claim of an unwritten record ${after.messageId}`);
      claim.push({ ...after, createdAt: record.createdAt });
    }
    return { release, claim };
  }
}
