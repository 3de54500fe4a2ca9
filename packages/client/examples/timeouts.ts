import { WaybillClient } from '@waybill/client';

const client = new WaybillClient({ maxRetries: 4, timeoutMs: 10_000 });
const controller = new AbortController();
const timer = setTimeout(() => controller.abort(), 2_000); // say, the user went away
try {
  const items = await client.dlr.get('demo-sms-multi', { signal: controller.signal, timeoutMs: 5_000 });
  console.log(items.length, 'items');
} finally {
  clearTimeout(timer);
}
