import { ulid } from 'ulid';
import { CallbackHttpClient, CallbackRequestError } from '../callbacks/http-client.js';
import { callbackHeaders } from '../callbacks/relay.js';
import type { AppContext } from '../context.js';
import { signingSecrets } from '../domain/deliveries/signing.js';
import { ApiError } from '../domain/errors.js';
import type { Account } from '../domain/records.js';
import { openSecret } from '../domain/secret-box.js';
import type { DlrItem } from '../domain/wire.js';

/** What the receiver answered to a test delivery. */
export interface TestDeliveryResult {
  webhookId: string;
  url: string;
  /** Null when no answer came (then `error` says why). */
  status: number | null;
  error: string | null;
  durationMs: number;
}

/**
 * Sends the account's callback a signed sample `/dlr` item (CONTRACT §13 page 5): the relay's headers and
 * signing, the same guarded client and timeout, a `webhook-id` starting `evt_test`. Recorded nowhere: no event,
 * no delivery, no attempt. Callbacks switched off do not stop it (testing before switching on is the point);
 * an account without a callback URL is a 409.
 */
export async function sendTestDelivery(
  ctx: Pick<AppContext, 'store' | 'pepper' | 'config' | 'now'>,
  account: Account,
): Promise<TestDeliveryResult> {
  if (account.callbackUrl === null) throw new ApiError('conflict', 'Set a callback URL first.');
  const secrets = await ctx.store.getCallbackSecrets(account.id);
  if (!secrets) throw new ApiError('not_found', 'This account no longer exists.');
  const now = ctx.now().getTime();
  const item: DlrItem = {
    type: 'dlr',
    messageid: 'test',
    to: '447700900000',
    status: '0',
    price: 0,
    counts: 1,
    drStatus: 0,
    drStatuscode: 'delivered',
    drErrcode: '0',
    drTime: new Date(now).toISOString().replace('T', ' ').replace('Z', ''),
  };
  const body = JSON.stringify(item);
  const webhookId = `evt_test${ulid(now)}`;
  const headers = callbackHeaders(
    webhookId,
    now,
    body,
    signingSecrets(secrets, now).map((sealed) => openSecret(ctx.pepper, sealed)),
  );
  const client = new CallbackHttpClient({
    allowPrivate: ctx.config.callbackAllowPrivate,
    timeoutMs: ctx.config.callbackTimeoutMs,
  });
  const started = performance.now();
  try {
    const response = await client.post(account.callbackUrl, headers, body);
    return {
      webhookId,
      url: account.callbackUrl,
      status: response.status,
      error: null,
      durationMs: elapsed(started),
    };
  } catch (error) {
    const message = error instanceof CallbackRequestError ? error.message : 'the request failed';
    return {
      webhookId,
      url: account.callbackUrl,
      status: null,
      error: message,
      durationMs: elapsed(started),
    };
  } finally {
    await client.destroy();
  }
}

const elapsed = (started: number) => Math.round(performance.now() - started);
