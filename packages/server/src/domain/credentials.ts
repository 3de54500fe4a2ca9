import { createHmac, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';
import { hmacKey } from './hmac-key.js';

const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** 8 random alphanumeric characters from the CSPRNG (randomInt draws without modulo bias). */
export function generateCredential(): string {
  let out = '';
  for (let i = 0; i < 8; i++) out += ALPHANUMERIC[randomInt(ALPHANUMERIC.length)];
  return out;
}

/**
 * The stored form of an API secret: HMAC-SHA256 under the server pepper. A secret has only 62^8 values, so
 * a slow KDF would not save a stolen table without the pepper, and with the pepper kept apart from the
 * database one HMAC per request is enough (and keeps /dlr fast).
 */
export function hashSecret(pepper: Buffer, secret: string): Buffer {
  return createHmac('sha256', hmacKey(pepper)).update('waybill.secret.v1\0').update(secret).digest();
}

export function secretMatches(pepper: Buffer, secret: string, stored: Buffer): boolean {
  const candidate = hashSecret(pepper, secret);
  return candidate.length === stored.length && timingSafeEqual(candidate, stored);
}

/** A Standard Webhooks signing secret: `whsec_` + base64 of 32 random bytes. */
export function generateCallbackSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}
