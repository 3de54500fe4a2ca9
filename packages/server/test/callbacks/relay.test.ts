import { Webhook } from 'standardwebhooks';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Relay, type RelayLogger, USER_AGENT } from '../../src/callbacks/relay.js';
import { loadConfig } from '../../src/config.js';
import type { Store } from '../../src/store/store.js';
import { engines } from '../support/engines.js';
import { basic, type CreatedAccount, type Harness, PEPPER, START, startHarness } from '../support/http.js';
import { type Receiver, startReceiver, waitFor } from './receiver.js';

/**
 * The callback relay end to end (CONTRACT §9): the app ingests through its operator API, a Relay runs in this
 * process against the same store, and a real HTTP receiver on 127.0.0.1 gets the deliveries.
 */

const TO = '447700900123';
const TO2 = '447700900124';

const ENV = {
  WAYBILL_CALLBACK_ALLOW_PRIVATE: 'true',
  WAYBILL_CALLBACK_RETRY_SCHEDULE: '0.05,0.05,0.05',
  WAYBILL_CALLBACK_TIMEOUT_MS: '1000',
  WAYBILL_CALLBACK_SECRET_GRACE_SECONDS: '3600',
  WAYBILL_RATE_PER_SECOND: '0',
};

interface Delivery {
  id: string;
  state: string;
  attempts: number;
  to: string;
  lastAttempt: { at: string; httpStatus: number | null; error: string | null; durationMs: number } | null;
  attemptLog?: { httpStatus: number | null; error: string | null }[];
  payload: Record<string, unknown>;
}

/** Log lines the relay wrote, as JSON text (to look for secrets in). */
function captureLogger(lines: string[]): RelayLogger {
  const write = (level: string) => (obj: object, msg?: string) => {
    lines.push(JSON.stringify({ level, ...obj, msg }));
  };
  return { debug: write('debug'), info: write('info'), warn: write('warn'), error: write('error') };
}

