import { DLR_FAILURES, type DlrFailureCode, PROBLEMS, type ProblemCode } from '../domain/errors.js';

/**
 * The examples of the OpenAPI document (and so of /docs): real answers, consistent with one another and with
 * the contract — a delivered receipt has send status "0", drStatus 0 and billed parts, a /dlr failure carries
 * the spec's code and descr for its HTTP status. test/http/openapi-examples.test.ts validates each one against
 * its schema.
 */

const ACCOUNT_ID = '0193f6a2-5b1c-7d3e-8f40-1a2b3c4d5e6f';
const CONTACT_ID = '0193f6a2-6c2d-7e4f-9a51-2b3c4d5e6f70';
const CONVERSATION_ID = '0193f6a2-6c2d-7e4f-9a51-3c4d5e6f7081';
const EVENT_ID = 'evt_01JD8X3F6R5T2V9W0Y4Z7A1B3C';
const REQUEST_ID = '6f1c2b9e-3a4d-4e8f-9b0a-1c2d3e4f5a6b';

/** One recipient whose receipt says delivered. */
export const DLR_ITEM_EXAMPLE = {
  type: 'dlr',
  messageid: 'demo-sms-multi',
  to: '447700900201',
  status: '0',
  price: 0.05,
  counts: 1,
  network: '23415',
  drStatus: 0,
  drStatuscode: 'delivered',
  drErrcode: '0',
  drTime: '2026-11-22 09:41:00.000',
};

/** /dlr of a message sent to two numbers: one delivered, one still in progress with no receipt yet. */
export const DLR_ITEMS_EXAMPLE = [
  DLR_ITEM_EXAMPLE,
  { type: 'dlr', messageid: 'demo-sms-multi', to: '447700900202', status: '1', price: 0.05, counts: 1 },
];

/** The /dlr failure object of `code`, exactly as sent. */
export const dlrFailureExample = (code: DlrFailureCode) => ({ code, descr: DLR_FAILURES[code].descr });

export const MESSAGE_RECORD_EXAMPLE = {
  id: 'demo-sms-0001',
  channel: 'SMS',
  direction: 'outbound',
  contactId: CONTACT_ID,
  channelUserId: '447700900123',
  conversationId: CONVERSATION_ID,
  campaignId: 'spring-sale',
  text: 'Your order has shipped',
  content: null,
  status: 'delivered',
  createdAt: '2026-11-22T09:40:58.120Z',
};

export const MESSAGES_ENVELOPE_EXAMPLE = {
  messages: [MESSAGE_RECORD_EXAMPLE],
  nextCursor: 'djEuZXhhbXBsZS1jdXJzb3I.c2lnbmF0dXJl',
  hasMore: true,
};

export const RECEIPT_EVENT_EXAMPLE = {
  id: EVENT_ID,
  recordedAt: '2026-11-22T09:41:00.250Z',
  receipt: DLR_ITEM_EXAMPLE,
};

export const RECEIPT_FEED_EXAMPLE = {
  receipts: [RECEIPT_EVENT_EXAMPLE],
  nextCursor: 'djEuZmVlZC1jdXJzb3I.c2lnbmF0dXJl',
  hasMore: false,
};

export const ACCOUNT_EXAMPLE = {
  id: ACCOUNT_ID,
  name: 'Acme Retail',
  key: 'AcmeKey1',
  ipWhitelist: ['203.0.113.0/24'],
  dlrQueryEnabled: true,
  balance: 120.5,
  creditLimit: 0,
  callbackUrl: 'https://hooks.acme.example/waybill',
  callbackEnabled: true,
  createdAt: '2026-11-01T08:00:00.000Z',
};
export const SECRET_EXAMPLE = 'Sx7kQ2mP';
export const CALLBACK_SECRET_EXAMPLE = 'whsec_MfKQ9r8GKYqXwWYbxnHWKhyr9ajtgZNu3zqHphoaEnM=';

export const ACCOUNT_CREATE_EXAMPLE = {
  name: 'Acme Retail',
  ipWhitelist: ['203.0.113.0/24'],
  balance: 120.5,
  callbackUrl: 'https://hooks.acme.example/waybill',
};
export const ACCOUNT_PATCH_EXAMPLE = { creditLimit: 50, callbackEnabled: true };

export const MESSAGE_ITEM_EXAMPLE = {
  id: 'order-1234',
  channel: 'SMS',
  channelUserId: '447700900123',
  campaignId: 'spring-sale',
  createdAt: '2026-11-22T09:40:58.120Z',
  text: 'Your order has shipped',
  sms: { status: '0', network: '23415', price: 0.05, counts: 1 },
};
export const RECEIPT_ITEM_EXAMPLE = {
  messageId: 'order-1234',
  to: '447700900123',
  drStatuscode: 'delivered',
  drErrcode: '0',
  drTime: '2026-11-22 09:41:00.000',
};

