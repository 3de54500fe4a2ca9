import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A callback receiver on 127.0.0.1 for the relay tests: records every request, answers as told. */

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  /** When the request had arrived in full (ms since the epoch). */
  at: number;
}

export interface Answer {
  status?: number;
  headers?: Record<string, string>;
  body?: string;
  /** Wait this long before answering. */
  delayMs?: number;
}

export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  /** Received requests by webhook-id. */
  byId(id: string): Received[];
  /** The most requests with one webhook-id in flight at once, over the receiver's life. */
  maxConcurrentPerId: number;
  /** The most requests with one body `to` in flight at once. */
  maxConcurrentPerRecipient: number;
  /** The most requests in flight at once. */
  maxConcurrent: number;
  /** How each request is answered (default 200 at once). */
  answer: (request: Received, index: number) => Answer | Promise<Answer>;
  close(): Promise<void>;
}

export async function startReceiver(answer: Receiver['answer'] = () => ({ status: 200 })): Promise<Receiver> {
  const inFlightById = new Map<string, number>();
  const inFlightByTo = new Map<string, number>();
  let inFlight = 0;
  const bump = (map: Map<string, number>, key: string, by: number) => {
    const n = (map.get(key) ?? 0) + by;
    if (n === 0) map.delete(key);
    else map.set(key, n);
    return n;
  };
  const receiver: Receiver = {
    url: '',
    port: 0,
    received: [],
    byId: (id) => receiver.received.filter((r) => r.headers['webhook-id'] === id),
    maxConcurrentPerId: 0,
    maxConcurrentPerRecipient: 0,
    maxConcurrent: 0,
    answer,
    close: () =>
      new Promise((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', async () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const id = String(req.headers['webhook-id'] ?? '');
      let to = '';
      try {
        to = String((JSON.parse(body) as { to?: string }).to ?? '');
      } catch {}
      inFlight++;
      receiver.maxConcurrent = Math.max(receiver.maxConcurrent, inFlight);
      receiver.maxConcurrentPerId = Math.max(receiver.maxConcurrentPerId, bump(inFlightById, id, 1));
      receiver.maxConcurrentPerRecipient = Math.max(
        receiver.maxConcurrentPerRecipient,
        bump(inFlightByTo, to, 1),
      );
      const request: Received = { headers: req.headers, body, at: Date.now() };
      const index = receiver.received.push(request) - 1;
      let reply: Answer = { status: 500 };
      try {
        reply = await receiver.answer(request, index);
      } catch {}
      const finish = () => {
        inFlight--;
        bump(inFlightById, id, -1);
        bump(inFlightByTo, to, -1);
        if (res.destroyed) return;
        res.writeHead(reply.status ?? 200, reply.headers ?? {});
        res.end(reply.body ?? '');
      };
      if (reply.delayMs) setTimeout(finish, reply.delayMs);
      else finish();
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  receiver.port = (server.address() as AddressInfo).port;
  receiver.url = `http://127.0.0.1:${receiver.port}/hook`;
  return receiver;
}

/** Polls `check` until it returns true, or fails after `timeoutMs`. */
export async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs = 5000, what = 'condition') {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((done) => setTimeout(done, 20));
  }
}
