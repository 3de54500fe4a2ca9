import type { PDU, Session } from 'smpp';
import type { Smsc } from './smsc.js';

/** One receipt the simulated SMSC owes the ESME, and what it does once the ESME acknowledged it. */
export interface OwedReceipt {
  /** The deliver_sm's fields beyond the addresses (esm_class, short_message, TLVs). */
  fields: Record<string, unknown>;
  /** Owed once this one is acknowledged ESME_ROK: a final state that follows an intermediate one. */
  next?: OwedReceipt;
  /** Every command_status the ESME answered this receipt with, in order. */
  answers: number[];
  /** When it was last sent (Date.now()). */
  sentAt?: number;
}

/**
 * The SMSC's side of receipt delivery with its own bookkeeping, as a real SMSC keeps it: it sends what it owes
 * to whichever ESME is bound (up to `window` unanswered at once), forgets a receipt only when it is answered
 * ESME_ROK, and delivers again anything answered otherwise (after `retryMs`) or left unanswered by a link that
 * closed. `onAnswer` sees every answer as it arrives.
 */
export class ReceiptStream {
  /** Owed and not in flight, oldest first. */
  private readonly owed: OwedReceipt[] = [];
  private readonly inFlight = new Map<Session, Set<OwedReceipt>>();
  private timer: NodeJS.Timeout | null = null;
  private resumeAt = 0;
  /** Acknowledged ESME_ROK, in the order the acknowledgements arrived. */
  readonly acked: OwedReceipt[] = [];
  /** Deliveries sent, first ones and redeliveries. */
  sent = 0;

  constructor(
    private readonly smsc: Smsc,
    private readonly options: {
      window: number;
      retryMs: number;
      onAnswer?: (receipt: OwedReceipt, status: number) => void;
    },
  ) {}

  /** Receipts owed from now on; returns them (their `answers` fill in as they come). */
  owe(fields: Record<string, unknown>[]): OwedReceipt[] {
    const receipts = fields.map((f) => ({ fields: f, answers: [] }));
    this.owed.push(...receipts);
    return receipts;
  }

  /** Owes a receipt and, once it is acknowledged, the next one. */
  oweChain(chain: Record<string, unknown>[]): OwedReceipt[] {
    const receipts: OwedReceipt[] = [];
    for (const fields of chain.toReversed()) {
      const next = receipts[0];
      receipts.unshift({ fields, answers: [], ...(next ? { next } : {}) });
    }
    if (receipts[0]) this.owed.push(receipts[0]);
    return receipts;
  }

  /** How many receipts are still owed (waiting or unanswered). */
  get outstanding(): number {
    let n = this.owed.length;
    for (const set of this.inFlight.values()) n += set.size;
    return n;
  }

  start(): void {
    this.timer ??= setInterval(() => this.pump(), 5);
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  private pump(): void {
    if (Date.now() < this.resumeAt) return;
    const [session] = this.smsc.bound;
    if (session === undefined) return;
    let flying = this.inFlight.get(session);
    if (flying === undefined) {
      const mine = new Set<OwedReceipt>();
      flying = mine;
      this.inFlight.set(session, mine);
      // A link that closes leaves its unanswered receipts owed: they go out again first, in their order.
      session.once('close', () => {
        this.inFlight.delete(session);
        this.owed.unshift(...mine);
        mine.clear();
      });
    }
    while (flying.size < this.options.window && this.owed.length > 0) {
      const receipt = this.owed.shift() as OwedReceipt;
      const sending = flying;
      const sent = (session.deliver_sm as (f: unknown, cb: (r: PDU) => void) => boolean).call(
        session,
        { source_addr: '447700900001', destination_addr: 'WAYBILL', ...receipt.fields },
        (response: PDU) => {
          if (!sending.delete(receipt)) return; // the link closed meanwhile: owed again already
          const status = response.command_status;
          receipt.answers.push(status);
          this.options.onAnswer?.(receipt, status);
          if (status === 0) {
            this.acked.push(receipt);
            if (receipt.next) this.owed.push(receipt.next);
          } else {
            this.owed.unshift(receipt);
            this.resumeAt = Date.now() + this.options.retryMs;
          }
        },
      );
      if (!sent) {
        this.owed.unshift(receipt);
        return;
      }
      this.sent += 1;
      receipt.sentAt = Date.now();
      flying.add(receipt);
    }
  }
}