export const ATTEMPT_EXAMPLE = {
  at: '2026-11-22T09:41:01.000Z',
  httpStatus: 503,
  error: 'HTTP 503',
  durationMs: 87,
};
export const DELIVERY_EXAMPLE = {
  id: EVENT_ID,
  eventId: EVENT_ID,
  messageId: 'demo-sms-multi',
  to: '447700900201',
  state: 'pending',
  attempts: 1,
  createdAt: '2026-11-22T09:41:00.250Z',
  nextAttemptAt: '2026-11-22T09:41:06.000Z',
  lastAttempt: ATTEMPT_EXAMPLE,
  payload: DLR_ITEM_EXAMPLE,
};

/** A problem body of `code`, with the detail (and extension members) a real one of that kind carries. */
export function problemExample(code: ProblemCode) {
  const { status, title } = PROBLEMS[code];
  const { detail, ...extra } = PROBLEM_DETAILS[code];
  return { type: 'about:blank', title, status, detail, code, requestId: REQUEST_ID, ...extra };
}

const PROBLEM_DETAILS: Record<ProblemCode, { detail: string; [member: string]: unknown }> = {
  invalid_request: { detail: 'size must be an integer from 1 to 100', param: 'size' },
  unauthorized: { detail: 'invalid credentials' },
  ip_not_allowed: { detail: 'the caller’s IP address is not on this account’s whitelist' },
  not_found: { detail: `no account ${ACCOUNT_ID}` },
  method_not_allowed: { detail: 'POST is not allowed here; use GET or HEAD' },
  request_timeout: { detail: 'the request head did not arrive within 10 s' },
  conflict: {
    detail:
      'this delivery is superseded by a newer event of the same recipient, whose delivery carries the current state',
  },
  gone: {
    detail: 'this endpoint was removed on 2027-01-01T00:00:00.000Z; use GET /messages',
    successor: '/messages',
  },
  payload_too_large: { detail: 'the request body is larger than 5 MiB' },
  uri_too_long: { detail: 'the request line is longer than 8 KiB' },
  unsupported_media_type: {
    detail: 'Content-Type "text/plain" is not supported; send the body as application/json',
  },
  expectation_failed: { detail: 'only Expect: 100-continue is supported' },
  headers_too_large: { detail: 'the request head is larger than 16 KiB' },
  locked_out: { detail: 'this key is locked after too many failed secrets' },
  rate_limited: { detail: 'over 50 requests per second for this account' },
  internal: { detail: 'an unexpected error occurred; the request id identifies it in the log' },
  unavailable: { detail: 'the database is unavailable; retry shortly' },
};

/** An intake route of Kannel, as the operator API shows it. */
export const ROUTE_EXAMPLE = {
  name: 'kannel-eu',
  kind: 'kannel',
  accounts: [ACCOUNT_ID],
  timezone: 'Europe/Berlin',
  errorMap: { '027': '2', '0x0B': '3' },
  enabled: true,
  createdAt: '2026-11-01T08:05:00.000Z',
};
/** The same route when it is made (or its token rotated): the only time the token is shown. */
export const ROUTE_WITH_TOKEN_EXAMPLE = { ...ROUTE_EXAMPLE, token: 'wbi_3q2-7wEXAMPLEEXAMPLEEXAMPLEEXAMP' };
/** An SMPP route as `GET /admin/v1/routes/{name}` shows it: enabled, and no binds in this version. */
export const ROUTE_DETAIL_EXAMPLE = {
  name: 'smsc-eu',
  kind: 'smpp',
  accounts: [],
  timezone: 'UTC',
  errorMap: {},
  enabled: true,
  createdAt: '2026-11-01T08:10:00.000Z',
  smpp: {
    host: 'smsc.example.net',
    port: 2775,
    systemId: 'waybill',
    bindType: 'receiver',
    tls: false,
    enquireLinkSeconds: 30,
  },
  counts: { matched: 0, parked: 0, garbled: 0, ignored: 0 },
  status: {
    state: 'bound',
    since: '2026-11-22T09:58:12.000Z',
    lastError: null,
    heldBy: 'web1:4242:a1b2c3',
  },
};
export const ROUTE_LIST_EXAMPLE = { routes: [ROUTE_EXAMPLE] };
export const GARBLED_LIST_EXAMPLE = {
  garbled: [
    {
      at: '2026-11-22T09:41:02.000Z',
      text: 'type=3&account=x&messageid=order-1234&to=447700900123',
      pdu: null,
    },
  ],
};
/** The 409 of a route name that is taken. */
export const ROUTE_CONFLICT_EXAMPLE = {
  ...problemExample('conflict'),
  detail: 'a route named kannel-eu exists already',
  param: 'name',
};
