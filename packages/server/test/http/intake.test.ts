import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { LightMyRequestResponse } from 'fastify';
import { beforeEach, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../src/store/sqlite/store.js';
import { engines } from '../support/engines.js';
import { type CreatedAccount, startHarness, useHarness } from '../support/http.js';

const ALICE = '447700900001';
const BOB = '447700900002';
/** What Kannel 1.4.5 passes as %A for a delivered message over SMPP. */
const DELIVERED_TEXT =
  'id:0a1b2c3d sub:001 dlvrd:001 submit date:2611221100 done date:2611221102 stat:DELIVRD err:000 text:Hello';

const expectText = (res: LightMyRequestResponse, status: number, body?: string | RegExp) => {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers['content-type']).toMatch(/^text\/plain/);
  if (typeof body === 'string') expect(res.body).toBe(body);
  else if (body) expect(res.body).toMatch(body);
};

describe.each(engines())('$name intake adapters', (engine) => {
  const h = useHarness(engine);
  let acct: CreatedAccount;

  const createRoute = async (body: Record<string, unknown>) => {
    const res = await h().admin('POST', '/admin/v1/routes', body);
    expect(res.statusCode, res.body).toBe(201);
    return (res.json() as { token: string }).token;
  };
  const dlr = async (messageId: string) => {
    const res = await h().inject(`/dlr?key=${acct.key}&secret=${acct.secret}&messageid=${messageId}`);
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as Record<string, unknown>[];
  };
  const kannel = (params: Record<string, string>) =>
    h().inject(`/intake/v1/kannel?${new URLSearchParams(params)}`);
  const jasmin = (params: Record<string, string>) =>
    h().inject({
      method: 'POST',
      url: `/intake/v1/jasmin?token=${params.token}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams(Object.entries(params).filter(([k]) => k !== 'token')).toString(),
    });
  const counts = async (name: string) =>
    ((await h().admin('GET', `/admin/v1/routes/${name}`)).json() as { counts: Record<string, number> })
      .counts;

  beforeEach(async () => {
    acct = await h().createAccount();
    const res = await h().ingest(acct.id, [
      { id: 'sms-1', channel: 'SMS', channelUserId: ALICE },
      { id: 'sms-1', channel: 'SMS', channelUserId: BOB },
    ]);
    expect(res.statusCode, res.body).toBe(200);
  });

  it('Kannel: the SMSC-accepted fetch then the receipt, by account, messageid and to, reach /dlr', async () => {
    const token = await createRoute({ name: 'kannel-eu', kind: 'kannel', timezone: 'Europe/Berlin' });
    const direct = { token, account: acct.id, messageid: 'sms-1', to: ALICE };
    expectText(await kannel({ ...direct, type: '8', reply: 'ACK/' }), 200, 'OK');
    expect((await dlr('sms-1'))[0]).toMatchObject({ to: ALICE, drStatuscode: 'accepted', drErrcode: '0' });

    expectText(await kannel({ ...direct, type: '1', reply: DELIVERED_TEXT }), 200, 'OK');
    const [alice, bob] = await dlr('sms-1');
    // done date 2611221102 in Berlin (UTC+1 in November).
    expect(alice).toMatchObject({
      drStatuscode: 'delivered',
      drErrcode: '0',
      drStatus: 0,
      drTime: '2026-11-22 10:02:00.000',
    });
    expect(bob).not.toHaveProperty('drStatuscode');
    // Replayed: matched again, ignored by precedence, still OK.
    expectText(await kannel({ ...direct, type: '1', reply: DELIVERED_TEXT }), 200, 'OK');
    expect(await counts('kannel-eu')).toStrictEqual({ matched: 3, parked: 0, garbled: 0, ignored: 0 });
  });

  it('Kannel: a receipt before its message is parked, then applied when the message arrives', async () => {
    const token = await createRoute({ name: 'k', kind: 'kannel', errorMap: { '027': '4' } });
    const direct = { token, account: acct.id, messageid: 'later', to: ALICE };
    expectText(await kannel({ ...direct, type: '2', reply: 'id:9 stat:UNDELIV err:027' }), 200, 'OK');
    expect(await counts('k')).toMatchObject({ parked: 1, matched: 0 });
    await h().ingest(acct.id, [{ id: 'later', channel: 'SMS', channelUserId: ALICE }]);
    // The route's errorMap wins over the default table (027 → 2).
    expect((await dlr('later'))[0]).toMatchObject({ drStatuscode: 'failed', drErrcode: '4' });
  });

  it('Kannel: the parameters may come as a POSTed form', async () => {
    const token = await createRoute({ name: 'k', kind: 'kannel' });
    const res = await h().inject({
      method: 'POST',
      url: `/intake/v1/kannel?token=${token}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ type: '16', account: acct.id, messageid: 'sms-1', to: BOB }).toString(),
    });
    expectText(res, 200, 'OK');
    expect((await dlr('sms-1'))[1]).toMatchObject({ to: BOB, drStatuscode: 'rejected', drErrcode: '99' });
  });

  it('Jasmin: answers exactly ACK/Jasmin once stored, level 1 then level 2', async () => {
    const token = await createRoute({ name: 'jasmin-1', kind: 'jasmin' });
    const direct = { token, account: acct.id, messageid: 'sms-1', to: BOB };
    const level1 = await jasmin({ ...direct, id: 'j-1', message_status: 'ESME_ROK', level: '1' });
    expectText(level1, 200, 'ACK/Jasmin');
    expect((await dlr('sms-1'))[1]).toMatchObject({ drStatuscode: 'accepted' });
    const level2 = await h().inject(
      `/intake/v1/jasmin?${new URLSearchParams({ ...direct, id: 'j-1', message_status: 'UNDELIV', level: '2', donedate: '2611221105', err: '001' })}`,
    );
    expectText(level2, 200, 'ACK/Jasmin');
    expect((await dlr('sms-1'))[1]).toMatchObject({
      drStatuscode: 'failed',
      drErrcode: '3',
      drTime: '2026-11-22 11:05:00.000',
    });
    // With account, messageid and to, Jasmin's id is not looked up: no recipient holds it, nothing was parked.
    expect(await counts('jasmin-1')).toMatchObject({ matched: 2, parked: 0 });
  });

  it('Jasmin: its id matches the recipient that claimed it with sms.carrier', async () => {
    const token = await createRoute({ name: 'jasmin-1', kind: 'jasmin' });
    const res = await h().ingest(acct.id, [
      {
        id: 'sms-2',
        channel: 'SMS',
        channelUserId: ALICE,
        sms: { carrier: { route: 'jasmin-1', messageId: 'j-7' } },
      },
    ]);
    expect(res.statusCode, res.body).toBe(200);
    const byId = await jasmin({
      token,
      id: 'j-7',
      message_status: 'DELIVRD',
      level: '2',
      donedate: '2611221103',
    });
    expectText(byId, 200, 'ACK/Jasmin');
    expect((await dlr('sms-2'))[0]).toMatchObject({
      to: ALICE,
      drStatuscode: 'delivered',
      drErrcode: '0',
      drTime: '2026-11-22 11:03:00.000',
    });
    // Redelivered, as a GET this time: matched again (ignored under precedence), acknowledged again.
    const get = await h().inject(
      `/intake/v1/jasmin?${new URLSearchParams({ token, id: 'j-7', message_status: 'DELIVRD', level: '2' })}`,
    );
    expectText(get, 200, 'ACK/Jasmin');
    expect(await counts('jasmin-1')).toMatchObject({ matched: 2, parked: 0 });
    const metrics = await h().admin('GET', '/metrics');
    expect(metrics.body).toContain('waybill_intake_receipts_total{route="jasmin-1",outcome="matched"} 2');
  });

  it('Jasmin: a receipt before its message is parked (ACK/Jasmin), then applied when the message claims it', async () => {
    const token = await createRoute({ name: 'jasmin-1', kind: 'jasmin' });
    const early = await jasmin({ token, id: 'j-early', message_status: 'UNDELIV', level: '2', err: '001' });
    expectText(early, 200, 'ACK/Jasmin');
    expect(await counts('jasmin-1')).toMatchObject({ parked: 1, matched: 0 });
    const metrics = await h().admin('GET', '/metrics');
    expect(metrics.body).toContain('waybill_intake_receipts_total{route="jasmin-1",outcome="parked"} 1');
    expect((await dlr('sms-1'))[0]).not.toHaveProperty('drStatuscode');
    const res = await h().ingest(acct.id, [
      {
        id: 'late',
        channel: 'SMS',
        channelUserId: BOB,
        sms: { carrier: { route: 'jasmin-1', messageId: 'j-early' } },
      },
    ]);
    expect(res.statusCode, res.body).toBe(200);
    expect((await dlr('late'))[0]).toMatchObject({ to: BOB, drStatuscode: 'failed', drErrcode: '3' });
  });

  it('Kannel: the carrierId form matches the recipient that claimed it, or parks until one does', async () => {
    const token = await createRoute({ name: 'kannel-eu', kind: 'kannel', timezone: 'Europe/Berlin' });
    await h().ingest(acct.id, [
      {
        id: 'sms-2',
        channel: 'SMS',
        channelUserId: ALICE,
        sms: { carrier: { route: 'kannel-eu', messageId: '0a1b2c3d' } },
      },
    ]);
    expectText(await kannel({ token, carrierId: '0a1b2c3d', type: '8', reply: 'ACK/' }), 200, 'OK');
    expect((await dlr('sms-2'))[0]).toMatchObject({ drStatuscode: 'accepted' });
    expectText(await kannel({ token, carrierId: '0a1b2c3d', type: '1', reply: DELIVERED_TEXT }), 200, 'OK');
    expect((await dlr('sms-2'))[0]).toMatchObject({
      drStatuscode: 'delivered',
      drTime: '2026-11-22 10:02:00.000',
    });
    // The same carrier id on another route is another pair: parked there.
    expectText(
      await kannel({ token, carrierId: 'x-9', type: '2', reply: 'id:x-9 stat:UNDELIV err:001' }),
      200,
      'OK',
    );
    expect(await counts('kannel-eu')).toStrictEqual({ matched: 2, parked: 1, garbled: 0, ignored: 0 });
    await h().ingest(acct.id, [
      {
        id: 'sms-3',
        channel: 'SMS',
        channelUserId: BOB,
        sms: { carrier: { route: 'kannel-eu', messageId: 'x-9' } },
      },
    ]);
    expect((await dlr('sms-3'))[0]).toMatchObject({ to: BOB, drStatuscode: 'failed', drErrcode: '3' });
    const metrics = (await h().admin('GET', '/metrics')).body;
    expect(metrics).toContain('waybill_intake_receipts_total{route="kannel-eu",outcome="matched"} 2');
    expect(metrics).toContain('waybill_intake_receipts_total{route="kannel-eu",outcome="parked"} 1');
  });

  it('Kannel: requests arriving together are committed together, each answered with its own outcome', async () => {
    const token = await createRoute({ name: 'k', kind: 'kannel' });
    const recipients = Array.from({ length: 20 }, (_, i) => ({ id: `g-${i}`, to: `4477009002${10 + i}` }));
    await h().ingest(
      acct.id,
      recipients.map((r) => ({ id: r.id, channel: 'SMS', channelUserId: r.to })),
    );
    const direct = (messageid: string, to: string, reply: string) =>
      kannel({ token, account: acct.id, messageid, to, type: '1', reply });
    const [first] = recipients;
    if (first === undefined) throw new Error('no recipients');
    const answers = await Promise.all([
      ...recipients.map((r) => direct(r.id, r.to, `id:${r.id} stat:DELIVRD err:000`)),
      // The same receipt twice in one group: applied once, then ignored under precedence; both matched.
      direct(first.id, first.to, `id:${first.id} stat:DELIVRD err:000`),
      // Not ingested yet: parked beside the others.
      direct('g-later', BOB, 'id:y stat:EXPIRED err:000'),
      // Unreadable (no type, no stat:): refused on its own, the others still committed.
      kannel({ token, account: acct.id, messageid: 'g-1', to: first.to, reply: 'hello' }),
    ]);
    expect(answers.map((a) => a.statusCode)).toStrictEqual([...Array(22).fill(200), 400]);
    for (const r of recipients) {
      expect((await dlr(r.id))[0]).toMatchObject({ to: r.to, drStatuscode: 'delivered', drErrcode: '0' });
    }
    expect(await counts('k')).toStrictEqual({ matched: 21, parked: 1, garbled: 1, ignored: 0 });
    await h().ingest(acct.id, [{ id: 'g-later', channel: 'SMS', channelUserId: BOB }]);
    expect((await dlr('g-later'))[0]).toMatchObject({ drStatuscode: 'expired' });
  });

  it('403, nothing written, for a carrier id held by an account outside the route’s accounts', async () => {
    const other = await h().createAccount({ name: 'Other' });
    const jasminToken = await createRoute({ name: 'j', kind: 'jasmin', accounts: [other.id] });
    const kannelToken = await createRoute({ name: 'k', kind: 'kannel', accounts: [other.id] });
    await h().ingest(acct.id, [
      {
        id: 'sms-2',
        channel: 'SMS',
        channelUserId: ALICE,
        sms: { carrier: { route: 'j', messageId: 'c-1' } },
      },
      { id: 'sms-2', channel: 'SMS', channelUserId: BOB, sms: { carrier: { route: 'k', messageId: 'c-1' } } },
    ]);
    const refused = await jasmin({ token: jasminToken, id: 'c-1', message_status: 'DELIVRD', level: '2' });
    expectText(refused, 403, /may not touch/);
    expect(refused.body).not.toContain('ACK/Jasmin');
    expectText(await kannel({ token: kannelToken, carrierId: 'c-1', type: '1' }), 403, /may not touch/);
    const [alice, bob] = await dlr('sms-2');
    expect(alice).not.toHaveProperty('drStatuscode');
    expect(bob).not.toHaveProperty('drStatuscode');
    expect(await counts('j')).toStrictEqual({ matched: 0, parked: 0, garbled: 0, ignored: 0 });
    // Once the route may touch the account, the same receipt applies.
    await h().admin('PATCH', '/admin/v1/routes/j', { accounts: [] });
    expectText(
      await jasmin({ token: jasminToken, id: 'c-1', message_status: 'DELIVRD', level: '2' }),
      200,
      'ACK/Jasmin',
    );
    expect((await dlr('sms-2'))[0]).toMatchObject({ drStatuscode: 'delivered' });
  });

  it('401 for a missing, unknown or other kind’s token, and for a rotated or deleted one', async () => {
    const token = await createRoute({ name: 'k', kind: 'kannel' });
    const jasminToken = await createRoute({ name: 'j', kind: 'jasmin' });
    const ok = { account: acct.id, messageid: 'sms-1', to: ALICE, type: '8' };
    expectText(await kannel(ok), 401, /token/);
    expectText(await kannel({ ...ok, token: 'wbi_00000000000000000000000000000000' }), 401);
    expectText(await kannel({ ...ok, token: 'nonsense' }), 401);
    expectText(await kannel({ ...ok, token: jasminToken }), 401);
    // HEAD says whether the request would be taken, and writes nothing.
    const head = await h().inject({
      method: 'HEAD',
      url: `/intake/v1/kannel?${new URLSearchParams({ ...ok, token })}`,
    });
    expect(head.statusCode).toBe(200);
    expect((await dlr('sms-1'))[0]).not.toHaveProperty('drStatuscode');
    expectText(await kannel({ ...ok, token }), 200, 'OK');

    const rotated = await h().admin('POST', '/admin/v1/routes/k/token');
    expect(rotated.statusCode, rotated.body).toBe(200);
    const fresh = (rotated.json() as { token: string }).token;
    expect(fresh).not.toBe(token);
    expectText(await kannel({ ...ok, token }), 401);
    expectText(await kannel({ ...ok, token: fresh }), 200, 'OK');

    expect((await h().admin('DELETE', '/admin/v1/routes/k')).statusCode).toBe(204);
    expectText(await kannel({ ...ok, token: fresh }), 401);
  });

  it('403 for a disabled route, and for an account outside the route’s accounts', async () => {
    const other = await h().createAccount({ name: 'Other' });
    const token = await createRoute({ name: 'k', kind: 'kannel', accounts: [other.id] });
    const params = { token, account: acct.id, messageid: 'sms-1', to: ALICE, type: '1' };
    expectText(await kannel(params), 403, /may not touch account/);
    expect((await dlr('sms-1'))[0]).not.toHaveProperty('drStatuscode');
    await h().admin('PATCH', '/admin/v1/routes/k', { accounts: [], enabled: false });
    expectText(await kannel(params), 403, 'the route k is disabled');
    await h().admin('PATCH', '/admin/v1/routes/k', { enabled: true });
    expectText(await kannel(params), 200, 'OK');
  });

  it('400 with the reason for an unreadable receipt (counted garbled), a bad carrierId, or a missing recipient', async () => {
    const token = await createRoute({ name: 'k', kind: 'kannel' });
    const direct = { token, account: acct.id, messageid: 'sms-1', to: ALICE };
    expectText(await kannel({ ...direct, type: '99' }), 400, /cannot be read: no state that maps/);
    expect(await counts('k')).toMatchObject({ garbled: 1 });
    const garbled = await h().admin('GET', '/admin/v1/routes/k/garbled');
    expect(garbled.statusCode, garbled.body).toBe(200);
    expect(garbled.json()).toStrictEqual({
      garbled: [
        {
          at: expect.any(String),
          text: `account=${acct.id}&messageid=sms-1&to=${ALICE}&type=99`,
          pdu: null,
        },
      ],
    });
    expectText(
      await kannel({ token, type: '1', carrierId: 'a b' }),
      400,
      /carrierId must be 1-64 printable ASCII/,
    );
    expectText(await kannel({ token, type: '1' }), 400, /account, messageid and to, or carrierId/);
    expectText(
      await kannel({ token, type: '1', account: acct.id, messageid: 'sms-1' }),
      400,
      /to is missing/,
    );
    expectText(await kannel({ ...direct, to: '+44 7700', type: '1' }), 400, /to must be a phone number/);
    expectText(await kannel({ ...direct, account: 'nobody', type: '1' }), 400, /no account nobody/);
    expectText(
      await h().inject(
        `/intake/v1/kannel?token=${token}&type=1&type=2&account=${acct.id}&messageid=sms-1&to=${ALICE}`,
      ),
      400,
      /type is given more than once/,
    );
    expect((await dlr('sms-1'))[0]).not.toHaveProperty('drStatuscode');
  });

  it('reads parameters named like Object members (toString, constructor, __proto__) as unknown ones', async () => {
    // Found by test/property/intake-bad-input.test.ts: a form field `toString` was a 500, and a query parameter
    // `constructor` was "given more than once".
    const token = await createRoute({ name: 'k', kind: 'kannel' });
    const direct = { account: acct.id, messageid: 'sms-1', to: ALICE, type: '1' };
    for (const junk of ['toString=x', 'constructor=x', '__proto__=x', 'hasOwnProperty=x&valueOf=y']) {
      const form = await h().inject({
        method: 'POST',
        url: `/intake/v1/kannel?token=${token}`,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: `${new URLSearchParams(direct)}&${junk}`,
      });
      expectText(form, 200, 'OK');
      expectText(
        await h().inject(`/intake/v1/kannel?token=${token}&${new URLSearchParams(direct)}&${junk}`),
        200,
        'OK',
      );
    }
    expectText(
      await h().inject({
        method: 'POST',
        url: `/intake/v1/kannel?token=${token}`,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: `${new URLSearchParams(direct)}&__proto__=x&__proto__=y`,
      }),
      400,
      'the parameter __proto__ is given more than once',
    );
    expect((await dlr('sms-1'))[0]).toMatchObject({ drStatuscode: 'delivered' });
  });

  it('answers a refusal quoting what arrived in one line, line breaks escaped and a huge value cut', async () => {
    // Found by test/property/intake-bad-input.test.ts: a `type` with a line break made a two-line answer.
    const token = await createRoute({ name: 'k', kind: 'kannel' });
    const direct = { token, account: acct.id, messageid: 'sms-1', to: ALICE };
    expectText(
      await kannel({ ...direct, type: '1\r\nX-Injected: 1\u2028' }),
      400,
      'the receipt cannot be read: no state that maps to a drStatuscode (no stat:, type 1\\x0d\\nX-Injected: 1\\x2028)',
    );
    const huge = await kannel({ ...direct, account: 'x'.repeat(5000), type: '1' });
    expectText(huge, 400, /^no account x+…$/);
    expect(huge.body.length).toBe(500);
  });

  it('never logs the token, and counts receipts in the metrics by route and outcome', async () => {
    const token = await createRoute({ name: 'k', kind: 'kannel' });
    const direct = { token, account: acct.id, messageid: 'sms-1', to: ALICE };
    await kannel({ ...direct, type: '8', reply: 'ACK/' });
    await kannel({ ...direct, messageid: 'early', type: '1' });
    await kannel({ ...direct, type: '77' });
    const logs = h().logs.join('');
    expect(logs).toContain('/intake/v1/kannel?token=[redacted]');
    expect(logs).not.toContain(token);
    const metrics = await h().admin('GET', '/metrics');
    expect(metrics.body).toContain('waybill_intake_receipts_total{route="k",outcome="matched"} 1');
    expect(metrics.body).toContain('waybill_intake_receipts_total{route="k",outcome="parked"} 1');
    expect(metrics.body).toContain('waybill_intake_receipts_total{route="k",outcome="garbled"} 1');
    expect(metrics.body).not.toContain(token);
    // No SMPP binds in this version: an SMPP route is reported down.
    await h().admin('POST', '/admin/v1/routes', {
      name: 'smsc-1',
      kind: 'smpp',
      smpp: { host: 'smsc.example', port: 2775, systemId: 'wb', password: 'pw' },
    });
    expect((await h().admin('GET', '/metrics')).body).toContain('waybill_smpp_bind_up{route="smsc-1"} 0');
  });
});

