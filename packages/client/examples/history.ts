import { WaybillClient } from '@waybill/client';

const client = new WaybillClient();
const contact = { channel: 'WHATSAPP', channelUserId: '447700900123' } as const;

// Newest to oldest, fetching pages backwards as you go; `break` stops fetching.
let shown = 0;
for await (const m of client.messages.history({ ...contact, size: 50 })) {
  console.log(m.createdAt, m.direction, m.text);
  if (++shown === 60) break;
}

// The pages exactly as the service returns them: newest page first, each page ordered oldest first.
for await (const page of client.messages.campaign('spring-sale', { channel: 'SMS', size: 5 }).pages()) {
  console.log(page.messages.length, page.hasMore, page.nextCursor);
}

// The latest 10, newest first, naming the contact by its id this time.
const [record] = await client.messages.get(['demo-wa-0001']);
if (record) {
  const latest = await client.messages.history({ channel: 'WHATSAPP', contactId: record.contactId }).take(10);
  console.log(latest.map((m) => m.id).join(' '));
}
