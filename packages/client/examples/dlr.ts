import { describeErrcode, hasReceipt, isDelivered, WaybillClient } from '@waybill/client';

const client = new WaybillClient(); // WAYBILL_URL, WAYBILL_KEY, WAYBILL_SECRET

// demo-sms-multi went to three numbers; demo-sms-0008 is still being sent.
for (const messageId of ['demo-sms-multi', 'demo-sms-0008']) {
  for (const item of await client.dlr.get(messageId)) {
    if (isDelivered(item)) {
      console.log(`${item.to}: delivered at ${item.drTimeDate.toISOString()}`);
    } else if (hasReceipt(item)) {
      console.log(`${item.to}: ${item.drStatuscode} (${describeErrcode(item.drErrcode) ?? item.drErrcode})`);
    } else {
      console.log(`${item.to}: no receipt yet, send status ${item.status}`);
    }
  }
}
