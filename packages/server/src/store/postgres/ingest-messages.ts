import type pg from 'pg';
import { newId } from '../../domain/ids.js';
import { type BatchOutcome, type ItemError, type MessageUpsert, mergeMessage } from '../../domain/ingest.js';
import type { StoredMessage } from '../../domain/records.js';
import { insertKeys, lockKeys, readRecords, upsertRecords } from './message-writes.js';
import { RETRY, type TransactionResult } from './pool.js';
import { recordKey } from './rows.js';

const identityKey = (channel: string, channelUserId: string): string => `${channel}\u0000${channelUserId}`;
const conversationKey = (contactId: string, channel: string): string => `${contactId}\u0000${channel}`;

/**
 * One attempt at a message batch, inside a transaction. Reads everything the batch touches in a few set-wise
 * statements, replays the items in order in memory exactly as the SQLite store applies them one by one (later
 * items see what earlier ones linked and wrote), then writes the outcome set-wise.
 *
 * Concurrency: existing records are locked (their key rows) before they are read. Everything the batch
 * creates (identities, conversations, record keys) is inserted with ON CONFLICT DO NOTHING; if any of it
 * turns out to exist, a concurrent batch made it after our reads, and the attempt returns RETRY to start over
 * and merge into what that batch committed. So nothing is duplicated and no write is lost.
 */
