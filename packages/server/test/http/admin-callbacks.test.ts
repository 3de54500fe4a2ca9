import { beforeEach, describe, expect, it } from 'vitest';
import { openSecret } from '../../src/domain/secret-box.js';
import { engines } from '../support/engines.js';
import { type CreatedAccount, PEPPER, START, useHarness } from '../support/http.js';
import { expectProblem } from '../support/problems.js';

const TO = '447700900123';
const HOOK = 'https://hooks.example.com/dlr';

interface DeliveryList {
  deliveries: { id: string; state: string; messageId: string; [k: string]: unknown }[];
  nextCursor: string | null;
  hasMore: boolean;
}

describe.each(engines())('$name operator API: callbacks', (engine) => {
  const h = useHarness(engine, { WAYBILL_CALLBACK_SECRET_GRACE_SECONDS: '3600' });
  let acct: CreatedAccount;
  beforeEach(async () => {
    acct = await h().createAccount({ callbackUrl: HOOK });
    const ids = ['m-1', 'm-2', 'm-3'];
    expect(
      (
        await h().ingest(
          acct.id,
          ids.map((id) => ({ id, channel: 'SMS', channelUserId: TO })),
        )
      ).statusCode,
    ).toBe(200);
  });
  const base = () => `/admin/v1/accounts/${acct.id}`;
  const receipts = (...items: [string, string, number][]) =>
    h().receipts(
      acct.id,
      items.map(([messageId, drStatuscode, s]) => ({
        messageId,
        drStatuscode,
        drTime: new Date(START + s * 1000).toISOString(),
      })),
    );
  const list = async (query = ''): Promise<DeliveryList> => {
    const res = await h().admin('GET', `${base()}/deliveries${query}`);
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as DeliveryList;
  };

  it('shows callbackEnabled, defaulting to true, settable at creation and by PATCH', async () => {
    expect(acct.callbackEnabled).toBe(true);
    const off = await h().createAccount({ callbackUrl: HOOK, callbackEnabled: false });
    expect(off.callbackEnabled).toBe(false);
    const patched = await h().admin('PATCH', `/admin/v1/accounts/${off.id}`, { callbackEnabled: true });
    expect(patched.json()).toMatchObject({ callbackEnabled: true });
    await h().admin('PATCH', `/admin/v1/accounts/${off.id}`, { callbackEnabled: false });
    const moved = await h().admin('PATCH', `/admin/v1/accounts/${off.id}`, {
      callbackUrl: 'https://new.example/cb',
    });
    expect(moved.json()).toMatchObject({ callbackUrl: 'https://new.example/cb', callbackEnabled: true });
    expectProblem(
      await h().admin('PATCH', `/admin/v1/accounts/${off.id}`, { callbackEnabled: null }),
      400,
      'invalid_request',
    );
  });

  it('refuses a callback URL with credentials, of another scheme, or longer than 2048 characters', async () => {
    for (const callbackUrl of [
      'https://user:pass@hooks.example.com/dlr',
      'https://user@hooks.example.com/dlr',
      'ftp://hooks.example.com/dlr',
      'not a url',
      `https://hooks.example.com/${'a'.repeat(2048)}`,
    ]) {
      expectProblem(
        await h().admin('POST', '/admin/v1/accounts', { name: 'x', callbackUrl }),
        400,
        'invalid_request',
      );
      expectProblem(await h().admin('PATCH', base(), { callbackUrl }), 400, 'invalid_request');
    }
    // Where it points is judged only at attempt time.
    const internal = await h().admin('POST', '/admin/v1/accounts', {
      name: 'x',
      callbackUrl: 'http://127.0.0.1:9/cb',
    });
    expect(internal.statusCode).toBe(201);
  });

  it('keeps callback secrets sealed at rest and rotates them with a grace period', async () => {
    const stored = await h().store.getCallbackSecrets(acct.id);
    expect(stored?.current).toMatch(/^sealed:v1:/);
    expect(stored?.current).not.toContain(acct.callbackSecret.slice(6, 20));
    expect(openSecret(PEPPER, stored?.current ?? '')).toBe(acct.callbackSecret);

    const res = await h().admin('POST', `${base()}/callback-secret`);
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json() as { callbackSecret: string; secret?: string; id: string };
    expect(body.id).toBe(acct.id);
    expect(body.secret).toBeUndefined();
    expect(body.callbackSecret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(body.callbackSecret.slice(6), 'base64')).toHaveLength(32);
    const rotated = await h().store.getCallbackSecrets(acct.id);
    expect(openSecret(PEPPER, rotated?.current ?? '')).toBe(body.callbackSecret);
    expect(openSecret(PEPPER, rotated?.previous ?? '')).toBe(acct.callbackSecret);
    expect(rotated?.previousUntil).toStrictEqual(new Date(START + 3600_000));
    expectProblem(
      await h().admin(
        'POST',
        `/admin/v1/accounts/${'0'.repeat(8)}-0000-7000-8000-000000000000/callback-secret`,
      ),
      404,
      'not_found',
    );
    expectProblem(await h().admin('GET', `${base()}/callback-secret`), 405, 'method_not_allowed');
  });

  it('lists deliveries newest first with the contract fields, pages them and filters by state', async () => {
    await receipts(['m-1', 'delivered', 1], ['m-2', 'delivered', 1], ['m-3', 'failed', 1]);
    const first = await list('?limit=2');
    expect(first.hasMore).toBe(true);
    expect(first.deliveries.map((d) => d.messageId)).toStrictEqual(['m-3', 'm-2']);
    const [d] = first.deliveries;
    expect(Object.keys(d ?? {}).sort()).toStrictEqual(
      [
        'attempts',
        'createdAt',
        'eventId',
        'id',
        'lastAttempt',
        'messageId',
        'nextAttemptAt',
        'payload',
        'state',
        'to',
      ].sort(),
    );
    expect(d).toMatchObject({
      state: 'pending',
      attempts: 0,
      to: TO,
      createdAt: new Date(START).toISOString(),
      nextAttemptAt: new Date(START).toISOString(),
      lastAttempt: null,
      payload: { type: 'dlr', messageid: 'm-3', drStatuscode: 'failed', drStatus: 400 },
    });
    expect(d?.id).toBe(d?.eventId);
    const second = await list(`?limit=2&cursor=${encodeURIComponent(first.nextCursor ?? '')}`);
    expect(second).toMatchObject({ hasMore: false, nextCursor: null });
    expect(second.deliveries.map((x) => x.messageId)).toStrictEqual(['m-1']);
    expect((await list('?state=dead')).deliveries).toStrictEqual([]);
    // A cursor is bound to the state filter.
    expectProblem(
      await h().admin(
        'GET',
        `${base()}/deliveries?state=pending&cursor=${encodeURIComponent(first.nextCursor ?? '')}`,
      ),
      400,
      'invalid_request',
    );
    for (const q of [
      '?state=lost',
      '?limit=0',
      '?limit=101',
      '?cursor=',
      '?cursor=abc.def',
      '?limit=1&limit=2',
    ]) {
      expectProblem(await h().admin('GET', `${base()}/deliveries${q}`), 400, 'invalid_request');
    }
    // The events behind them are in the feed, with the same ids.
    const feed = await h().inject({ url: `/receipts?key=${acct.key}&secret=${acct.secret}` });
    expect((feed.json() as { receipts: { id: string }[] }).receipts.map((r) => r.id).reverse()).toStrictEqual(
      [...first.deliveries.map((x) => x.id), ...second.deliveries.map((x) => x.id)],
    );
  });

  it('shows one delivery with its attempt log, and 404 for another account’s', async () => {
    await receipts(['m-1', 'delivered', 1]);
    const [d] = (await list()).deliveries;
    const res = await h().admin('GET', `${base()}/deliveries/${d?.id}`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ id: d?.id, state: 'pending', attemptLog: [] });
    const other = await h().createAccount({ callbackUrl: HOOK });
    expectProblem(
      await h().admin('GET', `/admin/v1/accounts/${other.id}/deliveries/${d?.id}`),
      404,
      'not_found',
    );
    expectProblem(await h().admin('GET', `${base()}/deliveries/evt_nope`), 404, 'not_found');
  });

  it('redelivers one delivery (202) and refuses a superseded one (409)', async () => {
    await receipts(['m-1', 'accepted', 1]);
    await receipts(['m-1', 'delivered', 2]);
    const [newer, older] = (await list()).deliveries;
    expect(older?.state).toBe('superseded');
    expectProblem(await h().admin('POST', `${base()}/deliveries/${older?.id}/redeliver`), 409, 'conflict');
    h().advance(60_000);
    const res = await h().admin('POST', `${base()}/deliveries/${newer?.id}/redeliver`);
    expect(res.statusCode, res.body).toBe(202);
    expect(res.json()).toMatchObject({
      id: newer?.id,
      state: 'pending',
      attempts: 0,
      nextAttemptAt: new Date(START + 60_000).toISOString(),
    });
    expectProblem(await h().admin('POST', `${base()}/deliveries/evt_nope/redeliver`), 404, 'not_found');
    const bulk = await h().admin('POST', `${base()}/deliveries/redeliver`, {});
    expect(bulk.statusCode).toBe(202);
    expect(bulk.json()).toStrictEqual({ redelivered: 0 });
    expectProblem(
      await h().admin('POST', `${base()}/deliveries/redeliver`, { all: true }),
      400,
      'invalid_request',
    );
  });

  it('backfills after callbacks were off: the latest event of each recipient, once; 409 while off', async () => {
    const backfill = (body: unknown, account = acct.id) =>
      h().admin('POST', `/admin/v1/accounts/${account}/deliveries/backfill`, body);
    const since = new Date(START).toISOString();
    await h().admin('PATCH', base(), { callbackEnabled: false });
    await receipts(['m-1', 'accepted', 1]);
    await receipts(['m-1', 'delivered', 2], ['m-2', 'delivered', 2]);
    expect((await list()).deliveries).toStrictEqual([]);
    expectProblem(await backfill({ since }), 409, 'conflict');

    await h().admin('PATCH', base(), { callbackEnabled: true });
    const res = await backfill({ since });
    expect(res.statusCode, res.body).toBe(202);
    expect(res.json()).toStrictEqual({ queued: 2 });
    // Exactly the latest event of each recipient, due at once, with the feed's event ids.
    const feed = await h().inject({ url: `/receipts?key=${acct.key}&secret=${acct.secret}` });
    const events = (feed.json() as { receipts: { id: string; receipt: { messageid: string } }[] }).receipts;
    const latest = [events[2]?.id, events[1]?.id];
    const queued = (await list()).deliveries;
    expect(queued.map((d) => [d.id, d.state, d.nextAttemptAt])).toStrictEqual(
      latest.map((id) => [id, 'pending', new Date(START).toISOString()]),
    );
    expect((await backfill({ since })).json()).toStrictEqual({ queued: 0 });

    for (const body of [
      {},
      { since: 'yesterday' },
      { since: '2026-02-30T10:00:00Z' },
      { since: 1_700_000_000 },
      { since, all: true },
    ]) {
      expectProblem(await backfill(body), 400, 'invalid_request');
    }
    expectProblem(await backfill({ since }, '00000000-0000-4000-8000-000000000000'), 404, 'not_found');
    const noUrl = await h().createAccount({});
    expectProblem(await backfill({ since }, noUrl.id), 409, 'conflict');
    expect((await h().admin('GET', `${base()}/deliveries/backfill`)).statusCode).toBe(405);
  });
});
