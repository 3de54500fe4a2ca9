#!/usr/bin/env node
// The lean reference for /dlr (issue 19): what a valid /dlr request costs when nothing but its own work is done,
// written straight on node:http and better-sqlite3 — parse the query, compare key and secret, one prepared
// indexed query, build the items, JSON.stringify, X-Request-Id and Cache-Control, one JSON access-log line
// through a buffered stream. No whitelist, lockout, rate limit, quota, validation of odd input or problem
// documents: `npm run bench` measures it beside Waybill and the ceiling on the same dataset, so Waybill's cost
// splits into what the work needs and what the framework and the checks add. A benchmark process only: the
// server never imports it. It answers the bytes Waybill answers for a valid request (items as toDlrItem makes
// them, recipients in `seq` order).
//
// Environment: LEAN_SQLITE_FILE (the dataset), WAYBILL_PEPPER, WAYBILL_SQLITE_CACHE_MB (256).
import { createHmac, createSecretKey, randomUUID, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import Database from 'better-sqlite3';

const cacheMb = Number(process.env.WAYBILL_SQLITE_CACHE_MB ?? 256);
const db = new Database(process.env.LEAN_SQLITE_FILE, { fileMustExist: true });
db.pragma(`mmap_size = ${Math.floor(cacheMb * 2 ** 20)}`);
db.pragma(`cache_size = ${-Math.floor(cacheMb * 1024)}`);
const accountByKey = db.prepare('SELECT id, secret_hash FROM accounts WHERE key = ?');
const recipients = db.prepare(
  `SELECT id, channel_user_id, sms_status, network, price, counts, dr_statuscode, dr_errcode, dr_time, seq
   FROM messages WHERE account_id = ? AND id = ? AND sms_status IS NOT NULL`,
);
const pepper = createSecretKey(Buffer.from(process.env.WAYBILL_PEPPER ?? '', 'utf8'));
const hashSecret = (secret) =>
  createHmac('sha256', pepper).update('waybill.secret.v1\0').update(secret).digest();

/** Accounts by key, each with the secret that last verified (Waybill's account cache does as much). */
const accounts = new Map();
function authenticate(key, secret) {
  let account = accounts.get(key);
  if (account === undefined) {
    const row = accountByKey.get(key);
    if (!row) return null;
    account = { id: row.id, hash: row.secret_hash, verified: null };
    accounts.set(key, account);
  }
  const candidate = Buffer.from(secret, 'utf8');
  const known = account.verified;
  if (known !== null && known.length === candidate.length && timingSafeEqual(known, candidate))
    return account;
  const hash = hashSecret(secret);
  if (hash.length !== account.hash.length || !timingSafeEqual(hash, account.hash)) return null;
  account.verified = candidate;
  return account;
}

function item(row) {
  const out = {
    type: 'dlr',
    messageid: row.id,
    to: row.channel_user_id,
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

// The access log: one line per request, written out once per turn of the event loop.
let pending = '';
const flush = () => {
  process.stdout.write(pending);
  pending = '';
};
function log(method, url, status, started) {
  if (pending === '') setImmediate(flush);
  const ms = Math.round((performance.now() - started) * 100) / 100;
  const redacted = url.replace(/([?&](?:key|secret)=)[^&]*/g, '$1[redacted]');
  pending += `${JSON.stringify({ level: 30, time: Date.now(), method, url: redacted, status, ms, msg: 'request' })}\n`;
}

function answer(response, status, body) {
  const bytes = Buffer.from(JSON.stringify(body));
  response.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': bytes.length,
    'cache-control': 'no-store',
    'x-request-id': randomUUID(),
  });
  response.end(bytes);
  return status;
}

function dlr(url, response) {
  const q = url.indexOf('?');
  if (url.slice(0, q < 0 ? url.length : q) !== '/dlr') return answer(response, 404, { code: 404 });
  const query = new URLSearchParams(q < 0 ? '' : url.slice(q + 1));
  const key = query.get('key');
  const secret = query.get('secret');
  const messageId = query.get('messageid');
  if (!key || !secret || !messageId) return answer(response, 400, { code: 2, descr: 'Missing parameters' });
  const account = authenticate(key, secret);
  if (account === null) return answer(response, 401, { code: 4, descr: 'Invalid credentials' });
  const rows = recipients.all(account.id, messageId);
  if (rows.length > 1) rows.sort((a, b) => a.seq - b.seq);
  return answer(response, 200, rows.map(item));
}

const server = http.createServer((request, response) => {
  const started = performance.now();
  request.resume();
  const status = dlr(request.url, response);
  log(request.method, request.url, status, started);
});
server.keepAliveTimeout = 72_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`listening at http://127.0.0.1:${server.address().port}\n`);
});
process.on('SIGTERM', () =>
  server.close(() => {
    flush();
    db.close();
    process.exit(0);
  }),
);
