import {
  InvalidCredentialsError,
  isApiError,
  isConnectionError,
  isRateLimitError,
  WaybillClient,
} from '@waybill/client';

const client = new WaybillClient({ maxRetries: 0 });
try {
  const items = await client.dlr.get('demo-sms-multi');
  console.log('ok:', items.length, 'items');
} catch (err) {
  if (err instanceof InvalidCredentialsError) console.error('check WAYBILL_KEY / WAYBILL_SECRET');
  else if (isRateLimitError(err)) console.error(`slow down, retry in ${err.retryAfterSeconds ?? '?'} s`);
  else if (isApiError(err)) console.error(err.code, err.problemCode, err.param, err.descr, err.requestId);
  else if (isConnectionError(err)) console.error('is the server running?', err.cause);
  else throw err;
  process.exitCode = 1;
}
