import { WaybillClient } from '@waybill/client';

const client = new WaybillClient({
  baseUrl: process.env.WAYBILL_URL ?? 'http://127.0.0.1:8080', // where `npm start` listens
  key: 'DEMOKEY1', // left out: WAYBILL_KEY
  secret: 'DEMOSECR', // left out: WAYBILL_SECRET
});

const items = await client.dlr.get('demo-sms-multi');
console.log(`demo-sms-multi went to ${items.length} numbers`);