describe('intake while SQLite is locked by another connection', () => {
  it('answers 503 with Retry-After, then OK once the lock is gone', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'waybill-intake-locked-'));
    const path = join(dir, 'waybill.db');
    const h = await startHarness(
      { name: 'sqlite-file', open: async () => openSqliteStore({ path, cacheMb: 8, timeoutMs: 300 }) },
      { WAYBILL_DB_TIMEOUT_MS: '300' },
    );
    const other = new Database(path);
    try {
      const acct = await h.createAccount();
      await h.ingest(acct.id, [{ id: 'sms-1', channel: 'SMS', channelUserId: ALICE }]);
      const created = await h.admin('POST', '/admin/v1/routes', { name: 'k', kind: 'kannel' });
      const { token } = created.json() as { token: string };
      const url = `/intake/v1/kannel?token=${token}&type=1&account=${acct.id}&messageid=sms-1&to=${ALICE}`;
      other.exec('BEGIN EXCLUSIVE');
      const res = await h.inject(url);
      expectText(res, 503, /database is unavailable/);
      expect(res.headers['retry-after']).toBe('5');
      other.exec('ROLLBACK');
      expectText(await h.inject(url), 200, 'OK');
    } finally {
      if (other.inTransaction) other.exec('ROLLBACK');
      other.close();
      await h.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
