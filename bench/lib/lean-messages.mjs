// The lean contact-message query (bench/lib/lean.mjs), `GET /messages` and `GET /api/v1/contacts/messages`:
// mode 1 (`messageIds`: one query with an `IN`, records oldest first) and a contact's history by channel and
// channelUserId (the contact and its conversation in one lookup, then one keyset query for the page, and the
// cursor signed as Waybill signs it). What Waybill also serves there and a lean reference does not: contactId,
// campaignId, the parameters' validation. A record names its conversation by the conversation's ref: mode 1
// joins the conversation's row for the two ids, and a history page takes them from its one lookup.
import { credentials, cursorMac } from './lean-auth.mjs';

const RECORD_COLUMNS =
  'm.id, m.channel, m.direction, m.channel_user_id, m.campaign_id, m.text, m.content, m.status, ' +
  'm.sms_status, m.dr_statuscode, m.created_at';
const CURSOR = 'waybill.cursor.v1\0';

/** A record's status as the contract derives it (Waybill's messageStatus). */
function status(row) {
  if (row.direction === 'inbound') return 'received';
  if (row.sms_status === null) return row.status ?? 'sent';
  if (row.sms_status === '1') return 'pending';
  if (row.sms_status === '400') return 'failed';
  const code = row.dr_statuscode;
  if (code === null || code === 'accepted') return 'sent';
  return code === 'delivered' ? 'delivered' : 'failed';
}

/** A message record as Waybill's toMessageRecord builds it. */
function record(row, contactId = row.contact_id, conversationId = row.conversation_id) {
  return {
    id: row.id,
    channel: row.channel,
    direction: row.direction,
    contactId,
    channelUserId: row.channel_user_id,
    conversationId,
    campaignId: row.campaign_id,
    text: row.text,
    content: row.content === null ? null : JSON.parse(row.content),
    status: status(row),
    createdAt: new Date(row.created_at).toISOString(),
  };
}

/** `GET /messages` and its v1 predecessor, as `(query, request) => [status, body]`. */
export function messagesRoutes(db, authenticate) {
  const byIds = db.prepare(
    `SELECT ${RECORD_COLUMNS}, c.contact_id, c.id AS conversation_id
     FROM messages m JOIN conversations c ON c.ref = m.conversation_ref
     WHERE m.account_id = ? AND m.id IN (SELECT value FROM json_each(?))
     ORDER BY m.created_at, m.id, m.channel_user_id`,
  );
  const conversation = db.prepare(
    `SELECT i.contact_id, c.id, c.ref FROM identities i
     JOIN conversations c ON c.account_id = i.account_id AND c.contact_id = i.contact_id AND c.channel = i.channel
     WHERE i.account_id = ? AND i.channel = ? AND i.channel_user_id = ?`,
  );
  // The history index orders a conversation's records by (created_at, rowid) (migration 11): the records of
  // one millisecond are put in the total order here, and the page's last millisecond read whole when the page
  // cuts it, as any server on this layout must.
  const page = (keyset, tie) =>
    db.prepare(
      `SELECT ${RECORD_COLUMNS} FROM messages m INDEXED BY messages_history
       WHERE m.account_id = @account AND m.conversation_ref = @conversation
       ${keyset ? 'AND m.created_at <= @at AND (m.created_at, m.id, m.channel_user_id) < (@at, @id, @user)' : ''}
       ${tie ? 'AND m.created_at = @tie' : 'ORDER BY m.created_at DESC, m.ref DESC LIMIT @limit'}`,
    );
  const firstPage = page(false, false);
  const nextPage = page(true, false);
  const firstTie = page(false, true);
  const nextTie = page(true, true);
  const newestFirst = (a, b) =>
    b.created_at - a.created_at ||
    Buffer.compare(Buffer.from(b.id), Buffer.from(a.id)) ||
    Buffer.compare(Buffer.from(b.channel_user_id), Buffer.from(a.channel_user_id));
  function inOrder(statement, tie, params) {
    let rows = statement.all({ ...params, limit: params.limit + 1 });
    const last = rows[params.limit - 1]?.created_at;
    if (rows.length > params.limit && rows[params.limit].created_at === last) {
      rows = rows.filter((row) => row.created_at !== last).concat(tie.all({ ...params, tie: last }));
    }
    for (let i = 1; i < rows.length; i++) {
      if (rows[i].created_at === rows[i - 1].created_at) {
        rows.sort(newestFirst);
        break;
      }
    }
    return rows.slice(0, params.limit);
  }

  function history(account, query) {
    const channel = query.get('channel')?.toUpperCase();
    const channelUserId = query.get('channelUserId');
    if (!channel || !channelUserId) return [400, { detail: 'the lean reference knows channelUserId only' }];
    const size = Number(query.get('size') ?? 20);
    const found = conversation.get(account.ref, channel, channelUserId);
    if (!found) return [200, { messages: [], nextCursor: null, hasMore: false }];
    // The cursor is bound to the account's id, as Waybill's is; the rows are keyed by its ref.
    const binding = [account.id, found.contact_id, channel, null];
    const params = { account: account.ref, conversation: found.ref, limit: size + 1 };
    const cursor = query.get('cursor');
    let rows;
    if (cursor) {
      const dot = cursor.indexOf('.');
      const payload = cursor.slice(0, dot);
      if (dot <= 0 || cursor.slice(dot + 1) !== cursorMac(CURSOR, payload, binding))
        return [400, { detail: 'cursor is not valid for this query' }];
      [params.at, params.id, params.user] = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
      rows = inOrder(nextPage, nextTie, params);
    } else {
      rows = inOrder(firstPage, firstTie, params);
    }
    const hasMore = rows.length > size;
    const messages = rows.slice(0, size).reverse();
    let nextCursor = null;
    if (hasMore) {
      const oldest = messages[0];
      const position = JSON.stringify([oldest.created_at, oldest.id, oldest.channel_user_id]);
      const payload = Buffer.from(position).toString('base64url');
      nextCursor = `${payload}.${cursorMac(CURSOR, payload, binding)}`;
    }
    return [
      200,
      { messages: messages.map((row) => record(row, found.contact_id, found.id)), nextCursor, hasMore },
    ];
  }

  /** Mode 1 answers a bare array on v1 and an envelope on /messages. */
  const route = (envelope) => (query, request) => {
    const given = credentials(query, request.headers.authorization);
    const account = given && authenticate(given.key, given.secret);
    if (!account) return [401, { detail: 'invalid credentials' }];
    if (query.has('campaignId')) return [400, { detail: 'the lean reference knows no campaignId' }];
    const ids = query.get('messageIds');
    if (ids === null) return history(account, query);
    const messages = byIds.all(account.ref, JSON.stringify(ids.split(','))).map((row) => record(row));
    return [200, envelope ? { messages, nextCursor: null, hasMore: false } : messages];
  };
  return { '/messages': route(true), '/api/v1/contacts/messages': route(false) };
}