describe.each(engines())('$name callback relay', (engine) => {
  let h: Harness;
  let receiver: Receiver;
  const cleanups: (() => Promise<void>)[] = [];
  const relays: Relay[] = [];
  const relayLogs: string[] = [];

  beforeEach(async () => {
    h = await startHarness(engine, ENV);
    cleanups.push(() => h.close());
    // The app's clock stands still at START; move it to the real time, which the relay and the receiver's
    // signature check (5 minutes of tolerance) run on.
    h.advance(Date.now() - START);
    receiver = await startReceiver();
    cleanups.push(() => receiver.close());
    relayLogs.length = 0;
  });
  afterEach(async () => {
    for (const relay of relays.splice(0)) await relay.stop(1000);
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  const startRelay = (env: Record<string, string> = {}, store: Store = h.store) => {
    const relay = new Relay({
      store,
      config: loadConfig({ DATABASE_URL: 'sqlite::memory:', ...ENV, ...env }),
      pepper: PEPPER,
      logger: captureLogger(relayLogs),
    });
    relays.push(relay);
    relay.start();
    return relay;
  };

  const account = async (body: Record<string, unknown> = {}) =>
    h.createAccount({ callbackUrl: receiver.url, ...body });

  /** What the app's `deliveriesQueued` hook does in `waybill serve`: wake the relays after a write. */
  const poked = async <T>(write: Promise<T>): Promise<T> => {
    const result = await write;
    for (const relay of relays) relay.poke();
    return result;
  };
  const sms = (acct: CreatedAccount, ids: string[], to = TO) =>
    poked(
      h.ingest(
        acct.id,
        ids.map((id) => ({ id, channel: 'SMS', channelUserId: to })),
      ),
    );
  const receipts = (acct: CreatedAccount, items: unknown[]) => poked(h.receipts(acct.id, items));

  let drSecond = 0;
  /** A receipt with a drTime later than every earlier one of the test. */
  const dr = (messageId: string, drStatuscode: string, extra: Record<string, unknown> = {}) => ({
    messageId,
    drStatuscode,
    drTime: new Date(START + ++drSecond * 1000).toISOString(),
    ...extra,
  });

  const deliveries = async (acct: CreatedAccount, query = ''): Promise<Delivery[]> => {
    const res = await h.admin('GET', `/admin/v1/accounts/${acct.id}/deliveries${query}`);
    expect(res.statusCode, res.body).toBe(200);
    return (res.json() as { deliveries: Delivery[] }).deliveries;
  };
  const delivery = async (acct: CreatedAccount, id: string): Promise<Delivery> => {
    const res = await h.admin('GET', `/admin/v1/accounts/${acct.id}/deliveries/${id}`);
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as Delivery;
  };
  const settled = (acct: CreatedAccount, timeoutMs = 8000, what = 'every delivery to settle') =>
    waitFor(async () => (await deliveries(acct, '?state=pending')).length === 0, timeoutMs, what);

  it('POSTs the /dlr item as recorded, signed (Standard Webhooks), with the contract headers', async () => {
    const acct = await account();
    expect((await sms(acct, ['m-1'])).statusCode).toBe(200);
    startRelay();
    expect((await receipts(acct, [dr('m-1', 'delivered')])).json()).toMatchObject({ applied: 1 });
    // /dlr at this moment: the receipt just applied is the recipient's current state.
    const dlr = await h.inject(`/dlr?key=${acct.key}&secret=${acct.secret}&messageid=m-1`);
    expect(dlr.statusCode).toBe(200);

    await waitFor(() => receiver.received.length === 1, 5000, 'the delivery');
    const [got] = receiver.received;
    if (!got) throw new Error('nothing received');
    const [listed] = await deliveries(acct);
    expect(got.headers['webhook-id']).toBe(listed?.id);
    expect(got.headers['webhook-id']).toMatch(/^evt_[0-9A-Za-z]{26}$/);
    expect(got.headers['content-type']).toBe('application/json');
    expect(got.headers['user-agent']).toBe(USER_AGENT);
    expect(USER_AGENT).toBe('Waybill/0.1.0');
    expect(Math.abs(Number(got.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(10);
    expect(got.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);

    // The body is the /dlr item, byte for byte.
    expect(`[${got.body}]`).toBe(dlr.body);
    expect(JSON.parse(got.body)).toEqual((dlr.json() as unknown[])[0]);
    expect(JSON.parse(got.body)).toMatchObject({ messageid: 'm-1', to: TO, drStatuscode: 'delivered' });

    // A receiver verifies it with the standard library and the account's callbackSecret.
    const verified = new Webhook(acct.callbackSecret).verify(got.body, got.headers as Record<string, string>);
    expect(verified).toEqual(JSON.parse(got.body));
    expect(() =>
      new Webhook(`whsec_${Buffer.alloc(32, 7).toString('base64')}`).verify(
        got.body,
        got.headers as Record<string, string>,
      ),
    ).toThrow();

    await waitFor(async () => (await deliveries(acct))[0]?.state === 'delivered', 3000, 'delivered state');
    const detail = await delivery(acct, listed?.id ?? '');
    expect(detail).toMatchObject({ state: 'delivered', attempts: 1, nextAttemptAt: null });
    expect(detail.lastAttempt).toMatchObject({ httpStatus: 200, error: null });
    expect(detail.lastAttempt?.durationMs).toBeGreaterThanOrEqual(0);
    expect(detail.attemptLog).toHaveLength(1);

    // Neither secret nor signature is ever logged.
    const logs = relayLogs.join('\n') + h.logs.join('\n');
    expect(logs).not.toContain(acct.callbackSecret);
    expect(logs).not.toContain(acct.callbackSecret.slice(6));
    expect(logs).not.toContain(String(got.headers['webhook-signature']).slice(3));
  });

  it('retries a failing receiver on the schedule: two failures, then delivered on the third attempt', async () => {
    receiver.answer = (_r, i) => (i < 2 ? { status: 500, body: 'nope' } : { status: 204 });
    const acct = await account();
    await sms(acct, ['m-1']);
    startRelay();
    await receipts(acct, [dr('m-1', 'delivered')]);
    await settled(acct);
    expect(receiver.received).toHaveLength(3);
    const ids = new Set(receiver.received.map((r) => r.headers['webhook-id']));
    expect(ids.size).toBe(1);
    expect(new Set(receiver.received.map((r) => r.body)).size).toBe(1);
    // Each attempt signs afresh (its own timestamp), and each verifies.
    for (const r of receiver.received) {
      expect(() =>
        new Webhook(acct.callbackSecret).verify(r.body, r.headers as Record<string, string>),
      ).not.toThrow();
    }
    const [d] = await deliveries(acct);
    const detail = await delivery(acct, d?.id ?? '');
    expect(detail).toMatchObject({ state: 'delivered', attempts: 3 });
    expect(detail.attemptLog?.map((a) => [a.httpStatus, a.error])).toEqual([
      [500, 'unexpected status 500'],
      [500, 'unexpected status 500'],
      [204, null],
    ]);
  });

  it('gives up after the schedule (dead), and redelivers on request with the same webhook-id', async () => {
    receiver.answer = () => ({ status: 503 });
    const acct = await account();
    await sms(acct, ['m-1']);
    startRelay();
    await receipts(acct, [dr('m-1', 'delivered')]);
    await settled(acct);
    // 3 delays in the schedule: 4 attempts in all.
    expect(receiver.received).toHaveLength(4);
    const [dead] = await deliveries(acct, '?state=dead');
    expect(dead).toMatchObject({ state: 'dead', attempts: 4, nextAttemptAt: null });
    expect(dead?.lastAttempt).toMatchObject({ httpStatus: 503, error: 'unexpected status 503' });

    receiver.answer = () => ({ status: 200 });
    const res = await poked(
      h.admin('POST', `/admin/v1/accounts/${acct.id}/deliveries/${dead?.id}/redeliver`, {}),
    );
    expect(res.statusCode, res.body).toBe(202);
    expect(res.json()).toMatchObject({ id: dead?.id, state: 'pending', attempts: 0 });
    await waitFor(() => receiver.received.length === 5, 5000, 'the redelivery');
    expect(receiver.received[4]?.headers['webhook-id']).toBe(dead?.id);
    expect(receiver.received[4]?.body).toBe(receiver.received[0]?.body);
    await waitFor(async () => (await delivery(acct, dead?.id ?? '')).state === 'delivered', 3000);
    expect((await delivery(acct, dead?.id ?? '')).attemptLog).toHaveLength(5);
  });

  it('pushes nothing for an identical replay or an older receipt', async () => {
    const acct = await account();
    await sms(acct, ['m-1']);
    startRelay();
    const delivered = dr('m-1', 'delivered');
    expect((await receipts(acct, [delivered])).json()).toMatchObject({ applied: 1 });
    await waitFor(() => receiver.received.length === 1, 5000, 'the first delivery');
    expect((await receipts(acct, [delivered])).json()).toMatchObject({ applied: 0, ignored: 1 });
    const older = { ...dr('m-1', 'accepted'), drTime: new Date(START).toISOString() };
    expect((await receipts(acct, [older])).json()).toMatchObject({ applied: 0, ignored: 1 });
    // Same rank, same codes, later time: still nothing new to tell.
    expect((await receipts(acct, [dr('m-1', 'delivered')])).json()).toMatchObject({ ignored: 1 });
    await new Promise((done) => setTimeout(done, 300));
    expect(receiver.received).toHaveLength(1);
    expect(await deliveries(acct)).toHaveLength(1);
  });

  it('pushes a receipt that arrived before its message once the message is ingested', async () => {
    const acct = await account();
    startRelay();
    const early = await receipts(acct, [dr('m-early', 'delivered')]);
    expect(early.json()).toMatchObject({ applied: 0, unknown: [{ messageId: 'm-early' }] });
    // The same early receipt again is parked once.
    await receipts(acct, [dr('m-early', 'delivered', { drTime: new Date(START + 1000).toISOString() })]);
    await new Promise((done) => setTimeout(done, 200));
    expect(receiver.received).toHaveLength(0);

    await sms(acct, ['m-early']);
    await waitFor(() => receiver.received.length === 1, 5000, 'the parked receipt’s delivery');
    expect(JSON.parse(receiver.received[0]?.body ?? '{}')).toMatchObject({
      messageid: 'm-early',
      to: TO,
      drStatuscode: 'delivered',
      drStatus: 0,
    });
    const dlr = await h.inject(`/dlr?key=${acct.key}&secret=${acct.secret}&messageid=m-early`);
    expect(`[${receiver.received[0]?.body}]`).toBe(dlr.body);
    await new Promise((done) => setTimeout(done, 200));
    expect(receiver.received).toHaveLength(1);
  });

  it('never shows a receiver a recipient going back in time (many receipts, few recipients, slow receiver)', async () => {
    receiver.answer = (_r, i) => ({ status: i % 5 === 3 ? 500 : 200, delayMs: 15 });
    const acct = await account();
    const recipients = [TO, TO2, '447700900125'];
    for (const to of recipients) await sms(acct, ['m-1', 'm-2'], to);
    startRelay({ WAYBILL_CALLBACK_ENDPOINT_CONCURRENCY: '8' });
    // Final codes of equal rank apply one after the other when drTime grows and the code changes.
    const codes = ['delivered', 'failed', 'expired', 'rejected'];
    let last = new Map<string, string>();
    for (let round = 0; round < 12; round++) {
      const batch = [];
      for (const messageId of ['m-1', 'm-2']) {
        for (const to of recipients) {
          const item = dr(messageId, codes[round % codes.length] as string, { to });
          batch.push(item);
          last.set(`${messageId}/${to}`, item.drTime);
        }
      }
      expect((await receipts(acct, batch)).json()).toMatchObject({ applied: batch.length });
      await new Promise((done) => setTimeout(done, 10 + (round % 3) * 20));
    }
    last = new Map(last);
    await settled(acct);

    // Per recipient: what arrived is in strictly increasing drTime, and the newest state arrived last.
    const seen = new Map<string, string[]>();
    for (const r of receiver.received) {
      const item = JSON.parse(r.body) as { messageid: string; to: string; drTime: string };
      const key = `${item.messageid}/${item.to}`;
      seen.set(key, [...(seen.get(key) ?? []), item.drTime]);
    }
    expect(seen.size).toBe(6);
    for (const [key, times] of seen) {
      // Repeats of a failed attempt carry the same item; otherwise time only moves forward.
      expect(times, key).toEqual([...times].sort());
      const final = last.get(key) ?? '';
      expect(times.at(-1)).toBe(final.replace('T', ' ').replace('Z', ''));
    }
    expect(receiver.maxConcurrentPerId).toBe(1);
    // One recipient (message + to) never has two attempts in flight; to is shared by m-1 and m-2 here.
    expect(receiver.maxConcurrentPerRecipient).toBeLessThanOrEqual(2);
    // Older pending deliveries were superseded, not sent.
    const superseded = await deliveries(acct, '?state=superseded&limit=100');
    expect(superseded.length).toBeGreaterThan(0);
  });

  it('never sends a delivery superseded while the relay held its claim (slow receiver, claims run ahead)', async () => {
    // Each receiver answer takes a second, so the relay holds many claimed `accepted` deliveries behind the 8
    // in flight; the `delivered` receipts supersede them while they wait.
    receiver.answer = () => ({ status: 200, delayMs: 1000 });
    const acct = await account();
    const ids = Array.from({ length: 40 }, (_, i) => `m-${i}`);
    await sms(acct, ids);
    startRelay({ WAYBILL_CALLBACK_TIMEOUT_MS: '5000' });
    expect(
      (
        await receipts(
          acct,
          ids.map((id) => dr(id, 'accepted')),
        )
      ).json(),
    ).toMatchObject({ applied: 40 });
    await new Promise((done) => setTimeout(done, 200));
    expect(
      (
        await receipts(
          acct,
          ids.map((id) => dr(id, 'delivered')),
        )
      ).json(),
    ).toMatchObject({
      applied: 40,
    });
    const bodyOf = (r: { body: string }) => JSON.parse(r.body) as { messageid: string; drStatuscode: string };
    await waitFor(
      () => receiver.received.filter((r) => bodyOf(r).drStatuscode === 'delivered').length >= 40,
      25_000,
      'every delivered state',
    );
    await settled(acct);
    // Every message's delivered state arrived; of the accepted ones only those already in flight went out.
    const items = receiver.received.map((r) => ({
      id: r.headers['webhook-id'],
      ...bodyOf(r),
    }));
    const delivered = items.filter((i) => i.drStatuscode === 'delivered');
    expect(delivered.map((i) => i.messageid).sort()).toEqual([...ids].sort());
    const accepted = items.filter((i) => i.drStatuscode === 'accepted');
    expect(accepted.length).toBeLessThanOrEqual(8);
    // All 40 accepted deliveries are superseded, even those whose attempt was under way (and answered 200);
    // none of the others was ever attempted.
    const superseded = await deliveries(acct, '?state=superseded&limit=100');
    expect(superseded).toHaveLength(40);
    const sent = new Set(accepted.map((i) => i.id));
    for (const d of superseded) expect(d.attempts, d.id).toBe(sent.has(d.id) ? 1 : 0);
    expect(await deliveries(acct, '?state=delivered&limit=100')).toHaveLength(40);
  }, 40_000);

  it('turns an account’s callbacks off on 410 Gone, and queues nothing new', async () => {
    receiver.answer = () => ({ status: 410 });
    const acct = await account();
    await sms(acct, ['m-1', 'm-2']);
    startRelay();
    await receipts(acct, [dr('m-1', 'delivered')]);
    await settled(acct, 8000, 'the 410');
    expect(receiver.received).toHaveLength(1);
    const [d] = await deliveries(acct);
    expect(d).toMatchObject({ state: 'dead', attempts: 1 });
    expect(d?.lastAttempt).toMatchObject({ httpStatus: 410 });
    const got = await h.admin('GET', `/admin/v1/accounts/${acct.id}`);
    expect(got.json()).toMatchObject({ callbackEnabled: false });

    expect((await receipts(acct, [dr('m-2', 'delivered')])).json()).toMatchObject({ applied: 1 });
    await new Promise((done) => setTimeout(done, 300));
    expect(receiver.received).toHaveLength(1);
    expect(await deliveries(acct)).toHaveLength(1);
    // The event is still recorded, for the feed.
    const feed = await h.inject({
      url: '/receipts',
      headers: { authorization: basic(acct.key, acct.secret) },
    });
    expect((feed.json() as { receipts: unknown[] }).receipts).toHaveLength(2);
  });

  it('after a 410 and a re-enable, a backfill sends the latest state of each recipient once', async () => {
    const since = new Date(Date.now() - 1000).toISOString();
    receiver.answer = (_r, i) => (i === 0 ? { status: 410 } : { status: 200 });
    const acct = await account();
    await sms(acct, ['m-1', 'm-2', 'm-3']);
    startRelay();
    await receipts(acct, [dr('m-1', 'delivered')]);
    await settled(acct, 8000, 'the 410');
    expect((await h.admin('GET', `/admin/v1/accounts/${acct.id}`)).json()).toMatchObject({
      callbackEnabled: false,
    });
    // While off: events are recorded, nothing is queued or sent.
    await receipts(acct, [dr('m-1', 'failed'), dr('m-2', 'accepted'), dr('m-3', 'delivered')]);
    await receipts(acct, [dr('m-2', 'delivered')]);
    const backfill = () =>
      poked(h.admin('POST', `/admin/v1/accounts/${acct.id}/deliveries/backfill`, { since }));
    expect((await backfill()).statusCode).toBe(409);

    expect(
      (await h.admin('PATCH', `/admin/v1/accounts/${acct.id}`, { callbackEnabled: true })).statusCode,
    ).toBe(200);
    const res = await backfill();
    expect(res.statusCode, res.body).toBe(202);
    expect(res.json()).toStrictEqual({ queued: 3 });
    await waitFor(() => receiver.received.length === 4, 5000, 'the backfilled deliveries');
    await settled(acct);
    const sent = receiver.received.slice(1).map((r) => {
      const item = JSON.parse(r.body) as { messageid: string; drStatuscode: string };
      return `${item.messageid} ${item.drStatuscode}`;
    });
    expect(sent.sort()).toStrictEqual(['m-1 failed', 'm-2 delivered', 'm-3 delivered']);
    expect((await backfill()).json()).toStrictEqual({ queued: 0 });
    await new Promise((done) => setTimeout(done, 300));
    expect(receiver.received).toHaveLength(4);
    // The 410's delivery stays dead: the backfill sent its recipient's newer state instead.
    expect((await deliveries(acct, '?state=dead')).map((d) => d.payload.drStatuscode)).toStrictEqual([
      'delivered',
    ]);
  });

  it('waits at least as long as a Retry-After asks (capped at the schedule’s longest delay)', async () => {
    receiver.answer = (_r, i) =>
      i === 0 ? { status: 429, headers: { 'retry-after': '1' } } : { status: 200 };
    const acct = await account();
    await sms(acct, ['m-1']);
    startRelay({ WAYBILL_CALLBACK_RETRY_SCHEDULE: '0.05,3' });
    await receipts(acct, [dr('m-1', 'delivered')]);
    await waitFor(() => receiver.received.length === 2, 5000, 'the retry');
    const [first, second] = receiver.received;
    const gap = (second?.at ?? 0) - (first?.at ?? 0);
    expect(gap).toBeGreaterThanOrEqual(950);
    expect(gap).toBeLessThan(2500);
    const [d] = await deliveries(acct);
    await waitFor(async () => (await delivery(acct, d?.id ?? '')).state === 'delivered', 3000);
    expect((await delivery(acct, d?.id ?? '')).attemptLog?.[0]).toMatchObject({ httpStatus: 429 });
  });

  it('refuses private destinations unless allowed, naming the reason in lastAttempt', async () => {
    const port = receiver.port;
    const targets: [string, RegExp][] = [
      [`http://127.0.0.1:${port}/hook`, /^refused destination: 127\.0\.0\.1: loopback \(127\.0\.0\.0\/8\);/],
      [`http://localhost:${port}/hook`, /^refused destination: localhost resolves to \S+: loopback/],
      [`http://[::1]:${port}/hook`, /^refused destination: ::1: loopback \(::1\/128\);/],
      ['http://169.254.169.254/latest/meta-data/', /cloud metadata \(169\.254\.169\.254\/32\)/],
    ];
    const accounts: [CreatedAccount, RegExp][] = [];
    for (const [callbackUrl, reason] of targets) {
      const acct = await account({ callbackUrl });
      await sms(acct, ['m-1']);
      await receipts(acct, [dr('m-1', 'delivered')]);
      accounts.push([acct, reason]);
    }
    const guarded = startRelay({
      WAYBILL_CALLBACK_ALLOW_PRIVATE: 'false',
      WAYBILL_CALLBACK_RETRY_SCHEDULE: '0.05,60',
    });
    for (const [acct, reason] of accounts) {
      await waitFor(async () => (await deliveries(acct))[0]?.attempts === 2, 5000, 'the refused attempts');
      const [d] = await deliveries(acct);
      expect(d?.state).toBe('pending');
      expect(d?.lastAttempt?.httpStatus).toBeNull();
      expect(d?.lastAttempt?.error).toMatch(reason);
      // The error names the setting that allows the destination.
      expect(d?.lastAttempt?.error).toMatch(
        /; WAYBILL_CALLBACK_ALLOW_PRIVATE=true allows it \(development only\)$/,
      );
    }
    expect(receiver.received).toHaveLength(0);
    await guarded.stop();
    // The first refusal of each account is logged at warn, at once (not when the delivery dies), and only once.
    const warnings = relayLogs
      .map((line) => JSON.parse(line) as { level: string; msg: string; accountId: string; error: string })
      .filter((line) => line.msg.startsWith('callback destination refused'));
    expect(warnings.map((w) => w.accountId).sort()).toEqual(accounts.map(([a]) => a.id).sort());
    for (const warning of warnings) {
      expect(warning.level).toBe('warn');
      expect(warning.error).toContain('WAYBILL_CALLBACK_ALLOW_PRIVATE');
    }

    // Allowed (development), the same loopback receiver gets it.
    const acct = await account();
    await sms(acct, ['m-1']);
    startRelay({ WAYBILL_CALLBACK_ALLOW_PRIVATE: 'true' });
    await receipts(acct, [dr('m-1', 'delivered')]);
    await waitFor(() => receiver.received.length === 1, 5000, 'the allowed delivery');
  });

  it('records connection refused and timeouts as failed attempts with no status', async () => {
    const closed = await startReceiver();
    const deadUrl = closed.url;
    await closed.close();
    receiver.answer = () => ({ status: 200, delayMs: 600 });
    const refused = await account({ callbackUrl: deadUrl });
    const slow = await account();
    for (const acct of [refused, slow]) {
      await sms(acct, ['m-1']);
      await receipts(acct, [dr('m-1', 'delivered')]);
    }
    startRelay({ WAYBILL_CALLBACK_TIMEOUT_MS: '200', WAYBILL_CALLBACK_RETRY_SCHEDULE: '60' });
    await waitFor(async () => (await deliveries(refused))[0]?.attempts === 1, 5000, 'refused');
    await waitFor(async () => (await deliveries(slow))[0]?.attempts === 1, 5000, 'timeout');
    expect((await deliveries(refused))[0]?.lastAttempt).toMatchObject({
      httpStatus: null,
      error: 'connection refused (ECONNREFUSED)',
    });
    const timedOut = (await deliveries(slow))[0]?.lastAttempt;
    expect(timedOut).toMatchObject({ httpStatus: null, error: 'timed out after 200 ms' });
    expect(timedOut?.durationMs).toBeGreaterThanOrEqual(190);
  });

  it('does not follow a redirect: the attempt fails', async () => {
    receiver.answer = () => ({ status: 302, headers: { location: '/elsewhere' } });
    const acct = await account();
    await sms(acct, ['m-1']);
    startRelay({ WAYBILL_CALLBACK_RETRY_SCHEDULE: '60' });
    await receipts(acct, [dr('m-1', 'delivered')]);
    await waitFor(async () => (await deliveries(acct))[0]?.attempts === 1, 5000, 'the attempt');
    expect((await deliveries(acct))[0]).toMatchObject({
      state: 'pending',
      lastAttempt: { httpStatus: 302, error: 'redirect (302) not followed' },
    });
    expect(receiver.received).toHaveLength(1);
  });

  it('signs with both secrets during the grace period after a rotation, then with the new one only', async () => {
    const acct = await account();
    await sms(acct, ['m-1', 'm-2']);
    const rotated = await h.admin('POST', `/admin/v1/accounts/${acct.id}/callback-secret`, {});
    expect(rotated.statusCode, rotated.body).toBe(200);
    const fresh = (rotated.json() as { callbackSecret: string }).callbackSecret;
    expect(fresh).not.toBe(acct.callbackSecret);
    startRelay();
    await receipts(acct, [dr('m-1', 'delivered')]);
    await waitFor(() => receiver.received.length === 1, 5000, 'the delivery');
    const [got] = receiver.received;
    const headers = got?.headers as Record<string, string>;
    expect(headers['webhook-signature']?.split(' ')).toHaveLength(2);
    // Each secret verifies on its own: receivers can roll over at their own pace.
    expect(() => new Webhook(acct.callbackSecret).verify(got?.body ?? '', headers)).not.toThrow();
    expect(() => new Webhook(fresh).verify(got?.body ?? '', headers)).not.toThrow();

    // A rotation whose grace period is already over (the app's clock an hour and more behind) signs once.
    h.advance(-3_700_000);
    const again = await h.admin('POST', `/admin/v1/accounts/${acct.id}/callback-secret`, {});
    const newest = (again.json() as { callbackSecret: string }).callbackSecret;
    h.advance(3_700_000);
    await receipts(acct, [dr('m-2', 'delivered')]);
    await waitFor(() => receiver.received.length === 2, 5000, 'the second delivery');
    const second = receiver.received[1];
    const headers2 = second?.headers as Record<string, string>;
    expect(headers2['webhook-signature']?.split(' ')).toHaveLength(1);
    expect(() => new Webhook(newest).verify(second?.body ?? '', headers2)).not.toThrow();
    expect(() => new Webhook(fresh).verify(second?.body ?? '', headers2)).toThrow();
  });

  it('on stop, waits for attempts in flight; past the deadline it hands them back untried', async () => {
    receiver.answer = () => ({ status: 200, delayMs: 400 });
    const acct = await account();
    await sms(acct, ['m-1', 'm-2']);
    const relay = startRelay();
    await receipts(acct, [dr('m-1', 'delivered')]);
    await waitFor(() => receiver.received.length === 1, 5000, 'the first attempt');
    await relay.stop(2000);
    expect(relay.inFlight).toBe(0);
    expect((await deliveries(acct))[0]).toMatchObject({ state: 'delivered', attempts: 1 });

    const hasty = startRelay();
    await receipts(acct, [dr('m-2', 'delivered')]);
    await waitFor(() => receiver.received.length === 2, 5000, 'the second attempt');
    await hasty.stop(50);
    const [d] = await deliveries(acct);
    expect(d).toMatchObject({ state: 'pending', attempts: 0, lastAttempt: null });

    receiver.answer = () => ({ status: 200 });
    startRelay();
    await waitFor(() => receiver.received.length === 3, 5000, 'the attempt after restart');
    expect(receiver.received[2]?.headers['webhook-id']).toBe(d?.id);
    await settled(acct);
  });

  it('survives a failing store: logs, backs off, and carries on', async () => {
    const acct = await account();
    await sms(acct, ['m-1']);
    let failures = 3;
    const claim = h.store.claimDeliveries.bind(h.store);
    const flaky: Store = {
      ...h.store,
      async claimDeliveries(request) {
        if (failures > 0) {
          failures--;
          throw new Error('database is down');
        }
        return claim(request);
      },
    };
    await receipts(acct, [dr('m-1', 'delivered')]);
    startRelay({}, flaky);
    await waitFor(() => receiver.received.length === 1, 5000, 'the delivery after the outage');
    expect(failures).toBe(0);
    expect(relayLogs.some((l) => l.includes('database is down') && l.includes('"level":"error"'))).toBe(true);
  });
});