export async function ingestMessagesOnce(
  client: pg.PoolClient,
  accountId: string,
  items: readonly MessageUpsert[],
  now: Date,
  dryRun = false,
): Promise<TransactionResult<BatchOutcome<{ accepted: number }>> | typeof RETRY> {
  const errors: ItemError[] = [];

  // 1. Identities: the owners of the batch's identities, and what the named contacts already hold.
  const identityPairs = uniqueBy(
    items.map((i) => ({ channel: i.channel, channelUserId: i.channelUserId })),
    (p) => identityKey(p.channel, p.channelUserId),
  );
  const owners = new Map<string, string>();
  const held = new Map<string, string>();
  const named = [...new Set(items.flatMap((i) => (i.contactId === undefined ? [] : [i.contactId])))];
  const identities = await client.query<{ channel: string; channel_user_id: string; contact_id: string }>({
    name: 'wb_identities',
    text: `SELECT i.channel, i.channel_user_id, i.contact_id
           FROM identities i
           JOIN unnest($2::text[], $3::text[]) AS u (channel, channel_user_id)
             ON i.channel = u.channel AND i.channel_user_id = u.channel_user_id
           WHERE i.account_id = $1
           UNION
           SELECT i.channel, i.channel_user_id, i.contact_id
           FROM identities i
           WHERE i.account_id = $1 AND i.contact_id = ANY($4::uuid[])`,
    values: [
      accountId,
      identityPairs.map((p) => p.channel),
      identityPairs.map((p) => p.channelUserId),
      named,
    ],
  });
  for (const row of identities.rows) {
    owners.set(identityKey(row.channel, row.channel_user_id), row.contact_id);
    held.set(conversationKey(row.contact_id, row.channel), row.channel_user_id);
  }

  const newContacts = new Set<string>();
  const newIdentities: { channel: string; channelUserId: string; contactId: string }[] = [];
  const contactOf: (string | null)[] = items.map((item, index) => {
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
    newContacts.add(contactId);
    newIdentities.push({ channel: item.channel, channelUserId: item.channelUserId, contactId });
    owners.set(idKey, contactId);
    held.set(conversationKey(contactId, item.channel), item.channelUserId);
    return contactId;
  });

  // 2. Conversations of the resolved contacts.
  const conversationPairs = uniqueBy(
    items.flatMap((item, index) => {
      const contactId = contactOf[index];
      return contactId ? [{ contactId, channel: item.channel }] : [];
    }),
    (p) => conversationKey(p.contactId, p.channel),
  );
  const conversations = new Map<string, string>();
  if (conversationPairs.length > 0) {
    const found = await client.query<{ contact_id: string; channel: string; id: string }>({
      name: 'wb_conversations',
      text: `SELECT c.contact_id, c.channel, c.id
             FROM conversations c
             JOIN unnest($2::uuid[], $3::text[]) AS u (contact_id, channel)
               ON c.contact_id = u.contact_id AND c.channel = u.channel
             WHERE c.account_id = $1`,
      values: [accountId, conversationPairs.map((p) => p.contactId), conversationPairs.map((p) => p.channel)],
    });
    for (const row of found.rows) conversations.set(conversationKey(row.contact_id, row.channel), row.id);
  }
  const newConversations: { contactId: string; channel: string; id: string }[] = [];

  // 3. The records themselves, locked, then merged in item order.
  const recordKeys = uniqueBy(
    items.map((i) => ({ id: i.id, channelUserId: i.channelUserId })),
    (k) => recordKey(k.id, k.channelUserId),
  );
  const keyRows = await lockKeys(client, accountId, recordKeys);
  const records: Map<string, StoredMessage | null> = await readRecords(client, accountId, keyRows);
  const existed = new Set(records.keys());
  const written = new Map<string, StoredMessage>();

  items.forEach((item, index) => {
    const contactId = contactOf[index];
    if (!contactId) return;
    const convKey = conversationKey(contactId, item.channel);
    let conversationId = conversations.get(convKey);
    if (conversationId === undefined) {
      conversationId = newId();
      conversations.set(convKey, conversationId);
      newConversations.push({ contactId, channel: item.channel, id: conversationId });
    }
    const key = recordKey(item.id, item.channelUserId);
    const merged = mergeMessage(records.get(key) ?? null, item, { contactId, conversationId }, now);
    if (typeof merged === 'string') {
      errors.push({ index, detail: merged });
      return;
    }
    records.set(key, merged);
    // A Map keeps a key where it was first set: new records stay in first-ingested order for their seq.
    written.set(key, merged);
  });

  if (errors.length > 0) {
    errors.sort((a, b) => a.index - b.index);
    return { commit: false, value: { ok: false, errors } };
  }
  // Every item error is known before the first write.
  if (dryRun) return { commit: false, value: { ok: true, value: { accepted: items.length } } };

  // 4. Writes, set-wise. Contacts first (identities and conversations reference them).
  if (newContacts.size > 0) {
    await client.query({
      name: 'wb_insert_contacts',
      text: `INSERT INTO contacts (account_id, id) SELECT $1, unnest($2::uuid[]) ON CONFLICT DO NOTHING`,
      values: [accountId, [...newContacts]],
    });
  }
  if (newIdentities.length > 0) {
    const inserted = await client.query({
      name: 'wb_insert_identities',
      text: `INSERT INTO identities (account_id, channel, channel_user_id, contact_id)
             SELECT $1, * FROM unnest($2::text[], $3::text[], $4::uuid[])
             ON CONFLICT DO NOTHING`,
      values: [
        accountId,
        newIdentities.map((i) => i.channel),
        newIdentities.map((i) => i.channelUserId),
        newIdentities.map((i) => i.contactId),
      ],
    });
    if (inserted.rowCount !== newIdentities.length) return RETRY;
  }
  if (newConversations.length > 0) {
    const inserted = await client.query({
      name: 'wb_insert_conversations',
      text: `INSERT INTO conversations (account_id, contact_id, channel, id)
             SELECT $1, * FROM unnest($2::uuid[], $3::text[], $4::uuid[])
             ON CONFLICT DO NOTHING`,
      values: [
        accountId,
        newConversations.map((c) => c.contactId),
        newConversations.map((c) => c.channel),
        newConversations.map((c) => c.id),
      ],
    });
    if (inserted.rowCount !== newConversations.length) return RETRY;
  }
  const fresh = [...written].filter(([key]) => !existed.has(key)).map(([, record]) => record);
  if (!(await insertKeys(client, accountId, fresh))) return RETRY;
  await upsertRecords(client, accountId, [...written.values()]);
  return { commit: true, value: { ok: true, value: { accepted: items.length } } };
}

function uniqueBy<T>(values: readonly T[], keyOf: (value: T) => string): T[] {
  const seen = new Map<string, T>();
  for (const value of values) {
    const key = keyOf(value);
    if (!seen.has(key)) seen.set(key, value);
  }
  return [...seen.values()];
}
