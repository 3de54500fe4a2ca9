import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';
import type { CallbackSecrets } from '../records.js';

/** Standard Webhooks signing of callback deliveries (CONTRACT §9). */

/**
 * Signing keys by secret, imported once: createHmac() with a raw Buffer imports the key at every call, ~8 µs of
 * a delivery's ~230 (domain/hmac-key.ts says the same of the pepper). Bounded like the relay's cache of opened
 * secrets; a rotated secret is a new entry.
 */
const signingKeys = new Map<string, KeyObject>();

function signingKey(secret: string): KeyObject {
  let key = signingKeys.get(secret);
  if (key === undefined) {
    if (signingKeys.size >= 10_000) signingKeys.clear();
    key = createSecretKey(Buffer.from(secret.replace(/^whsec_/, ''), 'base64'));
    signingKeys.set(secret, key);
  }
  return key;
}

/**
 * The `webhook-signature` header of Standard Webhooks: `v1,<base64 HMAC-SHA256>` over
 * `<id>.<timestamp>.<body>` for each signing secret (`whsec_` + base64 key), space-separated.
 */
export function signWebhook(
  secrets: readonly string[],
  webhookId: string,
  timestampSeconds: number,
  body: string,
): string {
  return secrets
    .map((secret) => {
      const mac = createHmac('sha256', signingKey(secret))
        .update(`${webhookId}.${timestampSeconds}.${body}`)
        .digest('base64');
      return `v1,${mac}`;
    })
    .join(' ');
}

/**
 * The sealed secrets an attempt at `now` signs with: the current one, and the previous one while the grace
 * period of its rotation lasts (receivers roll over at their own pace).
 */
export function signingSecrets(secrets: CallbackSecrets, now: number): string[] {
  const list = [secrets.current];
  if (secrets.previous !== null && secrets.previousUntil !== null && now < secrets.previousUntil.getTime()) {
    list.push(secrets.previous);
  }
  return list;
}
