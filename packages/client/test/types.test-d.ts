/**
 * Type tests: checked by the compiler, never executed. `tsc -p packages/client/test/tsconfig.json` (part of
 * `npm run typecheck`) fails on a wrong assertion, and so does vitest's typecheck mode, which reports them as
 * tests: `npx vitest run --typecheck.only --typecheck.tsconfig packages/client/test/tsconfig.json packages/client`.
 * A plain `vitest run` does not pick this file up (`.test-d.ts`): at run time `expectTypeOf` checks nothing.
 */
import { describe, expectTypeOf, it } from 'vitest';
import {
  type ApiError,
  type Channel,
  type DeliveredDlrItem,
  type DlrItem,
  type DrErrcode,
  type DrStatuscode,
  describeErrcode,
  hasReceipt,
  type InvalidCredentialsError,
  isApiError,
  isDelivered,
  isRateLimitError,
  type MessagePage,
  type MessagePager,
  type MessageRecord,
  type RateLimitError,
  type ReceiptEvent,
  type ReceiptFollower,
  type ReceiptPage,
  type ReceiptPager,
  type RequestOptions,
  type SendStatus,
  verifyWebhook,
  WaybillClient,
  type WaybillClientOptions,
  WaybillError,
  type WaybillErrorOptions,
  type WaybillWarning,
  type WebhookVerificationFailure,
} from '../src/index.js';

// Values to ask the types of; never run.
const client = new WaybillClient({
  baseUrl: 'http://x.test',
  key: 'K',
  secret: 'S',
  fetch: async () => Response.json([]),
});
const item = { type: 'dlr', messageid: 'm', to: '1', status: '0', price: 0, counts: 1 } as DlrItem;

