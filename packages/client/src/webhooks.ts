import { WaybillError, WebhookVerificationError } from './errors.js';
import { base64ToBytes } from './internal/base64.js';
import { normalizeDlrItem } from './internal/normalize.js';
import { parseDrTime } from './receipts.js';
import type { DlrItem } from './types.js';

/** Request headers as the web platform (`Headers`) or Node (`IncomingMessage.headers`) hold them. */
export type WebhookHeaders = Headers | Readonly<Record<string, string | readonly string[] | undefined>>;

/** Options of `verifyWebhook`. */
export interface VerifyWebhookOptions {
  /**
   * How far `webhook-timestamp` may be from now, in seconds, either way.
   * @default 300
   */
  toleranceSeconds?: number | undefined;
  /** The current time (a `Date` or milliseconds since the epoch); for tests. @default Date.now() */
  now?: Date | number | undefined;
}

/**
 * Verifies a delivery-receipt callback signed per Standard Webhooks (CONTRACT §9) and returns its receipt,
 * normalized like `client.dlr.get` items. Pass the body exactly as received (before any JSON parsing) and
 * the account's `callbackSecret` (`whsec_…`). Rejects with `WebhookVerificationError` when a header is
 * missing, the timestamp is more than `toleranceSeconds` off, no signature matches, or the body is not a
 * receipt item (`invalid_payload`: `type` other than "dlr", an empty `messageid` or `to`, a `status` other than
 * "1"/"0"/"400", a `price` that is not a finite number, `counts` that is not a whole number, or receipt fields
 * that do not make a receipt). Uses WebCrypto only (Node 20+, Deno, Bun, browsers, edge runtimes).
 *
 * @example
 * ```ts
 * // Any fetch-style handler (Hono, Next.js route handlers, Deno, Bun, Workers):
 * export async function POST(request: Request): Promise<Response> {
 *   try {
 *     const item = await verifyWebhook(await request.text(), request.headers, process.env.WAYBILL_CALLBACK_SECRET!);
 *     await record(item.messageid, item.to, item.drStatuscode);
 *     return new Response(null, { status: 204 });
 *   } catch (err) {
 *     if (isWebhookVerificationError(err)) return new Response(err.reason, { status: 400 });
 *     throw err;
 *   }
 * }
 * ```
 */
export async function verifyWebhook(
  rawBody: string | Uint8Array,
  headers: WebhookHeaders,
  secret: string,
  options: VerifyWebhookOptions = {},
): Promise<DlrItem> {
  const key = secretBytes(secret);
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (id === undefined || timestamp === undefined || signatures === undefined) {
    throw new WebhookVerificationError(
      'missing_headers',
      'webhook-id, webhook-timestamp and webhook-signature are all required',
    );
  }

  if (!/^\d{1,15}$/.test(timestamp)) {
    throw new WebhookVerificationError('invalid_timestamp', 'webhook-timestamp is not Unix seconds');
  }
  const { toleranceSeconds = 300, now = Date.now() } = options;
  const nowSeconds = Math.floor((typeof now === 'number' ? now : now.getTime()) / 1000);
  const skew = nowSeconds - Number(timestamp);
  if (skew > toleranceSeconds) {
    throw new WebhookVerificationError('timestamp_too_old', `webhook-timestamp is ${skew} s old`);
  }
  if (-skew > toleranceSeconds) {
    throw new WebhookVerificationError('timestamp_too_new', `webhook-timestamp is ${-skew} s in the future`);
  }

  const body = typeof rawBody === 'string' ? new TextEncoder().encode(rawBody) : rawBody;
  const expected = await hmacSha256(key, concat(new TextEncoder().encode(`${id}.${timestamp}.`), body));
  let matched = false;
  for (const entry of signatures.split(/\s+/)) {
    const comma = entry.indexOf(',');
    if (comma < 0 || entry.slice(0, comma) !== 'v1') continue;
    const candidate = base64ToBytes(entry.slice(comma + 1));
    // Compare every candidate, even after a match: the time taken says nothing about which one matched.
    if (candidate !== undefined && constantTimeEqual(candidate, expected)) matched = true;
  }
  if (!matched) throw new WebhookVerificationError('invalid_signature', 'No webhook-signature matches');

  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(body));
  } catch {
    throw new WebhookVerificationError('invalid_payload', 'The body is not JSON');
  }
  const problem = receiptProblem(parsed);
  const item = problem === undefined ? normalizeDlrItem(parsed) : undefined;
  if (!item) {
    throw new WebhookVerificationError(
      'invalid_payload',
      `The body is not a delivery receipt item: ${problem ?? 'not an object'}`,
    );
  }
  return item;
}

