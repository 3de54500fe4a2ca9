import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/**
 * Callback secrets at rest. The server must sign with them, so they cannot be hashed like API secrets; they
 * are sealed with AES-256-GCM under a key derived (HKDF-SHA256) from the pepper, which is kept apart from the
 * database. A stolen database alone then yields no signing key.
 */

const PREFIX = 'sealed:v1:';

function boxKey(pepper: Buffer): Buffer {
  return Buffer.from(hkdfSync('sha256', pepper, Buffer.alloc(0), 'waybill.callback-secret.v1', 32));
}

/** `sealed:v1:<base64 iv | tag | ciphertext>`. */
export function sealSecret(pepper: Buffer, secret: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', boxKey(pepper), iv);
  const body = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return PREFIX + Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64');
}

/**
 * The clear secret. A value stored before sealing existed (no prefix) is returned as it is; one sealed under
 * another pepper throws, since signing with a wrong key would only make every delivery fail verification.
 */
export function openSecret(pepper: Buffer, stored: string): string {
  if (!stored.startsWith(PREFIX)) return stored;
  const raw = Buffer.from(stored.slice(PREFIX.length), 'base64');
  const decipher = createDecipheriv('aes-256-gcm', boxKey(pepper), raw.subarray(0, 12));
  decipher.setAuthTag(raw.subarray(12, 28));
  return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
}

export const isSealed = (stored: string): boolean => stored.startsWith(PREFIX);
