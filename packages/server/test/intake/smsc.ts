import type { AddressInfo } from 'node:net';
import { createServer, type PDU, type Session } from 'smpp';

/** A submit_sm the simulator took, with the message id it answered. */
export interface Submitted {
  messageId: string;
  pdu: PDU;
  session: Session;
}

/** What the simulator was asked to do by the ESME. */
export interface SmscEvents {
  binds: number;
  unbinds: number;
  enquireLinks: number;
}

/**
 * An SMSC simulator on the `smpp` package's server: accepts binds (or refuses them), answers enquire_link unless
 * told to go silent, answers unbind, and sends deliver_sm to the bound ESME. A submit_sm (from a gateway such as
 * Kannel bound as transceiver) is answered with the next of `nextMessageIds` (else a counter's decimal) and
 * kept in `submitted`, so the test decides when its receipt goes out (`sendReceipt`).
 */
export class Smsc {
  readonly events: SmscEvents = { binds: 0, unbinds: 0, enquireLinks: 0 };
  /** Sessions bound now. */
  readonly bound = new Set<Session>();
  /** The most sessions bound at once. */
  maxBound = 0;
  silent = false;
  refuseBinds = false;
  /** Every submit_sm answered, oldest first. */
  readonly submitted: Submitted[] = [];
  /** The message ids the next submit_sm answers get, in order. */
  readonly nextMessageIds: string[] = [];
  private counter = 1000;
  private readonly server = createServer((session) => {
    session.on('error', () => {});
    session.on('bind_receiver', (pdu: PDU) => this.bind(session, pdu));
    session.on('bind_transceiver', (pdu: PDU) => this.bind(session, pdu));
    session.on('enquire_link', (pdu: PDU) => {
      this.events.enquireLinks += 1;
      if (!this.silent) session.send(pdu.response());
    });
    session.on('submit_sm', (pdu: PDU) => {
      this.counter += 1;
      const messageId = this.nextMessageIds.shift() ?? String(this.counter);
      this.submitted.push({ messageId, pdu, session });
      session.send(pdu.response({ message_id: messageId }));
    });
    session.on('unbind', (pdu: PDU) => {
      this.events.unbinds += 1;
      this.bound.delete(session);
      session.send(pdu.response());
      session.close();
    });
    session.on('close', () => this.bound.delete(session));
  });

  private bind(session: Session, pdu: PDU): void {
    this.events.binds += 1;
    if (this.refuseBinds) {
      session.send(pdu.response({ command_status: 0x0d }));
      return;
    }
    this.lastBind = pdu;
    this.bound.add(session);
    this.maxBound = Math.max(this.maxBound, this.bound.size);
    session.send(pdu.response());
  }

  lastBind: PDU | null = null;

  async listen(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return (this.server.address() as AddressInfo).port;
  }

  /** The one bound session. */
  session(): Session {
    const [session] = this.bound;
    if (session === undefined) throw new Error('no ESME is bound');
    return session;
  }

  /** Sends a deliver_sm and resolves with the command_status of its deliver_sm_resp. */
  deliver(fields: Record<string, unknown>, session = this.session()): Promise<number> {
    return new Promise((resolve, reject) => {
      const sent = (session.deliver_sm as (f: unknown, cb: (r: PDU) => void) => boolean).call(
        session,
        { source_addr: '447700900001', destination_addr: 'WAYBILL', ...fields },
        (response: PDU) => resolve(response.command_status),
      );
      if (!sent) reject(new Error('the session is closed'));
    });
  }

  /**
   * Sends the receipt of a submitted message as an SMSC does: a deliver_sm from the recipient, `esm_class` 0x04
   * (SMSC delivery receipt), the receipt text with the message id and `doneAt` as its done date; resolves with the
   * status of its deliver_sm_resp.
   */
  sendReceipt(submitted: Submitted, doneAt = new Date(), stat = 'DELIVRD', err = '000'): Promise<number> {
    const { pdu, session, messageId } = submitted;
    return this.deliver(
      {
        source_addr: pdu.destination_addr,
        destination_addr: pdu.source_addr,
        esm_class: 0x04,
        short_message: receiptText(messageId, stat, err, smppDate(doneAt)),
      },
      session,
    );
  }

  /** Sends an unbind to the ESME and resolves with the status of its unbind_resp. */
  unbind(session = this.session()): Promise<number> {
    return new Promise((resolve) => {
      (session.unbind as (cb: (r: PDU) => void) => boolean).call(session, (response: PDU) =>
        resolve(response.command_status),
      );
    });
  }

  /** Cuts every connection without a word (a network failure, an SMSC restart). */
  cut(): void {
    for (const session of this.server.sessions) session.destroy();
    this.bound.clear();
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** A receipt text in the de-facto format. */
export const receiptText = (id: string, stat: string, err = '000', doneDate = '2611221001') =>
  Buffer.from(
    `id:${id} sub:001 dlvrd:001 submit date:2611221000 done date:${doneDate} stat:${stat} err:${err} text:Hello`,
    'latin1',
  );

/** A receipt date, YYMMDDhhmm in UTC. */
export const smppDate = (at: Date) => at.toISOString().replace(/[-T:]/g, '').slice(2, 12);
