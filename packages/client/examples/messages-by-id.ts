import { WaybillClient } from '@waybill/client';

const client = new WaybillClient();

// 45 ids: three requests of at most 20, merged and ordered oldest first.
const ids = Array.from({ length: 45 }, (_, i) => `demo-wa-${String(i + 1).padStart(4, '0')}`);
for (const m of await client.messages.get([...ids, 'no-such-id'])) {
  console.log(m.createdAt, m.id, m.channel, m.channelUserId, m.status, m.text);
}
