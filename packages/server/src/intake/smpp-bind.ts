import { isIP, type Socket, connect as tcpConnect } from 'node:net';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { connect as tlsConnect } from 'node:tls';
import type { FastifyBaseLogger } from 'fastify';
import type { AppContext } from '../context.js';
import type { IntakeRouteRecord } from '../domain/intake/route.js';
import { fromSmppReceipt, type Translation } from '../domain/intake/translate.js';
import { openSecret } from '../domain/secret-box.js';
import { KEEP_GARBLED } from '../http/intake-adapter.js';
import { applyCarrierReceipts, type CarrierNamedReceipt } from '../operations/intake-receipt.js';
import { type BindStatusRecord, StoreUnavailableError } from '../store/store.js';
import { SmppLink } from './smpp-link.js';
import { CMD, encodeResponse, type PduHeader, readIncomingMessage, STATUS } from './smpp-pdu.js';

/** Timings of a bind; the defaults are CONTRACT §12's, tests shorten them. */
export interface BindTimings {
  /** A lease lasts this long past its last renewal. @default 20000 */
  leaseTtlMs: number;
  /** The holder renews every this often; a process without the lease tries to take it as often. @default 5000 */
  leaseRenewMs: number;
  /** First reconnect delay; doubles per failure up to {@link maxBackoffMs}, with jitter. @default 1000 */
  minBackoffMs: number;
  /** @default 60000 */
  maxBackoffMs: number;
  /** Connecting, and each answer to bind, enquire_link and unbind, within this. @default 10000 */
  responseTimeoutMs: number;
}

export const DEFAULT_TIMINGS: BindTimings = {
  leaseTtlMs: 20_000,
  leaseRenewMs: 5_000,
  minBackoffMs: 1_000,
  maxBackoffMs: 60_000,
  responseTimeoutMs: 10_000,
};

/** What a bind needs of the running service. */
export type BindContext = Pick<AppContext, 'store' | 'metrics' | 'now' | 'deliveriesQueued' | 'pepper'> & {
  log: FastifyBaseLogger;
  /** This process's name in the lease (shown as `heldBy`). */
  holder: string;
  timings: BindTimings;
};

/** At most this many receipts are committed in one transaction. */
const MAX_BATCH = 500;
/** Past this many receipts waiting, the link stops reading until the queue drains below half. */
const HIGH_WATER = 2000;
/** A lease not renewed is given up this long before it expires, so that two holders never overlap. */
const LEASE_MARGIN_MS = 2000;
const leaseMargin = (ttlMs: number) => Math.min(LEASE_MARGIN_MS, ttlMs / 4);
/** Garbled text kept per receipt. */
const MAX_GARBLED_TEXT = 4096;

interface Arrived {
  header: PduHeader;
  pdu: Buffer;
}

