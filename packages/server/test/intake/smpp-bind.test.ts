import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { Metrics } from '../../src/http/metrics.js';
import type { BindTimings } from '../../src/intake/smpp-bind.js';
import { SmppBinds } from '../../src/intake/smpp-binds.js';
import { composeService, type Service } from '../../src/service.js';
import { type Store, StoreUnavailableError } from '../../src/store/store.js';
import { engines } from '../support/engines.js';
import { ADMIN_TOKEN, PEPPER } from '../support/http.js';
import { receiptText, Smsc } from './smsc.js';

const TIMINGS: Partial<BindTimings> = {
  leaseTtlMs: 2000,
  leaseRenewMs: 300,
  minBackoffMs: 50,
  maxBackoffMs: 400,
  responseTimeoutMs: 1000,
};
const ALICE = '447700900001';
const RECEIPT = 0x04;
const APPNACK = 0x64;

async function until<T>(
  what: string,
  probe: () => T | Promise<T>,
  timeoutMs = 8000,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

describe.each(engines())('$name SMPP binds against an SMSC simulator', (engine) => {
  let smsc: Smsc;
  let port: number;
  let store: Store;
  let service: Service;
  let logs: string[];
  /** While set, every receipt commit fails as if the database were unreachable. */
  let databaseDown: boolean;
  /** While set, the lease cannot be taken or renewed, as if this process had lost its database. */
  let leaseDown: boolean;
  /** While set, a receipt commit waits for it, then fails as if the database had not answered in time. */
  let commitHangs: Promise<void> | null;
  let carrierCalls: number[];

  const admin = (method: 'GET' | 'POST' | 'PATCH', url: string, body?: unknown) =>
    service.app.inject({
      method,
      url,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      ...(body === undefined ? {} : { payload: body as object }),
    });
  const routeDetail = async () => (await admin('GET', '/admin/v1/routes/smsc')).json();
  const addRoute = async (smpp: Record<string, unknown> = {}) => {
    const res = await admin('POST', '/admin/v1/routes', {
      name: 'smsc',
      kind: 'smpp',
      smpp: { host: '127.0.0.1', port, systemId: 'waybill', password: 'secret1', ...smpp },
    });
    expect(res.statusCode, res.body).toBe(201);
    await service.binds?.refresh();
    await until('the bind', () => smsc.bound.size === 1);
  };
  const ingestCarrier = async (accountId: string, id: string, carrierId: string) => {
    const res = await admin('POST', `/admin/v1/accounts/${accountId}/messages`, {
      messages: [
        {
          id,
          channel: 'SMS',
          channelUserId: ALICE,
          sms: { carrier: { route: 'smsc', messageId: carrierId } },
        },
      ],
    });
    expect(res.statusCode, res.body).toBe(200);
  };
  const account = async () => {
    const res = await admin('POST', '/admin/v1/accounts', { name: 'Acme' });
    expect(res.statusCode, res.body).toBe(201);
    return (res.json() as { id: string }).id;
  };

  beforeEach(async () => {
    smsc = new Smsc();
    port = await smsc.listen();
    const opened = await engine.open();
    databaseDown = false;
    leaseDown = false;
    commitHangs = null;
    carrierCalls = [];
    store = {
      ...opened,
      async takeBindLease(...args) {
        if (leaseDown) throw new StoreUnavailableError('the database did not answer within 5000 ms');
        return opened.takeBindLease(...args);
      },
      async ingestCarrierReceipts(route, items, now, options) {
        carrierCalls.push(items.length);
        if (commitHangs !== null) {
          await commitHangs;
          throw new StoreUnavailableError('the database did not answer within 5000 ms');
        }
        if (databaseDown) throw new StoreUnavailableError('the database did not answer within 5000 ms');
        return opened.ingestCarrierReceipts(route, items, now, options);
      },
    };
    logs = [];
    service = await composeService({
      config: loadConfig({
        DATABASE_URL: 'sqlite::memory:',
        WAYBILL_ADMIN_TOKEN: ADMIN_TOKEN,
        WAYBILL_LOG_LEVEL: 'info',
      }),
      store,
      pepper: PEPPER,
      binds: true,
      bindTimings: TIMINGS,
      bindHolder: 'test-a',
      logStream: new Writable({
        write(chunk, _encoding, done) {
          logs.push(String(chunk));
          done();
        },
      }),
    });
    service.start();
  });

  afterEach(async () => {
    await service.close(3000);
    await smsc.close();
  });

  it('binds with the route’s credentials and answers each receipt once it is committed or parked', async () => {
    await addRoute({ systemType: 'wb' });
    expect(smsc.lastBind).toMatchObject({ system_id: 'waybill', password: 'secret1', system_type: 'wb' });
    const acct = await account();
    await ingestCarrier(acct, 'm-1', 'c-1');

    expect(await smsc.deliver({ esm_class: RECEIPT, short_message: receiptText('c-1', 'DELIVRD') })).toBe(0);
    expect(await store.findDlr(acct, 'm-1')).toMatchObject([
      { channelUserId: ALICE, sms: { receipt: { drStatuscode: 'delivered' } } },
    ]);

    // No recipient holds c-2 yet: parked, acknowledged, and applied when a message claims it.
    expect(
      await smsc.deliver({
        esm_class: RECEIPT,
        receipted_message_id: 'c-2',
        message_state: 5,
        short_message: Buffer.alloc(0),
      }),
    ).toBe(0);
    await ingestCarrier(acct, 'm-2', 'c-2');
    expect(await store.findDlr(acct, 'm-2')).toMatchObject([
      { sms: { receipt: { drStatuscode: 'failed' } } },
    ]);

    const detail = await routeDetail();
    expect(detail.counts).toEqual({ matched: 1, parked: 1, garbled: 0, ignored: 0 });
    expect(detail.status).toMatchObject({ state: 'bound', lastError: null, heldBy: 'test-a' });
    expect(Date.parse(detail.status.since)).toBeGreaterThan(0);
    const metrics = await service.metrics.scrape(store);
    expect(metrics).toContain('waybill_smpp_bind_up{route="smsc"} 1');
    expect(JSON.stringify(logs)).not.toContain('secret1');
  });

  it('keeps and counts a garbled receipt, ignores a mobile-originated message, and acknowledges both', async () => {
    await addRoute();
    const text = Buffer.from('id: stat:WHATEVER submit_date:@home', 'latin1');
    expect(await smsc.deliver({ esm_class: RECEIPT, short_message: text })).toBe(0);
    expect(await smsc.deliver({ esm_class: 0, short_message: Buffer.from('STOP', 'latin1') })).toBe(0);
    const [garbled] = await store.listGarbledIntake('smsc', 10);
    expect(garbled?.text).toBe('id: stat:WHATEVER submit_date:@home');
    expect(garbled?.pdu).toMatch(/^[0-9a-f]+$/);
    expect(Buffer.from(garbled?.pdu ?? '', 'hex').includes(text)).toBe(true);
    expect((await routeDetail()).counts).toEqual({ matched: 0, parked: 0, garbled: 1, ignored: 1 });
  });

  it('keeps a malformed deliver_sm as garbled, with its PDU, and acknowledges it', async () => {
    await addRoute();
    const session = smsc.session();
    // A deliver_sm whose body ends inside source_addr.
    const malformed = Buffer.from([0, 0, 0, 20, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 99, 0, 1, 1, 0x34]);
    const answered = new Promise<{ command_status: number; sequence_number: number }>((resolve) =>
      session.once('deliver_sm_resp', resolve),
    );
    session.socket.write(malformed);
    expect(await answered).toMatchObject({ command_status: 0, sequence_number: 99 });
    const [garbled] = await store.listGarbledIntake('smsc', 10);
    expect(garbled?.pdu).toBe(malformed.toString('hex'));
    expect((await routeDetail()).counts.garbled).toBe(1);
    // The link goes on.
    expect(await smsc.deliver({ esm_class: 0, short_message: Buffer.from('hi') })).toBe(0);
  });

  it('commits receipts that arrive together in one transaction, then acknowledges them all', async () => {
    await addRoute();
    const acct = await account();
    const messages = Array.from({ length: 300 }, (_, i) => ({
      id: `m-${i}`,
      channel: 'SMS',
      channelUserId: ALICE,
      sms: { carrier: { route: 'smsc', messageId: `c-${i}` } },
    }));
    expect((await admin('POST', `/admin/v1/accounts/${acct}/messages`, { messages })).statusCode).toBe(200);
    const answers = await Promise.all(
      messages.map((_, i) =>
        smsc.deliver({ esm_class: RECEIPT, short_message: receiptText(`c-${i}`, 'DELIVRD') }),
      ),
    );
    expect(answers.every((status) => status === 0)).toBe(true);
    expect(carrierCalls.reduce((a, b) => a + b, 0)).toBe(300);
    expect(carrierCalls.length).toBeLessThan(30);
    expect((await routeDetail()).counts.matched).toBe(300);
    expect(await store.findDlr(acct, 'm-299')).toMatchObject([
      { sms: { receipt: { drStatuscode: 'delivered' } } },
    ]);
  });

  it('stays correct under load: 3,000 receipts sent at once, every one committed before it is answered', {
    timeout: 60_000,
  }, async () => {
    await addRoute();
    const acct = await account();
    const count = 3000;
    for (let from = 0; from < count; from += 1000) {
      const messages = Array.from({ length: 1000 }, (_, i) => ({
        id: `m-${from + i}`,
        channel: 'SMS',
        channelUserId: ALICE,
        sms: { carrier: { route: 'smsc', messageId: `c-${from + i}` } },
      }));
      expect((await admin('POST', `/admin/v1/accounts/${acct}/messages`, { messages })).statusCode).toBe(200);
    }
    const answers = await Promise.all(
      Array.from({ length: count }, (_, i) =>
        smsc.deliver({
          esm_class: RECEIPT,
          short_message: receiptText(`c-${i}`, i % 2 ? 'DELIVRD' : 'UNDELIV'),
        }),
      ),
    );
    expect(answers.filter((status) => status !== 0)).toEqual([]);
    expect((await routeDetail()).counts.matched).toBe(count);
    expect(await store.findDlr(acct, `m-${count - 1}`)).toMatchObject([
      { sms: { receipt: { drStatuscode: 'delivered' } } },
    ]);
    expect(await store.findDlr(acct, 'm-0')).toMatchObject([
      { sms: { receipt: { drStatuscode: 'failed' } } },
    ]);
  });

  it('refuses for good (ESME_RX_P_APPNACK) a receipt of an account the route may not touch, writing nothing', async () => {
    const mine = await account();
    const theirs = await account();
    await addRoute();
    const patched = await admin('PATCH', '/admin/v1/routes/smsc', { accounts: [mine] });
    expect(patched.statusCode, patched.body).toBe(200);
    await service.binds?.refresh();
    await ingestCarrier(theirs, 'm-1', 'c-1');
    expect(await smsc.deliver({ esm_class: RECEIPT, short_message: receiptText('c-1', 'DELIVRD') })).toBe(
      0x65,
    );
    expect(await store.findDlr(theirs, 'm-1')).toMatchObject([{ sms: { receipt: null } }]);
  });

  it('answers ESME_RX_T_APPNACK while the database is unavailable, and takes the redelivery once it is back', async () => {
    await addRoute();
    const acct = await account();
    await ingestCarrier(acct, 'm-1', 'c-1');
    databaseDown = true;
    const receipt = { esm_class: RECEIPT, short_message: receiptText('c-1', 'DELIVRD') };
    expect(await smsc.deliver(receipt)).toBe(APPNACK);
    expect(await store.findDlr(acct, 'm-1')).toMatchObject([{ sms: { receipt: null } }]);
    databaseDown = false;
    expect(await smsc.deliver(receipt)).toBe(0);
    expect(await store.findDlr(acct, 'm-1')).toMatchObject([
      { sms: { receipt: { drStatuscode: 'delivered' } } },
    ]);
  });

  it('answers ESME_RX_T_APPNACK at once to what arrived while a commit failed, without a second deadline', async () => {
    await addRoute();
    const acct = await account();
    await ingestCarrier(acct, 'm-1', 'c-1');
    await ingestCarrier(acct, 'm-2', 'c-2');
    let deadlinePassed = () => {};
    commitHangs = new Promise((resolve) => {
      deadlinePassed = resolve;
    });
    const first = smsc.deliver({ esm_class: RECEIPT, short_message: receiptText('c-1', 'DELIVRD') });
    await until('the first commit', () => carrierCalls.length === 1);
    const second = smsc.deliver({ esm_class: RECEIPT, short_message: receiptText('c-2', 'DELIVRD') });
    // Loopback: the second receipt is read and queued behind the commit well within this.
    await sleep(300);
    deadlinePassed();
    expect(await first).toBe(APPNACK);
    expect(await second).toBe(APPNACK);
    // The second one never waited for a commit of its own.
    expect(carrierCalls).toEqual([1]);
    commitHangs = null;
    expect(await smsc.deliver({ esm_class: RECEIPT, short_message: receiptText('c-2', 'DELIVRD') })).toBe(0);
    expect(await store.findDlr(acct, 'm-2')).toMatchObject([
      { sms: { receipt: { drStatuscode: 'delivered' } } },
    ]);
  });

  it('answers the SMSC’s unbind and binds again; reconnects after the link is cut', async () => {
    await addRoute();
    expect(await smsc.unbind()).toBe(0);
    await until('a second bind', () => smsc.events.binds >= 2 && smsc.bound.size === 1);
    smsc.cut();
    await until('a third bind', () => smsc.events.binds >= 3 && smsc.bound.size === 1);
    expect(smsc.maxBound).toBe(1);
  });

  it('drops a link whose enquire_link is not answered, and binds again', { timeout: 20_000 }, async () => {
    await addRoute({ enquireLinkSeconds: 5 });
    smsc.silent = true;
    await until('the silent link to be dropped', () => smsc.bound.size === 0, 9000);
    smsc.silent = false;
    await until('a new bind', () => smsc.bound.size === 1 && smsc.events.binds >= 2, 5000);
    // The simulator counts the link bound when it answers the bind; the route says so once Waybill has read
    // that answer, a moment later (CI saw 'connecting' in between).
    await until('the route to say bound', async () => (await routeDetail()).status.state === 'bound', 2000);
  });

  it('backs off while the SMSC refuses the bind, saying why', async () => {
    smsc.refuseBinds = true;
    await admin('POST', '/admin/v1/routes', {
      name: 'smsc',
      kind: 'smpp',
      smpp: { host: '127.0.0.1', port, systemId: 'waybill', password: 'wrong' },
    });
    await service.binds?.refresh();
    await until('a few refused binds', () => smsc.events.binds >= 3);
    const { status } = await routeDetail();
    expect(status.state).toMatch(/^(backoff|connecting)$/);
    expect(status.lastError).toMatch(/refused the bind: command_status 0x0000000d/);
    expect(await service.metrics.scrape(store)).toContain('waybill_smpp_bind_up{route="smsc"} 0');
  });

  it('drops its bind before its lease runs out when it cannot renew it, and binds again once it can', async () => {
    await addRoute();
    leaseDown = true;
    const lost = Date.now();
    await until('the bind to be dropped', () => smsc.bound.size === 0, 5000);
    // The lease lasts 2 s here: it is given up before another process could take it.
    expect(Date.now() - lost).toBeLessThan(2000);
    leaseDown = false;
    await until('a new bind', () => smsc.bound.size === 1 && smsc.events.binds === 2, 5000);
    expect(smsc.maxBound).toBe(1);
  });

  it('unbinds cleanly on close and gives up the lease', async () => {
    await addRoute();
    await service.binds?.stop(3000);
    expect(smsc.events.unbinds).toBe(1);
    expect(await store.getBindLease('smsc')).toBeNull();
  });

  it('one holder per bind: a second process takes over once the holder loses its lease', {
    timeout: 20_000,
  }, async () => {
    await addRoute();
    const other = new SmppBinds({
      store: { ...store },
      metrics: new Metrics(),
      pepper: PEPPER,
      now: () => new Date(),
      deliveriesQueued: () => {},
      log: pino({ level: 'silent' }),
      holder: 'test-b',
      timings: TIMINGS,
    });
    try {
      other.start();
      await other.refresh();
      await sleep(1000);
      expect(smsc.events.binds).toBe(1);
      const route = await until('the route', () => store.getIntakeRoute('smsc'));
      expect(await other.status(route)).toMatchObject({ state: 'bound', heldBy: 'test-a' });
      // The holder dies (its binds stop without giving the lease up): the other takes over within the lease.
      const a = service.binds;
      store.releaseBindLease = async () => {};
      await a?.stop(1000);
      const died = Date.now();
      await until('the takeover', () => smsc.bound.size === 1 && smsc.events.binds >= 2, 8000);
      expect(Date.now() - died).toBeLessThan(2000 + 1000);
      expect(smsc.maxBound).toBe(1);
      // The simulator counts the bind when its request arrives; the new holder reports it once the answer does
      // (on a loaded machine, CI saw it still `connecting` in between).
      const status = await until('the new holder to report its bind', async () => {
        const now = await other.status(route);
        return now.state === 'bound' ? now : null;
      });
      expect(status).toMatchObject({ state: 'bound', heldBy: 'test-b' });
    } finally {
      await other.stop(2000);
    }
  });
});
