// The lean receipt feed (bench/lib/lean.mjs), `GET /receipts`: the `after` cursor checked as Waybill checks it,
// one query for the events after it (one more than asked, to learn whether more exist), each stored item parsed
// into its event (the stored values and the row's message id and recipient, as the store keeps them:
// packages/server/src/store/event-item.ts), and the next cursor signed. An event names its recipient by its
// record's ref (store/sqlite/record-refs.ts): the query joins the record for the message id and number, and
// for the item of an event that stores none, its record's as it stands (store/sqlite/current-item.ts).
import { credentials, cursorMac } from './lean-auth.mjs';
import { dlrItem } from './lean-dlr.mjs';

const SEQ_CURSOR = 'waybill.seq-cursor.v1\0';
const VALUE_KEYS = [
  'status',
  'price',
  'counts',
  'network',
  'drStatus',
  'drStatuscode',
  'drErrcode',
  'drTime',
];

/**
 * The receipt item of an event row: its stored values under their keys, the whole item stored as JSON, or none
 * stored: its record's.
 */
function itemOf(row) {
  if (row.item === null) return dlrItem(row, row.message_id, row.recipient);
  if (row.item.startsWith('{')) return JSON.parse(row.item);
  const values = JSON.parse(row.item);
  const item = { type: 'dlr', messageid: row.message_id, to: row.recipient };
  for (let i = 0; i < VALUE_KEYS.length; i++) if (values[i] !== null) item[VALUE_KEYS[i]] = values[i];
  return item;
}

/** `GET /receipts`, as `(query, request) => [status, body]`. */
export function receiptsRoutes(db, authenticate) {
  const events = db.prepare(
    `SELECT e.seq, e.id, m.id AS message_id, m.channel_user_id AS recipient, e.recorded_at, e.item, m.sms_status, m.network, m.price,
       m.counts, m.dr_statuscode, m.dr_errcode, m.dr_time
     FROM receipt_events e JOIN messages m ON m.ref = e.message_ref
     WHERE e.account_id = ? AND e.seq > ? ORDER BY e.seq LIMIT ?`,
  );
  return {
    '/receipts'(query, request) {
      const given = credentials(query, request.headers.authorization);
      const account = given && authenticate(given.key, given.secret);
      if (!account) return [401, { detail: 'invalid credentials' }];
      const binding = ['receipts', account.id];
      const limit = Number(query.get('limit') ?? 100);
      let after = 0;
      const cursor = query.get('after');
      if (cursor) {
        const dot = cursor.indexOf('.');
        const payload = cursor.slice(0, dot);
        if (dot <= 0 || cursor.slice(dot + 1) !== cursorMac(SEQ_CURSOR, payload, binding))
          return [400, { detail: 'after is not a cursor of this feed' }];
        after = Number(Buffer.from(payload, 'base64url').toString('utf8'));
      }
      const rows = events.all(account.ref, after, limit + 1);
      const page = rows.slice(0, limit);
      const last = page.length > 0 ? page[page.length - 1].seq : after;
      const payload = Buffer.from(String(last)).toString('base64url');
      return [
        200,
        {
          receipts: page.map((e) => ({
            id: e.id,
            recordedAt: new Date(e.recorded_at).toISOString(),
            receipt: itemOf(e),
          })),
          nextCursor: `${payload}.${cursorMac(SEQ_CURSOR, payload, binding)}`,
          hasMore: rows.length > limit,
        },
      ];
    },
  };
}
