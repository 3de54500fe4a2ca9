/**
 * `@waybill/client`: the typed, zero-dependency SDK of Waybill, the delivery-receipt and message-history
 * service.
 *
 * @example
 * ```ts
 * import { WaybillClient, isDelivered } from '@waybill/client';
 *
 * const client = new WaybillClient(); // WAYBILL_URL, WAYBILL_KEY, WAYBILL_SECRET
 * const delivered = (await client.dlr.get('m-1')).filter(isDelivered);
 * ```
 */

export {
  type FetchFunction,
  type SleepFunction,
  WaybillClient,
  type WaybillClientOptions,
} from './client.js';
export {
  AbortError,
  API_ERROR_CODES,
  ApiError,
  type ApiErrorCode,
  type ApiErrorInit,
  ConnectionError,
  createApiError,
  DlrSearchNotSupportedError,
  InvalidCredentialsError,
  InvalidParametersError,
  isApiError,
  isConnectionError,
  isRateLimitError,
  isTimeoutError,
  isWaybillError,
  isWebhookVerificationError,
  MissingParametersError,
  PROBLEM_CODES,
  QuotaExceededError,
  RateLimitError,
  SystemError,
  TimeoutError,
  UnauthorizedIpError,
  UnsupportedByServerError,
  WaybillError,
  type WaybillErrorOptions,
  WebhookVerificationError,
  type WebhookVerificationFailure,
} from './errors.js';
export { MessagePager, ReceiptFollower, ReceiptPager } from './pagination.js';
export { DR_ERRCODES, describeErrcode, hasReceipt, isDelivered, parseDrTime } from './receipts.js';
export { Dlr } from './resources/dlr.js';
export {
  type CampaignParams,
  type HistoryParams,
  MAX_CONCURRENT_REQUESTS,
  MESSAGE_IDS_PER_REQUEST,
  Messages,
  type PageOptions,
} from './resources/messages.js';
export {
  DEFAULT_FOLLOW_INTERVAL_MS,
  MAX_RECEIPTS_PER_PAGE,
  type ReceiptFollowParams,
  type ReceiptListParams,
  Receipts,
} from './resources/receipts.js';
export type {
  Channel,
  DeliveredDlrItem,
  Direction,
  DlrItem,
  DlrItemBase,
  DlrItemWithoutReceipt,
  DlrItemWithReceipt,
  DrErrcode,
  DrStatus,
  DrStatuscode,
  MessagePage,
  MessageRecord,
  MessageStatus,
  ReceiptEvent,
  ReceiptPage,
  RequestOptions,
  SendStatus,
  WaybillWarning,
} from './types.js';
export { type VerifyWebhookOptions, verifyWebhook, type WebhookHeaders } from './webhooks.js';
