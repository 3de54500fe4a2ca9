// The lean `/dlr` (bench/lib/lean.mjs): key and secret from the query, one prepared indexed query, the items as
// toDlrItem makes them, recipients in `seq` order.

/**
 * A receipt item as Waybill's toDlrItem builds it, from the columns /dlr reads (the message id and number
 * given apart by a row that names them otherwise).
 */
export function dlrItem(row, messageid = row.id, to = row.channel_user_id) {
  const out = {
    type: 'dlr',
    messageid,
    to,
    status: row.sms_status,
    price: row.price ?? 0,
    counts: row.counts ?? 1,
  };
  if (row.network !== null) out.network = row.network;
  if (row.dr_statuscode !== null) {
    out.drStatus = row.dr_statuscode === 'delivered' || row.dr_statuscode === 'accepted' ? 0 : 400;
    out.drStatuscode = row.dr_statuscode;
    out.drErrcode = row.dr_errcode ?? '0';
    out.drTime = new Date(row.dr_time ?? 0).toISOString().replace('T', ' ').slice(0, 23);
  }
  return out;
}

/** `GET /dlr`, as `(query) => [status, body]`. */
export function dlrRoutes(db, authenticate) {
  const recipients = db.prepare(
    `SELECT id, channel_user_id, sms_status, network, price, counts, dr_statuscode, dr_errcode, dr_time, seq
     FROM messages WHERE account_id = ? AND id = ? AND sms_status IS NOT NULL`,
  );
  return {
    '/dlr'(query) {
      const key = query.get('key');
      const secret = query.get('secret');
      const messageId = query.get('messageid');
      if (!key || !secret || !messageId) return [400, { code: 2, descr: 'Missing parameters' }];
      const account = authenticate(key, secret);
      if (account === null) return [401, { code: 4, descr: 'Invalid credentials' }];
      const rows = recipients.all(account.ref, messageId);
      if (rows.length > 1) rows.sort((a, b) => a.seq - b.seq);
      return [200, rows.map((row) => dlrItem(row))];
    },
  };
}
