import { normalizeDlrItem } from '../internal/normalize.js';
import { type Transport, toApiError, type WireResponse } from '../internal/transport.js';
import type { DlrItem, RequestOptions } from '../types.js';

/**
 * Delivery receipts of SMS messages: `GET /dlr` (spec §4.1).
 *
 * @example
 * ```ts
 * const items = await client.dlr.get('m-1');
 * ```
 */
export class Dlr {
  readonly #transport: Transport;

  /** @internal Use `client.dlr`. */
  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /**
   * The delivery state of every SMS recipient of `messageId`, in the order the recipients were first sent
   * to. An unknown id (or one of another account) gives `[]`. Success is decided by the body, an array,
   * never by the HTTP status alone: a failure object `{code, descr}` throws the matching `ApiError`
   * subclass even when it comes with HTTP 200.
   *
   * @example
   * ```ts
   * for (const item of await client.dlr.get('m-1', { timeoutMs: 5_000 })) {
   *   if (isDelivered(item)) console.log(`${item.to} delivered at ${item.drTimeDate.toISOString()}`);
   *   else if (hasReceipt(item)) console.log(`${item.to}: ${item.drStatuscode}, ${describeErrcode(item.drErrcode)}`);
   *   else console.log(`${item.to}: no receipt yet (send status ${item.status})`);
   * }
   * ```
   */
  get(messageId: string, options: RequestOptions = {}): Promise<DlrItem[]> {
    return this.#transport.get('/dlr', { messageid: messageId }, 'query', readDlrAnswer, options);
  }
}

function readDlrAnswer(response: WireResponse): DlrItem[] {
  if (!Array.isArray(response.body)) throw toApiError(response);
  const items: DlrItem[] = [];
  for (const raw of response.body) {
    const item = normalizeDlrItem(raw);
    // An array of something else is not a receipt list: report it like any unreadable answer.
    if (!item) throw toApiError({ ...response, body: undefined });
    items.push(item);
  }
  return items;
}
