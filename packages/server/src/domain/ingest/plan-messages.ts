import { type PlannedEvent, type RecipientRef, settleDeliveries } from '../deliveries/events.js';
import { newId } from '../ids.js';
import type { StoredMessage } from '../records.js';
import type { Channel } from '../vocabulary.js';
import { applyParked, EventLog, type ParkedReceipt, type Planned } from './plan-receipts.js';
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

/** What a store must load for a batch; {@link messageBatchKeys} says which rows. */
export interface MessageBatchState {
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
  return {
    identities: [...identities.values()],
    namedContacts: [...new Set(items.flatMap((i) => (i.contactId === undefined ? [] : [i.contactId])))],
    records: [...records.values()],
    messageIds: [...new Set(items.map((i) => i.id))],
  };
}

export interface MessagePlan {
  contacts: string[];
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
  /** Parked receipts consumed by this batch (the store's refs). */
  unparked: number[];
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
  const contacts = new Set<string>();
  const plan: MessagePlan = {
    contacts: [],
    identities: [],
    conversations: [],
    records: [],
    events: [],
    supersede: [],
    unparked: [],
  };

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
    contacts.add(contactId);
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
    records.set(key, merged);
    written.set(key, merged);
  });
  if (errors.length > 0) {
    errors.sort((a, b) => a.index - b.index);
    return { ok: false, errors };
  }

  plan.contacts = [...contacts];
  const fresh = new Set([...written.keys()].filter((key) => !state.records.has(key)));
  const log = new EventLog(now);
  plan.unparked = applyParked(state.parked, written, fresh, log);
  plan.events = log.events;
  plan.supersede = settleDeliveries(log.events, state.callbacks);
  plan.records = [...written].map(([key, record]) => ({ record, isNew: fresh.has(key) }));
  return { ok: true, plan };
}
