import { createHmac } from 'node:crypto';
import type { CallbackSecrets } from '../records.js';

/** Standard Webhooks signing of callback deliveries (CONTRACT §9). */

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
      const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
      const mac = createHmac('sha256', key)
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