/** The reconnect delay after `failures` failures in a row: exponential from min to max, equal jitter. */
export function backoffDelay(failures: number, timings: BindTimings, random = Math.random): number {
  const ceiling = Math.min(timings.maxBackoffMs, timings.minBackoffMs * 2 ** Math.min(failures, 30));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

/**
 * The bind of one SMPP route (CONTRACT §12 "SMPP binds"): takes the route's lease in the store and holds it
 * while it runs, connects and binds as an ESME, answers `enquire_link` and `unbind`, sends `enquire_link` every
 * `enquireLinkSeconds` and drops a link that does not answer, reconnects with backoff. Receipts are committed in
 * groups: what arrives while a commit runs goes in the next one, and each `deliver_sm_resp` is written only
 * after its receipt is committed or parked (`ESME_RX_T_APPNACK` when the database is unavailable).
 */
export class SmppBind {
  private state: BindStatusRecord = { state: 'connecting', since: null, lastError: null };
  private stopping = false;
  private link: SmppLink | null = null;
  /** The socket being connected, destroyed by stop() so that no connection outlives the bind. */
  private connecting: Socket | null = null;
  private leaseUntil = 0;
  private leaseTimer: NodeJS.Timeout | null = null;
  private leaseCall: Promise<boolean> | null = null;
  private wake: (() => void) | null = null;
  private running: Promise<void> | null = null;
  private readonly queue: Arrived[] = [];
  private committing: Promise<void> | null = null;

  constructor(
    /** The route as last read; its translation settings may change under a running bind. */
    public route: IntakeRouteRecord,
    private readonly ctx: BindContext,
  ) {}

  /** Whether this process holds the route's lease now. */
  get holdsLease(): boolean {
    return this.leaseUntil > Date.now();
  }

  get status(): BindStatusRecord {
    return { ...this.state };
  }

  start(): void {
    this.running ??= this.run().catch((error: unknown) => {
      this.ctx.log.error({ err: error, route: this.route.name }, 'SMPP bind stopped unexpectedly');
    });
  }

  /**
   * Finishes the receipts in flight, unbinds cleanly, and gives the lease up; within `deadlineMs`, after which
   * the link is dropped (what was not answered, the SMSC delivers again).
   */
  async stop(deadlineMs = 10_000): Promise<void> {
    this.stopping = true;
    this.wake?.();
    const deadline = Date.now() + deadlineMs;
    const link = this.link;
    if (link?.open) {
      await within(this.committing ?? Promise.resolve(), deadline - Date.now());
      await link
        .request(
          'unbind',
          {},
          Math.max(1, Math.min(this.ctx.timings.responseTimeoutMs, deadline - Date.now())),
        )
        .catch(() => {});
      link.drop('unbound');
    }
    this.connecting?.destroy();
    await within(this.running ?? Promise.resolve(), Math.max(1, deadline - Date.now()));
    this.connecting?.destroy();
    this.link?.drop('stopped');
    await this.releaseLease();
  }

  private setState(state: BindStatusRecord['state'], lastError: string | null): void {
    if (this.state.state !== state) this.state = { state, since: this.ctx.now(), lastError };
    else this.state = { ...this.state, lastError };
    this.ctx.metrics.setBindUp(this.route.name, state === 'bound');
    // Published with the lease at once, so every process reports the change without waiting for a renewal.
    if (this.holdsLease && !this.stopping) void this.renew();
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.stopping) {
      if (!this.holdsLease && !(await this.takeLease())) {
        await this.pause(this.ctx.timings.leaseRenewMs);
        continue;
      }
      const bound = await this.session().catch((error: unknown) => {
        this.setState('backoff', (error as Error).message);
        return false;
      });
      if (this.stopping) break;
      failures = bound ? 0 : failures + 1;
      if (bound) this.setState('backoff', this.state.lastError);
      this.ctx.log.warn(
        { route: this.route.name, reason: this.state.lastError },
        'SMPP bind lost; reconnecting after a pause',
      );
      await this.pause(backoffDelay(failures, this.ctx.timings));
    }
    this.setState('connecting', null);
  }

  /** Sleeps, cut short by stop(). */
  private pause(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    }).finally(() => {
      this.wake = null;
    });
  }

  // ── lease ────────────────────────────────────────────────────────────────────────────────────────────

  /**
   * Takes or renews the lease; false when another process holds it or the database did not answer. One call at a
   * time: a renewal and the run loop share it, and stop() waits for it before giving the lease up, so that no
   * renewal lands after the release.
   */
  private takeLease(): Promise<boolean> {
    this.leaseCall ??= this.leaseOnce().finally(() => {
      this.leaseCall = null;
    });
    return this.leaseCall;
  }

  private async leaseOnce(): Promise<boolean> {
    const { leaseTtlMs, leaseRenewMs } = this.ctx.timings;
    const asked = Date.now();
    let held: boolean;
    try {
      held = await this.ctx.store.takeBindLease(this.route.name, this.ctx.holder, leaseTtlMs, this.state);
    } catch (error) {
      this.ctx.log.warn({ err: error, route: this.route.name }, 'SMPP bind lease not renewed');
      held = false;
      if (this.leaseUntil > 0 && Date.now() < this.leaseUntil) return true; // still ours for a while
    }
    if (!held) {
      this.loseLease('another process holds the bind');
      return false;
    }
    this.leaseUntil = asked + leaseTtlMs - leaseMargin(leaseTtlMs);
    if (this.leaseTimer === null && !this.stopping) {
      this.leaseTimer = setInterval(() => void this.renew(), leaseRenewMs);
      this.leaseTimer.unref();
    }
    return true;
  }

  private async renew(): Promise<void> {
    if (this.stopping) return;
    if (!(await this.takeLease())) return;
    if (Date.now() >= this.leaseUntil) this.loseLease('the lease could not be renewed');
  }

  private loseLease(reason: string): void {
    if (this.leaseTimer !== null) clearInterval(this.leaseTimer);
    this.leaseTimer = null;
    const had = this.leaseUntil > 0;
    this.leaseUntil = 0;
    if (had && this.link?.open) {
      this.ctx.log.warn({ route: this.route.name, reason }, 'SMPP bind lease lost: dropping the bind');
      this.link.drop(reason);
    }
  }

  private async releaseLease(): Promise<void> {
    await this.leaseCall;
    this.loseLease('stopped');
    // Also when this process thinks it holds nothing: a renewal may have committed after its deadline passed.
    await this.ctx.store.releaseBindLease(this.route.name, this.ctx.holder).catch(() => {});
  }

  // ── session ──────────────────────────────────────────────────────────────────────────────────────────

  /** Connects, binds and serves until the link ends; true when it was bound. */
  private async session(): Promise<boolean> {
    const settings = this.route.smpp;
    if (settings === null) throw new Error('the route has no smpp settings');
    const timeout = this.ctx.timings.responseTimeoutMs;
    this.setState('connecting', this.state.lastError);
    const socket = await connectSocket(settings.host, settings.port, settings.tls, timeout, (connecting) => {
      this.connecting = connecting;
    }).finally(() => {
      this.connecting = null;
    });
    if (this.stopping) {
      socket.destroy();
      return false;
    }
    const link = new SmppLink(socket, (header, pdu) => this.onRequest(link, header, pdu));
    this.link = link;
    let enquire: NodeJS.Timeout | null = null;
    try {
      const password =
        this.route.sealedPassword === null ? '' : openSecret(this.ctx.pepper, this.route.sealedPassword);
      const answer = await link.request(
        settings.bindType === 'transceiver' ? 'bind_transceiver' : 'bind_receiver',
        {
          system_id: settings.systemId,
          password,
          system_type: settings.systemType ?? '',
          interface_version: 0x34,
        },
        timeout,
      );
      if (answer.status !== STATUS.ESME_ROK) {
        throw new Error(
          `the SMSC refused the bind: command_status 0x${answer.status.toString(16).padStart(8, '0')}`,
        );
      }
      if (this.stopping || !this.holdsLease) {
        await link.request('unbind', {}, timeout).catch(() => {});
        return true;
      }
      this.setState('bound', null);
      this.ctx.log.info({ route: this.route.name }, 'SMPP bound');
      const every = settings.enquireLinkSeconds * 1000;
      enquire = setInterval(() => {
        link
          .request('enquire_link', {}, Math.min(timeout, every))
          .then((header) => {
            if (header.status !== STATUS.ESME_ROK) link.drop('enquire_link was refused');
          })
          .catch(() => link.drop('enquire_link was not answered: the link is silent'));
      }, every);
      const reason = await link.closed;
      if (!this.stopping) this.state = { ...this.state, lastError: reason };
      return true;
    } finally {
      if (enquire !== null) clearInterval(enquire);
      link.drop('the session ended');
      // Receipts still committing answer into a closed link (a no-op); the SMSC delivers them again.
      await (this.committing ?? Promise.resolve());
      if (this.link === link) this.link = null;
      this.queue.length = 0;
      this.ctx.metrics.setBindUp(this.route.name, false);
    }
  }

  private onRequest(link: SmppLink, header: PduHeader, pdu: Buffer): void {
    switch (header.commandId) {
      case CMD.enquire_link:
        link.respond(encodeResponse(header.commandId, header.sequence, STATUS.ESME_ROK));
        return;
      case CMD.unbind:
        // What is in flight is answered first; then the link ends and the bind reconnects after a pause.
        void (this.committing ?? Promise.resolve())
          .then(() => {
            link.respond(encodeResponse(header.commandId, header.sequence, STATUS.ESME_ROK));
            setTimeout(() => link.drop('the SMSC unbound'), 100).unref();
          })
          .catch(() => link.drop('the SMSC unbound'));
        return;
      case CMD.deliver_sm:
      case CMD.data_sm:
        if (this.stopping) {
          link.respond(encodeResponse(header.commandId, header.sequence, STATUS.ESME_RX_T_APPNACK));
          return;
        }
        this.queue.push({ header, pdu });
        if (this.queue.length >= HIGH_WATER) link.pause();
        this.committing ??= this.drain(link);
        return;
      default:
        link.respond(encodeResponse(CMD.generic_nack, header.sequence, STATUS.ESME_RINVCMDID));
    }
  }

  /** Commits what waits, a group at a time, until nothing does. */
  private async drain(link: SmppLink): Promise<void> {
    try {
      // What arrived in the same read joins the first group.
      await nextTurn();
      while (this.queue.length > 0) {
        const group = this.queue.splice(0, MAX_BATCH);
        const { statuses, unavailable } = await this.commit(group);
        link.respondAll(
          group.map((item, i) =>
            encodeResponse(
              item.header.commandId,
              item.header.sequence,
              statuses[i] ?? STATUS.ESME_RX_T_APPNACK,
            ),
          ),
        );
        if (unavailable) {
          // The database has just stayed out for a whole deadline: what arrived meanwhile is answered "retry
          // later" now, rather than after a second deadline of its own (it would wait up to twice as long).
          link.respondAll(
            this.queue
              .splice(0)
              .map((item) =>
                encodeResponse(item.header.commandId, item.header.sequence, STATUS.ESME_RX_T_APPNACK),
              ),
          );
        }
        if (this.queue.length < HIGH_WATER / 2) link.resume();
      }
    } catch (error) {
      // Unanswered PDUs are delivered again by the SMSC once the link is back.
      this.ctx.log.error({ err: error, route: this.route.name }, 'SMPP receipts could not be answered');
      link.drop('the receipts could not be answered');
    } finally {
      this.committing = null;
    }
  }

  /**
   * Stores one group; the status each PDU is answered with, in order, and whether the database was unavailable.
   * Never throws.
   */
  private async commit(group: Arrived[]): Promise<{ statuses: number[]; unavailable: boolean }> {
    const route = this.route;
    const arrivedAt = this.ctx.now();
    const statuses: number[] = group.map(() => STATUS.ESME_RX_T_APPNACK);
    const receipts: { index: number; receipt: CarrierNamedReceipt }[] = [];
    try {
      for (const [index, item] of group.entries()) {
        const message = readIncomingMessage(item.pdu);
        const translated: Translation =
          message === null
            ? { kind: 'garbled', reason: 'the PDU is malformed' }
            : fromSmppReceipt({
                esmClass: message.esmClass,
                tlvs: {
                  receiptedMessageId: message.receiptedMessageId,
                  messageState: message.messageState,
                  networkErrorCode: message.networkErrorCode,
                },
                shortMessage: message.text,
                arrivedAt,
                route,
              });
        if (translated.kind === 'ignored') {
          this.ctx.metrics.countIntake(route.name, 'ignored');
          statuses[index] = STATUS.ESME_ROK;
        } else if (translated.kind === 'garbled') {
          const text = message === null ? '' : garbledText(message.text);
          await this.ctx.store.recordGarbledIntake(
            route.name,
            { at: arrivedAt, text, pdu: item.pdu.toString('hex') },
            KEEP_GARBLED,
          );
          this.ctx.metrics.countIntake(route.name, 'garbled');
          statuses[index] = STATUS.ESME_ROK;
        } else if (translated.carrierId !== null) {
          receipts.push({ index, receipt: { ...translated, carrierId: translated.carrierId } });
        }
      }
      const outcomes = await applyCarrierReceipts(
        this.ctx,
        route,
        receipts.map((r) => r.receipt),
      );
      for (const [i, { index, receipt }] of receipts.entries()) {
        if (outcomes[i] === 'forbidden') {
          this.ctx.log.warn(
            { route: route.name, carrierId: receipt.carrierId },
            'SMPP receipt for an account the route may not touch: refused',
          );
          statuses[index] = STATUS.ESME_RX_P_APPNACK;
        } else {
          statuses[index] = STATUS.ESME_ROK;
        }
      }
    } catch (error) {
      const unavailable = error instanceof StoreUnavailableError;
      this.ctx.log[unavailable ? 'warn' : 'error'](
        { err: error, route: route.name },
        'SMPP receipts not stored: answered ESME_RX_T_APPNACK, the SMSC delivers them again',
      );
      return { statuses, unavailable };
    }
    return { statuses, unavailable: false };
  }
}

