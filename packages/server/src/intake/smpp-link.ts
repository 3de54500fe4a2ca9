import type { Socket } from 'node:net';
import { CMD, encode, PduFramer, type PduHeader, readHeader } from './smpp-pdu.js';

/**
 * One TCP (or TLS) connection to an SMSC: frames PDUs, matches responses to the requests this side sent (each
 * with its own deadline), and hands incoming requests to `onRequest`. Whatever ends it — the peer, an error, a
 * stream that is not SMPP, {@link SmppLink.drop} — it ends once: the socket is destroyed, every request still
 * waiting fails, and {@link SmppLink.closed} resolves with the reason.
 */
export class SmppLink {
  /** Resolves with the reason the link ended. */
  readonly closed: Promise<string>;
  private readonly framer = new PduFramer();
  private readonly waiting = new Map<
    number,
    { resolve: (header: PduHeader) => void; reject: (error: Error) => void; timer: NodeJS.Timeout }
  >();
  private sequence = 0;
  private ended = false;
  private end!: (reason: string) => void;

  constructor(
    private readonly socket: Socket,
    private readonly onRequest: (header: PduHeader, pdu: Buffer) => void,
  ) {
    this.closed = new Promise((resolve) => {
      this.end = resolve;
    });
    socket.on('data', (chunk: Buffer) => this.read(chunk));
    socket.on('error', (error) => this.drop(`connection error: ${error.message}`));
    socket.on('close', () => this.drop('the SMSC closed the connection'));
  }

  get open(): boolean {
    return !this.ended;
  }

  private read(chunk: Buffer): void {
    let pdus: Buffer[];
    try {
      pdus = this.framer.push(chunk);
    } catch (error) {
      this.drop((error as Error).message);
      return;
    }
    for (const pdu of pdus) {
      if (this.ended) return;
      const header = readHeader(pdu);
      if ((header.commandId & CMD.generic_nack) !== 0) {
        const waiter = this.waiting.get(header.sequence);
        if (waiter === undefined) continue; // late, after its deadline: nothing waits for it
        this.waiting.delete(header.sequence);
        clearTimeout(waiter.timer);
        waiter.resolve(header);
      } else {
        this.onRequest(header, pdu);
      }
    }
  }

  /** Sends a request and resolves with its response's header; rejects past `timeoutMs` or when the link ends. */
  request(command: string, fields: Record<string, unknown>, timeoutMs: number): Promise<PduHeader> {
    if (this.ended) return Promise.reject(new Error('the link is closed'));
    this.sequence = this.sequence >= 0x7fffffff ? 1 : this.sequence + 1;
    const sequence = this.sequence;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(sequence);
        reject(new Error(`${command} was not answered within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiting.set(sequence, { resolve, reject, timer });
      this.socket.write(encode(command, sequence, fields));
    });
  }

  /** Writes a response; a no-op once the link has ended (the SMSC then delivers the request again). */
  respond(bytes: Buffer): void {
    if (!this.ended) this.socket.write(bytes);
  }

  /**
   * Writes a group's responses in one write: one system call for the group instead of one per PDU (a quarter
   * of an SMPP group's own CPU when written one by one, profiled in docs/benchmarks.md, "Receipt intake").
   */
  respondAll(responses: Buffer[]): void {
    if (!this.ended && responses.length > 0) this.socket.write(Buffer.concat(responses));
  }

  /** Stops reading (the bind's queue is full); TCP flow control then holds the SMSC back. */
  pause(): void {
    this.socket.pause();
  }

  resume(): void {
    this.socket.resume();
  }

  /** Ends the link at once with `reason`. */
  drop(reason: string): void {
    if (this.ended) return;
    this.ended = true;
    for (const waiter of this.waiting.values()) {
      clearTimeout(waiter.timer);
      waiter.reject(new Error(reason));
    }
    this.waiting.clear();
    this.socket.destroy();
    this.end(reason);
  }
}
