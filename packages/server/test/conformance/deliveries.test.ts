import { describe, expect, it } from 'vitest';
import type { AttemptRecord } from '../../src/domain/deliveries/delivery.js';
import type { ClaimedDelivery, Store } from '../../src/store/store.js';
import { engines } from '../support/engines.js';
import {
  at,
  claimRequest,
  ingest,
  ingestReceipts,
  NOW,
  newAccount,
  receipt,
  sms,
  useStore,
} from './fixtures.js';

const TO = '447700900123';
const TO2 = '447700900124';
const URL = 'https://hooks.example/dlr';

const request = claimRequest;

const attempt = (httpStatus: number | null, error: string | null = null): AttemptRecord => ({
  at: at(11),
  httpStatus,
  error,
  durationMs: 12,
});

async function accountWithSms(
  store: Store,
  ids: string[],
  callbackUrl: string | null = URL,
): Promise<string> {
  const { id } = await store.createAccount(newAccount({ callbackUrl, callbackSecret: 'sealed-secret' }));
  await ingest(
    store,
    id,
    ids.map((m) => sms(m, TO)),
  );
  return id;
}

describe.each(engines())('$name store: callback deliveries', (engine) => {
  const store = useStore(engine);

  it('queues a delivery with each event of an account with a callback, due at once', async () => {
    const a = await accountWithSms(store(), ['m-1']);
    await ingestReceipts(store(), a, [receipt('m-1', 'delivered', at(1))]);
    const [event] = await store().listReceiptEvents(a, 0, 10);
    const [d] = await store().listDeliveries(a, { limit: 10 });
    expect(d).toStrictEqual({
      id: event?.id,
      eventId: event?.id,
      seq: 1,
      messageId: 'm-1',
      to: TO,
      state: 'pending',
      attempts: 0,
      createdAt: NOW,
      nextAttemptAt: NOW,
      lastAttempt: null,
      payload: event?.item,
    });
    const [claimed] = await store().claimDeliveries(request());
    expect(claimed).toMatchObject({
      accountId: a,
      id: event?.id,
      attempts: 0,
      callbackUrl: URL,
      secrets: { current: 'sealed-secret', previous: null, previousUntil: null },
    });
    expect(JSON.parse(claimed?.body ?? '')).toStrictEqual(event?.item);
  });

  it('lists one message id’s events and deliveries, with attempts, oldest first, and no other message’s', async () => {
    const a = await accountWithSms(store(), ['m-1', 'm-2']);
    await ingestReceipts(store(), a, [receipt('m-1', 'accepted', at(1))]);
    await ingestReceipts(store(), a, [receipt('m-2', 'delivered', at(1))]);
    await ingestReceipts(store(), a, [receipt('m-1', 'delivered', at(2))]);
    const events = await store().listMessageEvents(a, 'm-1');
    expect(events.map((e) => [e.seq, e.item.drStatuscode])).toStrictEqual([
      [1, 'accepted'],
      [3, 'delivered'],
    ]);
    // m-2's delivery may be claimed too (one per recipient); only m-1's is attempted here.
    const claimed = (await store().claimDeliveries(request())).find((c) => c.id === events[1]?.id);
    expect(claimed).toBeDefined();
    await store().finishAttempts([
      {
        claim: claimed as ClaimedDelivery,
        outcome: {
          attempt: attempt(500, 'HTTP 500'),
          next: { state: 'pending', at: at(30) },
        },
      },
    ]);
    const deliveries = await store().listMessageDeliveries(a, 'm-1');
    expect(deliveries.map((d) => [d.id, d.state, d.attemptLog.length])).toStrictEqual([
      [events[0]?.id, 'superseded', 0],
      [events[1]?.id, 'pending', 1],
    ]);
    expect(deliveries[1]?.attemptLog[0]).toMatchObject({ httpStatus: 500, error: 'HTTP 500' });
    expect(await store().listMessageEvents(a, 'm-9')).toStrictEqual([]);
    const other = await accountWithSms(store(), ['m-1']);
    expect(await store().listMessageDeliveries(other, 'm-1')).toStrictEqual([]);
  });

  it('queues nothing without a callback URL or with callbacks disabled, but still records events', async () => {
    const none = await accountWithSms(store(), ['m-1'], null);
    const off = await accountWithSms(store(), ['m-1']);
    await store().updateAccount(off, { callbackEnabled: false });
    await ingestReceipts(store(), none, [receipt('m-1', 'delivered', at(1))]);
    await ingestReceipts(store(), off, [receipt('m-1', 'delivered', at(1))]);
    expect(await store().listReceiptEvents(off, 0, 10)).toHaveLength(1);
    expect(await store().listDeliveries(none, { limit: 10 })).toStrictEqual([]);
    expect(await store().listDeliveries(off, { limit: 10 })).toStrictEqual([]);
  });

  it('leases a delivery to one claimer until it is finished or the lease runs out', async () => {
    const a = await accountWithSms(store(), ['m-1']);
    await ingestReceipts(store(), a, [receipt('m-1', 'delivered', at(1))]);
    const [first] = await store().claimDeliveries(request());
    expect(first).toBeDefined();
    expect(await store().claimDeliveries(request({ now: at(20) }))).toStrictEqual([]);
    // A crashed attempt: the lease runs out and another claimer takes it, with the same id.
    const [again] = await store().claimDeliveries(request({ now: at(41) }));
    expect(again?.id).toBe(first?.id);
    // The first holder's late result is ignored.
    await store().finishAttempts([
      {
        claim: first as ClaimedDelivery,
        outcome: {
          attempt: attempt(200),
          next: { state: 'delivered' },
        },
      },
    ]);
    expect((await store().getDelivery(a, first?.id ?? ''))?.state).toBe('pending');
    await store().finishAttempts([
      {
        claim: again as ClaimedDelivery,
        outcome: {
          attempt: attempt(200),
          next: { state: 'delivered' },
        },
      },
    ]);
    const done = await store().getDelivery(a, first?.id ?? '');
    expect(done).toMatchObject({
      state: 'delivered',
      attempts: 1,
      nextAttemptAt: null,
      lastAttempt: attempt(200),
    });
    expect(done?.attemptLog).toStrictEqual([attempt(200)]);
    expect(await store().claimDeliveries(request({ now: at(100) }))).toStrictEqual([]);
  });

  it('records the attempt of a claim it gets back as a copy, by its ids, and ignores a copy of a lost lease', async () => {
    const a = await accountWithSms(store(), ['m-1', 'm-2']);
    await ingestReceipts(store(), a, [
      receipt('m-1', 'delivered', at(1)),
      receipt('m-2', 'delivered', at(1)),
    ]);
    const claims = await store().claimDeliveries(request());
    expect(claims).toHaveLength(2);
    const [one, two] = claims as [ClaimedDelivery, ClaimedDelivery];
    // Not the objects the store handed out (a claim that crossed a process or a queue): found by their ids.
    await store().finishAttempts([
      { claim: { ...one }, outcome: { attempt: attempt(200), next: { state: 'delivered' } } },
      {
        claim: { ...two, lease: 'someone-else' },
        outcome: { attempt: attempt(200), next: { state: 'delivered' } },
      },
    ]);
    const done = await store().getDelivery(a, one.id);
    expect(done).toMatchObject({ state: 'delivered', attempts: 1, lastAttempt: attempt(200) });
    expect(done?.attemptLog).toStrictEqual([attempt(200)]);
    expect(await store().getDelivery(a, two.id)).toMatchObject({
      state: 'pending',
      attempts: 0,
      lastAttempt: null,
    });
    // The claim itself, as handed out, still finishes the second.
    await store().finishAttempts([
      { claim: two, outcome: { attempt: attempt(503), next: { state: 'pending', at: at(100) } } },
    ]);
    expect(await store().getDelivery(a, two.id)).toMatchObject({
      state: 'pending',
      attempts: 1,
      lastAttempt: attempt(503),
    });
  });

  it('schedules retries, logs every attempt, and ends dead', async () => {
    const a = await accountWithSms(store(), ['m-1']);
    await ingestReceipts(store(), a, [receipt('m-1', 'delivered', at(1))]);
    const [c1] = await store().claimDeliveries(request());
    await store().finishAttempts([
      {
        claim: c1 as ClaimedDelivery,
        outcome: {
          attempt: attempt(500, 'HTTP 500'),
          next: { state: 'pending', at: at(30) },
        },
      },
    ]);
    expect(await store().claimDeliveries(request({ now: at(29) }))).toStrictEqual([]);
    expect(await store().nextDeliveryDue()).toStrictEqual(at(30));
    const [c2] = await store().claimDeliveries(request({ now: at(30), leaseUntil: at(60) }));
    expect(c2?.attempts).toBe(1);
    await store().finishAttempts([
      {
        claim: c2 as ClaimedDelivery,
        outcome: {
          attempt: attempt(null, 'connection refused'),
          next: { state: 'dead', disableAccount: false },
        },
      },
    ]);
    const dead = await store().getDelivery(a, c1?.id ?? '');
    expect(dead).toMatchObject({ state: 'dead', attempts: 2, nextAttemptAt: null });
    expect(dead?.attemptLog.map((x) => x.httpStatus)).toStrictEqual([500, null]);
    expect(await store().nextDeliveryDue()).toBeNull();
    expect((await store().getAccount(a))?.callbackEnabled).toBe(true);
  });

  it('disables the account on a 410 and pauses its other deliveries until re-enabled', async () => {
    const a = await accountWithSms(store(), ['m-1', 'm-2']);
    await ingestReceipts(store(), a, [
      receipt('m-1', 'delivered', at(1)),
      receipt('m-2', 'delivered', at(1)),
    ]);
    const [c1] = await store().claimDeliveries(request({ limit: 1 }));
    await store().finishAttempts([
      {
        claim: c1 as ClaimedDelivery,
        outcome: {
          attempt: attempt(410, 'HTTP 410'),
          next: { state: 'dead', disableAccount: true },
        },
      },
    ]);
    expect((await store().getAccount(a))?.callbackEnabled).toBe(false);
    expect(await store().claimDeliveries(request())).toStrictEqual([]);
    expect(await store().nextDeliveryDue()).toBeNull();
    await ingestReceipts(store(), a, [receipt('m-1', 'failed', at(5))]);
    expect(await store().listDeliveries(a, { state: 'pending', limit: 10 })).toHaveLength(1);
    await store().updateAccount(a, { callbackEnabled: true });
    expect((await store().claimDeliveries(request())).map((c) => c.id)).toHaveLength(1);
  });

  it('looks past a paused backlog for the next due delivery, however long the backlog', async () => {
    const ids = Array.from({ length: 300 }, (_, i) => `m-${i}`);
    const off = await accountWithSms(store(), ids);
    await ingestReceipts(
      store(),
      off,
      ids.map((m) => receipt(m, 'delivered', at(1))),
    );
    await store().updateAccount(off, { callbackEnabled: false });
    // Queued later than the whole paused backlog, and due later.
    const on = await accountWithSms(store(), ['m-1']);
    expect((await store().ingestReceipts(on, [receipt('m-1', 'delivered', at(1))], at(5))).ok).toBe(true);
    expect(await store().nextDeliveryDue()).toStrictEqual(at(5));
  });

  it('does not take a delivery waiting on its recipient’s attempt in flight for due', async () => {
    const a = await accountWithSms(store(), ['m-1']);
    await ingestReceipts(store(), a, [receipt('m-1', 'accepted', at(1))]);
    const leaseUntil = new Date(Date.now() + 60_000);
    const [old] = await store().claimDeliveries(request({ now: new Date(), leaseUntil }));
    expect(old).toBeDefined();
    // The newer delivery of the recipient is past due, but cannot be claimed before the old attempt ends.
    await ingestReceipts(store(), a, [receipt('m-1', 'delivered', at(2))]);
    expect(await store().claimDeliveries(request({ now: new Date() }))).toStrictEqual([]);
    expect(await store().nextDeliveryDue()).toStrictEqual(leaseUntil);
    await store().finishAttempts([
      {
        claim: old as ClaimedDelivery,
        outcome: {
          attempt: attempt(200),
          next: { state: 'delivered' },
        },
      },
    ]);
    expect(await store().nextDeliveryDue()).toStrictEqual(NOW);
  });

  it('records attempts that ended together as it records each: delivered, retried, superseded, lease lost', async () => {
    const ids = ['m-1', 'm-2', 'm-3', 'm-4'];
    const a = await accountWithSms(store(), ids);
    await ingestReceipts(
      store(),
      a,
      ids.map((m) => receipt(m, 'accepted', at(1))),
    );
    // m-4 is claimed on a short lease, which runs out; another claimer holds it now.
    const claims = [
      ...(await store().claimDeliveries(request({ limit: 3 }))),
      ...(await store().claimDeliveries(request({ limit: 1, leaseUntil: at(15) }))),
    ];
    expect(claims).toHaveLength(4);
    const of = (m: string) => claims.find((c) => JSON.parse(c.body).messageid === m) as ClaimedDelivery;
    // m-3 superseded during its attempt.
    await ingestReceipts(store(), a, [receipt('m-3', 'delivered', at(2))]);
    const [stolen] = await store().claimDeliveries(request({ now: at(16), leaseUntil: at(90) }));
    expect(stolen?.id).toBe(of('m-4').id);
    await store().finishAttempts([
      { claim: of('m-1'), outcome: { attempt: attempt(200), next: { state: 'delivered' } } },
      {
        claim: of('m-2'),
        outcome: { attempt: attempt(503, 'HTTP 503'), next: { state: 'pending', at: at(30) } },
      },
      { claim: of('m-3'), outcome: { attempt: attempt(204), next: { state: 'delivered' } } },
      { claim: of('m-4'), outcome: { attempt: attempt(200), next: { state: 'delivered' } } },
    ]);
    const detail = async (m: string) => store().getDelivery(a, of(m).id);
    expect(await detail('m-1')).toMatchObject({
      state: 'delivered',
      attempts: 1,
      attemptLog: [attempt(200)],
    });
    expect(await detail('m-2')).toMatchObject({
      state: 'pending',
      attempts: 1,
      nextAttemptAt: at(30),
      attemptLog: [attempt(503, 'HTTP 503')],
    });
    expect(await detail('m-3')).toMatchObject({
      state: 'superseded',
      attempts: 1,
      attemptLog: [attempt(204)],
    });
    // Not the lease holder's result: ignored, and the new holder's lease stands.
    expect(await detail('m-4')).toMatchObject({ state: 'pending', attempts: 0, attemptLog: [] });
    await store().finishAttempts([
      { claim: stolen as ClaimedDelivery, outcome: { attempt: attempt(200), next: { state: 'delivered' } } },
    ]);
    expect(await detail('m-4')).toMatchObject({ state: 'delivered', attempts: 1 });
  });

  it('turns callbacks off after a 410 recorded among other attempts', async () => {
    const a = await accountWithSms(store(), ['m-1', 'm-2']);
    await ingestReceipts(store(), a, [receipt('m-1', 'accepted', at(1)), receipt('m-2', 'accepted', at(1))]);
    const [c1, c2] = await store().claimDeliveries(request());
    await store().finishAttempts([
      {
        claim: c1 as ClaimedDelivery,
        outcome: { attempt: attempt(410, 'HTTP 410'), next: { state: 'dead', disableAccount: true } },
      },
      { claim: c2 as ClaimedDelivery, outcome: { attempt: attempt(200), next: { state: 'delivered' } } },
    ]);
    expect((await store().getAccount(a))?.callbackEnabled).toBe(false);
    expect((await store().getDelivery(a, c1?.id ?? ''))?.state).toBe('dead');
    expect((await store().getDelivery(a, c2?.id ?? ''))?.state).toBe('delivered');
  });

  it('supersedes an older pending delivery of the same recipient, and not another recipient', async () => {
    const { id: a } = await store().createAccount(newAccount({ callbackUrl: URL }));
    await ingest(store(), a, [sms('m-1', TO), sms('m-1', TO2)]);
    await ingestReceipts(store(), a, [
      receipt('m-1', 'accepted', at(1), { to: TO }),
      receipt('m-1', 'accepted', at(1), { to: TO2 }),
    ]);
    await ingestReceipts(store(), a, [receipt('m-1', 'delivered', at(2), { to: TO })]);
    const list = await store().listDeliveries(a, { limit: 10 });
    expect(list.map((d) => [d.seq, d.to, d.state])).toStrictEqual([
      [3, TO, 'pending'],
      [2, TO2, 'pending'],
      [1, TO, 'superseded'],
    ]);
    expect(list[2]?.nextAttemptAt).toBeNull();
    // Within one batch only the newest event of a recipient stays pending.
    await ingestReceipts(store(), a, [
      receipt('m-1', 'failed', at(3), { to: TO2 }),
      receipt('m-1', 'expired', at(4), { to: TO2 }),
    ]);
    const states = (await store().listDeliveries(a, { limit: 10 })).map((d) => [d.seq, d.state]);
    expect(states.slice(0, 3)).toStrictEqual([
      [5, 'pending'],
      [4, 'superseded'],
      [3, 'pending'],
    ]);
    expect(states.find(([seq]) => seq === 2)?.[1]).toBe('superseded');
  });

  it('never has two attempts of one recipient in flight, even across a supersede', async () => {
    const a = await accountWithSms(store(), ['m-1']);
    await ingestReceipts(store(), a, [receipt('m-1', 'accepted', at(1))]);
    const [old] = await store().claimDeliveries(request());
    await ingestReceipts(store(), a, [receipt('m-1', 'delivered', at(2))]);
    // The newer one waits while the superseded one is in flight.
    expect(await store().claimDeliveries(request({ now: at(11) }))).toStrictEqual([]);
    await store().finishAttempts([
      {
        claim: old as ClaimedDelivery,
        outcome: {
          attempt: attempt(503, 'HTTP 503'),
          next: { state: 'pending', at: at(20) },
        },
      },
    ]);
    expect((await store().getDelivery(a, old?.id ?? ''))?.state).toBe('superseded');
    const [newer] = await store().claimDeliveries(request({ now: at(12) }));
    expect(newer?.id).not.toBe(old?.id);
    expect(JSON.parse(newer?.body ?? '').drStatuscode).toBe('delivered');
  });

  it('keeps a delivery superseded during its attempt superseded, even when the attempt succeeded', async () => {
    const a = await accountWithSms(store(), ['m-1']);
    await ingestReceipts(store(), a, [receipt('m-1', 'accepted', at(1))]);
    const [old] = await store().claimDeliveries(request());
    await ingestReceipts(store(), a, [receipt('m-1', 'delivered', at(2))]);
    await store().finishAttempts([
      {
        claim: old as ClaimedDelivery,
        outcome: {
          attempt: attempt(204),
          next: { state: 'delivered' },
        },
      },
    ]);
    const detail = await store().getDelivery(a, old?.id ?? '');
    expect(detail).toMatchObject({ state: 'superseded', attempts: 1, nextAttemptAt: null });
    // The attempt is on record: the operator sees what was sent.
    expect(detail?.attemptLog.map((x) => x.httpStatus)).toStrictEqual([204]);
    expect((await store().listDeliveries(a, { state: 'delivered', limit: 10 })).length).toBe(0);
  });

  it('rechecks held claims: one superseded meanwhile may not be sent and is handed back', async () => {
    const a = await accountWithSms(store(), ['m-1', 'm-2']);
    await ingestReceipts(store(), a, [receipt('m-1', 'accepted', at(1)), receipt('m-2', 'accepted', at(1))]);
    const held = await store().claimDeliveries(request());
    expect(held).toHaveLength(2);
    await ingestReceipts(store(), a, [receipt('m-1', 'delivered', at(2))]);
    const sendable = await store().recheckClaims(held);
    const m2 = held.find((c) => JSON.parse(c.body).messageid === 'm-2');
    expect(sendable.map((c) => c.id)).toStrictEqual([m2?.id]);
    // The superseded one lost its lease, so the newer delivery of m-1 is claimable at once.
    const [newer] = await store().claimDeliveries(request({ now: at(11) }));
    expect(JSON.parse(newer?.body ?? '')).toMatchObject({ messageid: 'm-1', drStatuscode: 'delivered' });
    const old = await store().getDelivery(a, held.find((c) => c !== m2)?.id ?? '');
    expect(old).toMatchObject({ state: 'superseded', attempts: 0, lastAttempt: null });
    // A claim whose lease another relay holds now is not sendable either.
    expect(
      await store().recheckClaims([{ ...(m2 as ClaimedDelivery), lease: 'someone-else' }]),
    ).toStrictEqual([]);
    expect(await store().recheckClaims([])).toStrictEqual([]);
  });

  it('keeps to the per-account limit, counting attempts already in flight', async () => {
    const a = await accountWithSms(store(), ['m-1', 'm-2', 'm-3', 'm-4']);
    const b = await accountWithSms(store(), ['m-1']);
    await ingestReceipts(
      store(),
      a,
      ['m-1', 'm-2', 'm-3', 'm-4'].map((m) => receipt(m, 'delivered', at(1))),
    );
    await ingestReceipts(store(), b, [receipt('m-1', 'delivered', at(1))]);
    const claimed = await store().claimDeliveries(request({ perAccount: 2, inFlight: new Map([[a, 1]]) }));
    const byAccount = (id: string) => claimed.filter((c) => c.accountId === id).length;
    expect(byAccount(a)).toBe(1);
    expect(byAccount(b)).toBe(1);
    expect(await store().claimDeliveries(request({ limit: 1 }))).toHaveLength(1);
  });

  it('lets accounts take turns, so a long backlog of one never holds up another', async () => {
    const { id: busy } = await store().createAccount(newAccount({ callbackUrl: URL }));
    const { id: quiet } = await store().createAccount(newAccount({ callbackUrl: URL }));
    const ids = Array.from({ length: 400 }, (_, i) => `b-${i}`);
    await ingest(
      store(),
      busy,
      ids.map((m) => sms(m, TO)),
    );
    await ingestReceipts(
      store(),
      busy,
      ids.map((m) => receipt(m, 'delivered', at(1))),
    );
    // Queued after the whole backlog, and due later.
    await ingest(store(), quiet, [sms('q-1', TO)]);
    const later = await store().ingestReceipts(quiet, [receipt('q-1', 'delivered', at(1))], at(5));
    expect(later.ok).toBe(true);
    const first = await store().claimDeliveries(request({ limit: 4, perAccount: 8 }));
    expect(first.filter((c) => c.accountId === quiet)).toHaveLength(1);
    // With the busy account at its limit, the quiet one's next delivery is served at once.
    await ingest(store(), quiet, [sms('q-2', TO)]);
    await ingestReceipts(store(), quiet, [receipt('q-2', 'delivered', at(1))]);
    const full = await store().claimDeliveries(request({ perAccount: 8, inFlight: new Map([[busy, 8]]) }));
    expect(full.map((c) => c.accountId)).toStrictEqual([quiet]);
  });

  it('gives a released claim back, due at once', async () => {
    const a = await accountWithSms(store(), ['m-1']);
    await ingestReceipts(store(), a, [receipt('m-1', 'delivered', at(1))]);
    const [c] = await store().claimDeliveries(request());
    await store().releaseClaim(c as ClaimedDelivery);
    const [again] = await store().claimDeliveries(
      request({ now: new Date(Date.now() + 1000), leaseUntil: new Date(Date.now() + 60_000) }),
    );
    expect(again?.id).toBe(c?.id);
    expect(again?.attempts).toBe(0);
  });

  it('redelivers a dead delivery with a fresh schedule, but never one a newer event supersedes', async () => {
    const a = await accountWithSms(store(), ['m-1', 'm-2']);
    await ingestReceipts(store(), a, [receipt('m-1', 'accepted', at(1)), receipt('m-2', 'failed', at(1))]);
    for (const c of await store().claimDeliveries(request())) {
      await store().finishAttempts([
        {
          claim: c,
          outcome: {
            attempt: attempt(500),
            next: { state: 'dead', disableAccount: false },
          },
        },
      ]);
    }
    const [m2, m1] = await store().listDeliveries(a, { limit: 10 });
    await ingestReceipts(store(), a, [receipt('m-1', 'delivered', at(2))]);
    expect(await store().redeliver(a, m1?.id ?? '', at(50))).toBe('superseded');
    expect(await store().redeliver(a, 'evt_01JD0000000000000000000000', at(50))).toBeNull();
    const again = await store().redeliver(a, m2?.id ?? '', at(50));
    expect(again).toMatchObject({ id: m2?.id, state: 'pending', attempts: 0, nextAttemptAt: at(50) });
    // Bulk: only dead deliveries that are the newest of their recipient.
    const newest = (await store().listDeliveries(a, { state: 'pending', limit: 10 })).map((d) => d.id);
    for (const c of await store().claimDeliveries(request({ now: at(60), leaseUntil: at(90) }))) {
      await store().finishAttempts([
        {
          claim: c,
          outcome: {
            attempt: attempt(500),
            next: { state: 'dead', disableAccount: false },
          },
        },
      ]);
    }
    expect(await store().redeliverDead(a, at(100))).toBe(newest.length);
    expect((await store().listDeliveries(a, { state: 'dead', limit: 10 })).map((d) => d.id)).toStrictEqual([
      m1?.id,
    ]);
  });

  it('backfills the latest event of each recipient with one since, unless already pending or delivered', async () => {
    const a = await accountWithSms(store(), ['m-1', 'm-2', 'm-3']);
    await ingestReceipts(store(), a, [receipt('m-1', 'accepted', at(1)), receipt('m-3', 'delivered', at(1))]);
    // m-3's delivery is answered 410 (dead, callbacks off); m-1's is handed back untried (pending, paused).
    for (const c of await store().claimDeliveries(request())) {
      if (JSON.parse(c.body).messageid === 'm-3') {
        await store().finishAttempts([
          {
            claim: c,
            outcome: {
              attempt: attempt(410),
              next: { state: 'dead', disableAccount: true },
            },
          },
        ]);
      } else {
        await store().releaseClaim(c);
      }
    }
    expect((await store().getAccount(a))?.callbackEnabled).toBe(false);
    const off = await store().ingestReceipts(
      a,
      [receipt('m-1', 'delivered', at(2)), receipt('m-2', 'delivered', at(2))],
      at(10),
    );
    expect(off.ok).toBe(true);
    expect(await store().backfillDeliveries(a, at(5), at(20))).toBe('callbacks-off');

    await store().updateAccount(a, { callbackEnabled: true });
    // Since at(5): m-1 and m-2, whose latest events have no delivery; m-1's older pending one is superseded.
    expect(await store().backfillDeliveries(a, at(5), at(20))).toBe(2);
    const states = async () =>
      (await store().listDeliveries(a, { limit: 10 })).map((d) => [
        d.seq,
        d.messageId,
        d.state,
        d.nextAttemptAt,
      ]);
    expect(await states()).toStrictEqual([
      [4, 'm-2', 'pending', at(20)],
      [3, 'm-1', 'pending', at(20)],
      [2, 'm-3', 'dead', null],
      [1, 'm-1', 'superseded', null],
    ]);
    const events = await store().listReceiptEvents(a, 0, 10);
    const [queued] = await store().listDeliveries(a, { limit: 1 });
    expect(queued).toMatchObject({
      id: events[3]?.id,
      attempts: 0,
      createdAt: at(20),
      payload: events[3]?.item,
    });
    // From the start: m-3's latest event has a dead delivery, which goes out again; the rest is pending.
    expect(await store().backfillDeliveries(a, NOW, at(30))).toBe(1);
    expect((await states())[2]).toStrictEqual([2, 'm-3', 'pending', at(30)]);
    expect(await store().backfillDeliveries(a, NOW, at(40))).toBe(0);
    expect(await store().backfillDeliveries(a, at(3600), at(40))).toBe(0);
    // What was queued is claimed like any delivery.
    const claimed = await store().claimDeliveries(request({ now: at(50), leaseUntil: at(90) }));
    expect(claimed.map((c) => JSON.parse(c.body).messageid).sort()).toStrictEqual(['m-1', 'm-2', 'm-3']);
    expect(await store().backfillDeliveries('00000000-0000-4000-8000-000000000000', NOW, at(40))).toBeNull();
  });

  it('lists deliveries newest first, by state, in pages, and never another account’s', async () => {
    const a = await accountWithSms(store(), ['m-1', 'm-2', 'm-3']);
    const b = await accountWithSms(store(), ['m-1']);
    await ingestReceipts(
      store(),
      a,
      ['m-1', 'm-2', 'm-3'].map((m) => receipt(m, 'delivered', at(1))),
    );
    await ingestReceipts(store(), b, [receipt('m-1', 'delivered', at(1))]);
    const page1 = await store().listDeliveries(a, { limit: 2 });
    expect(page1.map((d) => d.messageId)).toStrictEqual(['m-3', 'm-2']);
    const page2 = await store().listDeliveries(a, { limit: 2, beforeSeq: page1[1]?.seq ?? 0 });
    expect(page2.map((d) => d.messageId)).toStrictEqual(['m-1']);
    expect(await store().listDeliveries(a, { state: 'dead', limit: 2 })).toStrictEqual([]);
    const other = (await store().listDeliveries(b, { limit: 10 }))[0];
    expect(await store().getDelivery(a, other?.id ?? '')).toBeNull();
    expect(await store().redeliver(a, other?.id ?? '', at(5))).toBeNull();
  });

  it('queues deliveries for parked receipts applied when their message arrives', async () => {
    const { id: a } = await store().createAccount(newAccount({ callbackUrl: URL }));
    await ingestReceipts(store(), a, [receipt('m-1', 'accepted', at(1)), receipt('m-1', 'delivered', at(2))]);
    await ingest(store(), a, [sms('m-1', TO)]);
    const list = await store().listDeliveries(a, { limit: 10 });
    expect(list.map((d) => [d.payload.drStatuscode, d.state])).toStrictEqual([
      ['delivered', 'pending'],
      ['accepted', 'superseded'],
    ]);
  });
});
