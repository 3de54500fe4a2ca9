import { WaybillClient } from '@waybill/client';

// Told once if the server predates GET /messages and the SDK falls back to the deprecated endpoint.
const client = new WaybillClient({ onWarning: (w) => console.warn(`waybill: ${w.code}: ${w.message}`) });
const records = await client.messages.get(['demo-sms-0001']);
console.log(records.length, 'record');
