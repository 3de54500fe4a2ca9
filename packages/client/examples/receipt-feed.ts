import { WaybillClient } from '@waybill/client';

const client = new WaybillClient();
// Start where the last run stopped (its `feed.nextCursor`), or from the oldest receipt.
const feed = client.receipts.list({ after: process.env.SAVED_CURSOR || undefined, limit: 1000 });
for await (const event of feed) {
  console.log(
    event.id,
    event.recordedAt,
    event.receipt.messageid,
    event.receipt.to,
    event.receipt.drStatuscode,
  );
}
console.log('resume with', feed.nextCursor);
