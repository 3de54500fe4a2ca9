#!/usr/bin/env node
// The lean reference (issue 19): what a valid request to a query endpoint costs when nothing but its own work is
// done, written straight on node:http and better-sqlite3 — parse the query, compare key and secret, one prepared
// indexed query (a history page: the contact's conversation first), build the items, JSON.stringify,
// X-Request-Id and Cache-Control, one JSON access-log line through a buffered stream. No whitelist, lockout,
// rate limit, quota, validation of odd input or problem documents: `npm run bench` measures it beside Waybill
// and the ceiling on the same dataset, so Waybill's cost splits into what the work needs and what the framework
// and the checks add. A benchmark process only: the server never imports it. For a valid request it answers
// the bytes Waybill answers (the harness compares them before it measures):
//
//   GET /dlr                                     bench/lib/lean-dlr.mjs
//   GET /messages, GET /api/v1/contacts/messages  bench/lib/lean-messages.mjs (mode 1; history by channelUserId)
//   GET /receipts                                bench/lib/lean-receipts.mjs
//
// Environment: LEAN_SQLITE_FILE (the dataset), WAYBILL_PEPPER, WAYBILL_SQLITE_CACHE_MB (256).
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import Database from 'better-sqlite3';
import { authenticator } from './lean-auth.mjs';
import { dlrRoutes } from './lean-dlr.mjs';
import { messagesRoutes } from './lean-messages.mjs';
import { receiptsRoutes } from './lean-receipts.mjs';

const cacheMb = Number(process.env.WAYBILL_SQLITE_CACHE_MB ?? 256);
const db = new Database(process.env.LEAN_SQLITE_FILE, { fileMustExist: true });
db.pragma(`mmap_size = ${Math.floor(cacheMb * 2 ** 20)}`);
db.pragma(`cache_size = ${-Math.floor(cacheMb * 1024)}`);
const authenticate = authenticator(db);
/** Each path's handler: `(query, request) => [status, body]`. */
const routes = new Map(
  Object.entries({
    ...dlrRoutes(db, authenticate),
    ...messagesRoutes(db, authenticate),
    ...receiptsRoutes(db, authenticate),
  }),
);

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

function answer(response, [status, body]) {
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

function handle(request) {
  const { url } = request;
  const q = url.indexOf('?');
  const route = routes.get(url.slice(0, q < 0 ? url.length : q));
  if (route === undefined) return [404, { code: 404 }];
  return route(new URLSearchParams(q < 0 ? '' : url.slice(q + 1)), request);
}

const server = http.createServer((request, response) => {
  const started = performance.now();
  request.resume();
  const status = answer(response, handle(request));
  log(request.method, request.url, status, started);
});
server.keepAliveTimeout = 72_000;
// An orderly exit on the harness's SIGTERM, so that a profile asked for with --cpu-prof is written.
process.on('SIGTERM', () => process.exit(0));
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
