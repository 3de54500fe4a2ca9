import { WaybillClient } from '@waybill/client';

const client = new WaybillClient();
const controller = new AbortController();
process.once('SIGINT', () => controller.abort());

const follower = client.receipts.follow({ intervalMs: 5_000, signal: controller.signal });
for await (const event of follower) {
  console.log(event.recordedAt, event.receipt.to, event.receipt.drStatuscode);
}
console.log('stopped; resume with', follower.nextCursor);
