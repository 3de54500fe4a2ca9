/**
 * What a project on an old lib (`["es2018", "dom"]`, or `["es2020"]` with @types/node) writes against @waybill/client: `tsconfig.json` beside this file
 * compiles it against the built declarations, with their own lib checks on (no skipLibCheck).
 */
import {
  type ApiError,
  ConnectionError,
  type DlrItem,
  hasReceipt,
  isApiError,
  type MessageRecord,
  type ReceiptEvent,
  verifyWebhook,
  WaybillClient,
  WaybillError,
} from '@waybill/client';

export async function use(client: WaybillClient): Promise<unknown[]> {
  const out: unknown[] = [];
  const items: DlrItem[] = await client.dlr.get('m-1', { signal: new AbortController().signal });
  for (const item of items) if (hasReceipt(item)) out.push(item.drTimeDate.getTime());
  for await (const m of client.messages.history({
    channel: 'SMS',
    channelUserId: '447700900123',
    size: 50,
  })) {
    const record: MessageRecord = m;
    out.push(record.id);
  }
  for await (const event of client.receipts.list({ limit: 100 })) {
    const e: ReceiptEvent = event;
    out.push(e.id);
  }
  out.push(await verifyWebhook(new Uint8Array(0), new Headers(), 'whsec_x'));
  try {
    await client.messages.get(['m-1']);
  } catch (err) {
    // `cause` and `param` are readable without ES2022's Error.cause in the lib.
    if (err instanceof WaybillError) out.push(err.cause);
    if (isApiError(err)) {
      const api: ApiError = err;
      out.push(api.param, api.problemCode, api.headers.get('retry-after'));
    }
  }
  out.push(new ConnectionError('unreachable', { cause: new Error('ECONNREFUSED') }).cause);
  return out;
}

export const client = new WaybillClient({
  baseUrl: 'http://127.0.0.1:8080',
  fetch: (input, init) => fetch(input, init),
});
