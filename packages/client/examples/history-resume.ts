import { WaybillClient } from '@waybill/client';

const client = new WaybillClient();
const contact = { channel: 'WHATSAPP', channelUserId: '447700900123' } as const;

// Read one page and keep its nextCursor (a string you can store anywhere)…
const pages = client.messages.history({ ...contact, size: 20 }).pages();
const first = await pages.next();
const saved = first.done ? null : first.value.nextCursor;

// …then, in another process or another day, resume the walk just before that page.
if (saved !== null) {
  const rest = client.messages.history({ ...contact, cursor: saved });
  for (const m of await rest.take(5)) console.log(m.createdAt, m.id);
}