const SEND_STATUSES: readonly string[] = ['1', '0', '400'];
const DR_STATUSES: readonly unknown[] = [0, 400, '0', '400'];
const DR_STATUSCODES: readonly string[] = [
  'delivered',
  'accepted',
  'rejected',
  'failed',
  'expired',
  'deleted',
  'unknown',
];

/** A string, or a number where the spec lets one stand for it; `undefined` for anything else. */
const textOf = (value: unknown): string | undefined =>
  typeof value === 'string'
    ? value
    : typeof value === 'number' && Number.isFinite(value)
      ? String(value)
      : undefined;

/**
 * Why a signed body is not a `/dlr` item (CONTRACT §2), or `undefined` when it is one. Strict where a wrong
 * value would mislead the receiver (a body signed with the right secret can still be something else, a test
 * ping say); lenient only where the spec lets a string arrive as a JSON number, and about extra fields.
 */
function receiptProblem(raw: unknown): string | undefined {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return 'not an object';
  const item = raw as Record<string, unknown>;
  if (item.type !== 'dlr') return 'type is not "dlr"';
  if (!textOf(item.messageid)) return 'messageid is missing or empty';
  if (!textOf(item.to)) return 'to is missing or empty';
  if (!SEND_STATUSES.includes(textOf(item.status)?.trim() ?? '')) return 'status is not "1", "0" or "400"';
  if (typeof item.price !== 'number' || !Number.isFinite(item.price)) return 'price is not a finite number';
  if (typeof item.counts !== 'number' || !Number.isInteger(item.counts) || item.counts < 0) {
    return 'counts is not a whole number';
  }
  if (item.network !== undefined && item.network !== null && !textOf(item.network))
    return 'network is not text';
  const receiptFields = [item.drStatus, item.drStatuscode, item.drErrcode, item.drTime];
  if (receiptFields.every((v) => v === undefined || v === null)) return undefined;
  if (!DR_STATUSES.includes(item.drStatus)) return 'drStatus is not 0 or 400';
  if (!DR_STATUSCODES.includes(textOf(item.drStatuscode) ?? ''))
    return 'drStatuscode is not a receipt status';
  if (item.drErrcode !== undefined && item.drErrcode !== null && !textOf(item.drErrcode)) {
    return 'drErrcode is not a code';
  }
  const drTime = textOf(item.drTime);
  if (drTime === undefined || Number.isNaN(parseDrTime(drTime).getTime())) return 'drTime is not a time';
  return undefined;
}

function secretBytes(secret: string): Uint8Array {
  const bytes = base64ToBytes(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret);
  if (bytes === undefined || bytes.length === 0) {
    // A configuration mistake, not a forged request: it must not look like a 400 for the sender.
    throw new TypeError('The webhook secret must be "whsec_" followed by base64');
  }
  return bytes;
}

function header(headers: WebhookHeaders, name: string): string | undefined {
  let value: string | readonly string[] | null | undefined;
  if (typeof (headers as Headers).get === 'function') {
    value = (headers as Headers).get(name);
  } else {
    const record = headers as Readonly<Record<string, string | readonly string[] | undefined>>;
    value = record[name] ?? Object.entries(record).find(([k]) => k.toLowerCase() === name)?.[1];
  }
  const text = typeof value === 'string' ? value : value?.join(' ');
  const trimmed = text?.trim();
  return trimmed === undefined || trimmed === '' ? undefined : trimmed;
}

async function hmacSha256(key: Uint8Array, data: Uint8Array): Promise<Uint8Array> {
  const subtle = globalThis.crypto?.subtle;
  if (subtle === undefined)
    throw new WaybillError('verifyWebhook needs WebCrypto (crypto.subtle): Node 20 or later');
  const cryptoKey = await subtle.importKey('raw', toBuffer(key), { name: 'HMAC', hash: 'SHA-256' }, false, [
    'sign',
  ]);
  return new Uint8Array(await subtle.sign('HMAC', cryptoKey, toBuffer(data)));
}

// WebCrypto's types want an ArrayBuffer-backed view; a Uint8Array over a SharedArrayBuffer does not fit.
const toBuffer = (bytes: Uint8Array): Uint8Array<ArrayBuffer> => new Uint8Array(bytes);

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}

function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= (a[i] ?? 0) ^ (b[i] ?? 0);
  return diff === 0;
}
