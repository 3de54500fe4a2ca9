// The SMSC of the intake-smpp scenario: the `smpp` package's server, run in the bench process. It accepts the
// bind Waybill makes as an ESME, answers enquire_link and unbind, and pushes deliver_sm receipts with a window of
// outstanding PDUs, as a real SMSC pipelines them; the clock for each is deliver_sm written → deliver_sm_resp read.
import smpp from 'smpp';

/** SMPP 3.4 message_state values of the receipts pushed (TLV 0x0427), by their `stat:` word. */
const MESSAGE_STATE = { DELIVRD: 2, EXPIRED: 3, UNDELIV: 5 };

/** `YYMMDDhhmm` in UTC, the receipt text's date format. */
function smppDate(ms) {
  return new Date(ms).toISOString().replace(/[-T:]/g, '').slice(2, 12);
}

/**
 * The receipt as real SMSCs send it: esm_class 0x04, the de-facto text, and the TLVs receipted_message_id and
 * message_state beside it.
 */
export function receiptFields({ carrierId, to, stat, err }, now = Date.now()) {
  const date = smppDate(now);
  return {
    source_addr: to,
    destination_addr: 'WAYBILL',
    esm_class: 0x04,
    short_message: Buffer.from(
      `id:${carrierId} sub:001 dlvrd:${stat === 'DELIVRD' ? '001' : '000'} submit date:${date} ` +
        `done date:${date} stat:${stat} err:${err} text:Your parcel is out`,
      'latin1',
    ),
    receipted_message_id: carrierId,
    message_state: MESSAGE_STATE[stat],
  };
}

export class Smsc {
  /** Sessions bound now. */
  bound = new Set();
  #server = smpp.createServer((session) => {
    session.on('error', () => {});
    const bind = (pdu) => {
      this.bound.add(session);
      session.send(pdu.response());
    };
    session.on('bind_receiver', bind);
    session.on('bind_transceiver', bind);
    session.on('enquire_link', (pdu) => session.send(pdu.response()));
    session.on('unbind', (pdu) => {
      this.bound.delete(session);
      session.send(pdu.response());
      session.close();
    });
    session.on('close', () => this.bound.delete(session));
  });

  async listen() {
    await new Promise((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    return this.#server.address().port;
  }

  /** Resolves once an ESME is bound, or throws after `ms`. */
  async waitForBind(ms) {
    const deadline = Date.now() + ms;
    while (this.bound.size === 0) {
      if (Date.now() > deadline) throw new Error(`no ESME bound within ${ms} ms`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /**
   * Sends one deliver_sm per item of `fields`, at most `window` unanswered at a time, to the bound session.
   * Resolves with each PDU's command_status (null when the link closed first) and its latency in ms.
   */
  push(fields, window) {
    const [session] = this.bound;
    if (session === undefined) return Promise.reject(new Error('no ESME is bound'));
    const statuses = new Array(fields.length).fill(null);
    const latencies = new Float64Array(fields.length);
    return new Promise((resolve, reject) => {
      let next = 0;
      let answered = 0;
      const sendNext = () => {
        const i = next++;
        const sentAt = performance.now();
        const ok = session.deliver_sm(fields[i], (resp) => {
          latencies[i] = performance.now() - sentAt;
          statuses[i] = resp.command_status;
          answered += 1;
          if (next < fields.length) sendNext();
          else if (answered === fields.length) resolve({ statuses, latencies });
        });
        if (!ok) reject(new Error(`the session closed after ${answered} answers`));
      };
      session.once('close', () => {
        if (answered < fields.length) reject(new Error(`the session closed after ${answered} answers`));
      });
      for (let k = 0; k < Math.min(window, fields.length); k++) sendNext();
      if (fields.length === 0) resolve({ statuses, latencies });
    });
  }

  async close() {
    for (const session of this.#server.sessions ?? []) session.destroy();
    await new Promise((resolve) => this.#server.close(() => resolve()));
  }
}
