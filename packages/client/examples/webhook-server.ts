import { createServer } from 'node:http';
import { isWebhookVerificationError, verifyWebhook } from '@waybill/client';

const secret = process.env.WAYBILL_CALLBACK_SECRET; // the account's callbackSecret, whsec_…
if (secret === undefined) throw new Error('set WAYBILL_CALLBACK_SECRET');

const server = createServer(async (req, res) => {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  try {
    const item = await verifyWebhook(Buffer.concat(chunks), req.headers, secret);
    console.log(item.messageid, item.to, item.drStatuscode, item.drTimeDate?.toISOString());
    res.writeHead(204).end();
  } catch (err) {
    // missing_headers, timestamp_too_old, invalid_signature, invalid_payload, …
    if (isWebhookVerificationError(err)) res.writeHead(400).end(err.reason);
    else res.writeHead(500).end();
  }
});
server.listen(Number(process.env.PORT ?? 3000), () => console.log('listening', server.address()));
