import { WaybillError, WebhookVerificationError } from './errors.js';
import { base64ToBytes } from './internal/base64.js';
import { normalizeDlrItem } from './internal/normalize.js';
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
 * receipt. Uses WebCrypto only (Node 20+, Deno, Bun, browsers, edge runtimes).
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
  const item = normalizeDlrItem(parsed);
  if (!item) throw new WebhookVerificationError('invalid_payload', 'The body is not a delivery receipt item');
  return item;
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