const latin1 = new TextDecoder('latin1');
function garbledText(text: string | Uint8Array): string {
  const value = typeof text === 'string' ? text : latin1.decode(text);
  return value.length > MAX_GARBLED_TEXT ? `${value.slice(0, MAX_GARBLED_TEXT - 1)}…` : value;
}

/** Resolves when `work` settles or `ms` passes, whichever is first. */
async function within(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    work.catch(() => {}),
    new Promise((resolve) => {
      timer = setTimeout(resolve, Math.max(0, ms));
    }),
  ]);
  clearTimeout(timer);
}

function connectSocket(
  host: string,
  port: number,
  tls: boolean,
  timeoutMs: number,
  started: (socket: Socket) => void,
): Promise<Socket> {
  return new Promise((resolve, reject) => {
    // SNI takes a host name only; the certificate is checked against `host` either way.
    const socket: Socket = tls
      ? tlsConnect({ host, port, ...(isIP(host) === 0 ? { servername: host } : {}) })
      : tcpConnect({ host, port });
    started(socket);
    const fail = (reason: string) => {
      clearTimeout(timer);
      socket.removeListener('close', closed);
      socket.destroy();
      reject(new Error(`could not connect to ${host}:${port}: ${reason}`));
    };
    const closed = () => fail('the connection closed');
    const timer = setTimeout(() => fail(`no connection within ${timeoutMs} ms`), timeoutMs);
    socket.once('close', closed);
    socket.once(tls ? 'secureConnect' : 'connect', () => {
      clearTimeout(timer);
      socket.removeListener('close', closed);
      socket.removeAllListeners('error');
      socket.setNoDelay(true);
      socket.setKeepAlive(true, 30_000);
      resolve(socket);
    });
    socket.once('error', (error) => fail(error.message));
  });
}
