import { createHmac, timingSafeEqual } from 'node:crypto';
import { hmacKey } from './hmac-key.js';
import type { Position } from './records.js';

/**
 * What a cursor is bound to: replaying it with another account, contact, channel or campaign filter fails.
 * The page size is deliberately not part of it, nor the endpoint (a v1 cursor works on /messages).
 */
export interface CursorBinding {
  accountId: string;
  contactId: string | null;
  channel: string | null;
  campaignId: string | null;
}

const MAC_BYTES = 16;

function mac(key: Buffer, payload: string, binding: CursorBinding): Buffer {
  return createHmac('sha256', hmacKey(key))
    .update('waybill.cursor.v1\0')
    .update(payload)
    .update('\0')
    .update(JSON.stringify([binding.accountId, binding.contactId, binding.channel, binding.campaignId]))
    .digest()
    .subarray(0, MAC_BYTES);
}

/** An opaque token `<base64url position>.<base64url mac>`; the binding is signed but not carried. */
export function encodeCursor(key: Buffer, position: Position, binding: CursorBinding): string {
  const payload = Buffer.from(
    JSON.stringify([position.createdAt.getTime(), position.id, position.channelUserId]),
  ).toString('base64url');
  return `${payload}.${mac(key, payload, binding).toString('base64url')}`;
}

/** The position a cursor points at, or null when it was altered, forged or replayed under another binding. */
export function decodeCursor(key: Buffer, token: string, binding: CursorBinding): Position | null {
  const dot = token.indexOf('.');
  if (dot <= 0 || token.length > 512) return null;
  const payload = token.slice(0, dot);
  // Compared as text: Buffer's base64 decoder forgives '+', '/' and stray low bits, so one cursor would
  // otherwise have many spellings, all accepted.
  const given = Buffer.from(token.slice(dot + 1));
  const expected = Buffer.from(mac(key, payload, binding).toString('base64url'));
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  try {
    const value: unknown = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    if (!Array.isArray(value) || value.length !== 3) return null;
    const [ms, id, channelUserId] = value as unknown[];
    if (typeof ms !== 'number' || typeof id !== 'string' || typeof channelUserId !== 'string') return null;
    return { createdAt: new Date(ms), id, channelUserId };
  } catch {
    return null;
  }
}

/**
 * A cursor over a sequence (the receipt feed, the delivery list): `<seq>.<mac>`, signed like history cursors
 * and bound to `binding` (the account, and whatever else the listing is filtered by).
 */
export function encodeSeqCursor(key: Buffer, seq: number, binding: readonly (string | null)[]): string {
  const payload = Buffer.from(String(seq)).toString('base64url');
  return `${payload}.${seqMac(key, payload, binding)}`;
}

/** The sequence a cursor points after, or null when it was altered, forged or given under another binding. */
export function decodeSeqCursor(
  key: Buffer,
  token: string,
  binding: readonly (string | null)[],
): number | null {
  const dot = token.indexOf('.');
  if (dot <= 0 || token.length > 128) return null;
  const payload = token.slice(0, dot);
  const given = Buffer.from(token.slice(dot + 1));
  const expected = Buffer.from(seqMac(key, payload, binding));
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  const text = Buffer.from(payload, 'base64url').toString('utf8');
  if (!/^(0|[1-9][0-9]{0,15})$/.test(text)) return null;
  const seq = Number(text);
  return Number.isSafeInteger(seq) ? seq : null;
}

function seqMac(key: Buffer, payload: string, binding: readonly (string | null)[]): string {
  return createHmac('sha256', hmacKey(key))
    .update('waybill.seq-cursor.v1\0')
    .update(payload)
    .update('\0')
    .update(JSON.stringify(binding))
    .digest()
    .subarray(0, MAC_BYTES)
    .toString('base64url');
}
