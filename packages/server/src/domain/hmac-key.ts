import { createSecretKey, type KeyObject } from 'node:crypto';

// createHmac() with a raw Buffer imports the key on every call (~7% of a /dlr request, docs/benchmarks.md);
// a KeyObject made once per pepper skips that.
const keys = new WeakMap<Buffer, KeyObject>();

/** The pepper as a reusable HMAC key. */
export function hmacKey(pepper: Buffer): KeyObject {
  let key = keys.get(pepper);
  if (!key) {
    key = createSecretKey(pepper);
    keys.set(pepper, key);
  }
  return key;
}