describe('public types', () => {
  it('pins the client options', () => {
    expectTypeOf<WaybillClientOptions>().toHaveProperty('baseUrl').toEqualTypeOf<string | undefined>();
    expectTypeOf<WaybillClientOptions['onWarning']>().toEqualTypeOf<
      ((warning: WaybillWarning) => void) | undefined
    >();
    expectTypeOf(globalThis.fetch).toExtend<NonNullable<WaybillClientOptions['fetch']>>();
    expectTypeOf(WaybillClient).constructorParameters.toEqualTypeOf<
      [options?: WaybillClientOptions | undefined]
    >();
  });

  it('pins dlr.get', () => {
    expectTypeOf(client.dlr.get).parameters.toEqualTypeOf<
      [messageId: string, options?: RequestOptions | undefined]
    >();
    expectTypeOf<ReturnType<typeof client.dlr.get>>().toEqualTypeOf<Promise<DlrItem[]>>();
    expectTypeOf(item.status).toEqualTypeOf<SendStatus>();
    expectTypeOf(item.to).toBeString();
    expectTypeOf(item.drTimeDate).toEqualTypeOf<Date | undefined>();
    if (hasReceipt(item)) {
      expectTypeOf(item.drTimeDate).toEqualTypeOf<Date>();
      expectTypeOf(item.drTime).toBeString();
      expectTypeOf(item.drStatus).toEqualTypeOf<0 | 400>();
      expectTypeOf(item.drStatuscode).toEqualTypeOf<DrStatuscode>();
      expectTypeOf(item.drErrcode).toExtend<string>();
      expectTypeOf<DrErrcode>().toExtend<typeof item.drErrcode>();
    }
    if (item.drStatus !== undefined) expectTypeOf(item.drTime).toBeString();
    if (isDelivered(item)) expectTypeOf(item.drTimeDate).toEqualTypeOf<Date>();
  });

  it('narrows with isDelivered to delivered items only: a receipt that is not delivered stays readable', () => {
    if (isDelivered(item)) {
      expectTypeOf(item).toEqualTypeOf<DeliveredDlrItem>();
      expectTypeOf(item.drStatuscode).toEqualTypeOf<'delivered'>();
    } else {
      // Not `DlrItemWithoutReceipt`: a failed or accepted receipt is not delivered either.
      expectTypeOf(item).toEqualTypeOf<DlrItem>();
      if (hasReceipt(item)) {
        expectTypeOf(item.to).toBeString();
        expectTypeOf(item.drStatuscode).toEqualTypeOf<DrStatuscode>();
      } else {
        expectTypeOf(item.status).toEqualTypeOf<SendStatus>();
      }
    }
    expectTypeOf([item].filter(isDelivered)).toEqualTypeOf<DeliveredDlrItem[]>();
    expectTypeOf<DeliveredDlrItem>().toExtend<DlrItem>();
  });

  it('pins the receipt helpers', () => {
    expectTypeOf(describeErrcode('8')).toEqualTypeOf<string>();
    expectTypeOf(describeErrcode('42' as string)).toEqualTypeOf<string | undefined>();
    expectTypeOf(describeErrcode).toBeCallableWith(8);
  });

  it('pins the message methods', () => {
    expectTypeOf<ReturnType<typeof client.messages.get>>().toEqualTypeOf<Promise<MessageRecord[]>>();
    expectTypeOf(client.messages.get).toBeCallableWith(new Set(['a']));
    const pager = client.messages.history({ channel: 'SMS', channelUserId: '447700900123' });
    expectTypeOf(pager).toEqualTypeOf<MessagePager>();
    expectTypeOf(pager).toExtend<AsyncIterable<MessageRecord>>();
    expectTypeOf(pager.pages()).toExtend<AsyncIterable<MessagePage>>();
    expectTypeOf<ReturnType<typeof pager.take>>().toEqualTypeOf<Promise<MessageRecord[]>>();
    expectTypeOf(client.messages.campaign('spring')).toEqualTypeOf<MessagePager>();
    expectTypeOf<MessagePage['nextCursor']>().toEqualTypeOf<string | null>();
    expectTypeOf<MessageRecord['channel']>().toEqualTypeOf<Channel>();
    expectTypeOf<MessageRecord['campaignId']>().toEqualTypeOf<string | null>();
  });

  it('pins the receipt feed', () => {
    const feed = client.receipts.list({ after: 'c', limit: 500 });
    expectTypeOf(feed).toEqualTypeOf<ReceiptPager>();
    expectTypeOf(feed).toExtend<AsyncIterable<ReceiptEvent>>();
    expectTypeOf(feed.pages()).toExtend<AsyncIterable<ReceiptPage>>();
    expectTypeOf(feed.nextCursor).toEqualTypeOf<string | undefined>();
    expectTypeOf(client.receipts.list).toBeCallableWith();
    const follower = client.receipts.follow({ intervalMs: 5000, signal: new AbortController().signal });
    expectTypeOf(follower).toEqualTypeOf<ReceiptFollower>();
    expectTypeOf(follower).toExtend<AsyncIterableIterator<ReceiptEvent>>();
    expectTypeOf(follower.nextCursor).toEqualTypeOf<string | undefined>();
    expectTypeOf<ReceiptPage['nextCursor']>().toEqualTypeOf<string>();
    expectTypeOf<ReceiptEvent['receipt']>().toEqualTypeOf<DlrItem>();
    expectTypeOf<ReceiptEvent['recordedAt']>().toBeString();
  });

  it('names the page size size, as the API does, and still takes the deprecated pageSize', () => {
    expectTypeOf(client.messages.history).toBeCallableWith({ channel: 'SMS', contactId: 'c', size: 50 });
    expectTypeOf(client.messages.history).toBeCallableWith({ channel: 'SMS', contactId: 'c', pageSize: 50 });
    expectTypeOf(client.messages.campaign).toBeCallableWith('spring', { size: 50 });
    expectTypeOf(client.messages.campaign).toBeCallableWith('spring', { pageSize: 50 });
    // @ts-expect-error a page size is a number
    client.messages.history({ channel: 'SMS', contactId: 'c', size: '50' });
  });

  it('demands exactly one of channelUserId and contactId', () => {
    client.messages.history({ channel: 'SMS', contactId: 'c' });
    // @ts-expect-error both given
    client.messages.history({ channel: 'SMS', contactId: 'c', channelUserId: 'u' });
    // @ts-expect-error neither given
    client.messages.history({ channel: 'SMS' });
    // @ts-expect-error not a channel
    client.messages.history({ channel: 'EMAIL', contactId: 'c' });
  });

  it('pins the error classes', () => {
    expectTypeOf<InvalidCredentialsError['code']>().toEqualTypeOf<4>();
    expectTypeOf<RateLimitError['code']>().toEqualTypeOf<429>();
    expectTypeOf<RateLimitError['retryAfterSeconds']>().toEqualTypeOf<number | undefined>();
    expectTypeOf<ApiError['status']>().toBeNumber();
    expectTypeOf<ApiError['requestId']>().toEqualTypeOf<string | undefined>();
    expectTypeOf<ApiError['problemCode']>().toEqualTypeOf<string | undefined>();
    expectTypeOf<ApiError['param']>().toEqualTypeOf<string | undefined>();
    expectTypeOf<WaybillError['cause']>().toEqualTypeOf<unknown>();
    expectTypeOf(WaybillError).constructorParameters.toEqualTypeOf<
      [message?: string | undefined, options?: WaybillErrorOptions | undefined]
    >();
    expectTypeOf<InvalidCredentialsError>().toExtend<ApiError>();
    expectTypeOf(isApiError).guards.toEqualTypeOf<ApiError>();
    expectTypeOf(isRateLimitError).guards.toEqualTypeOf<RateLimitError>();
  });

  it('pins verifyWebhook', () => {
    expectTypeOf(verifyWebhook).toBeCallableWith('{}', new Headers(), 'whsec_x');
    expectTypeOf(verifyWebhook).toBeCallableWith(
      new Uint8Array(),
      { 'webhook-id': ['a'], other: undefined },
      's',
      {
        toleranceSeconds: 60,
        now: new Date(),
      },
    );
    expectTypeOf<ReturnType<typeof verifyWebhook>>().toEqualTypeOf<Promise<DlrItem>>();
    expectTypeOf<WebhookVerificationFailure>().toExtend<string>();
  });
});
