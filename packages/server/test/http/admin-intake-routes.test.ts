import { describe, expect, it } from 'vitest';
import { engines } from '../support/engines.js';
import { START, useHarness } from '../support/http.js';
import { expectProblem } from '../support/problems.js';

const TOKEN = /^wbi_[A-Za-z0-9_-]{32}$/;
const SMPP = { host: 'smsc.example.net', port: 2775, systemId: 'waybill', password: 'pw-12345' };

describe.each(engines())('$name operator API: intake routes', (engine) => {
  const h = useHarness(engine);

  it('creates an HTTP route with defaults and shows its token only in that answer', async () => {
    const res = await h().admin('POST', '/admin/v1/routes', { name: 'kannel-eu', kind: 'kannel' });
    expect(res.statusCode, res.body).toBe(201);
    const created = res.json() as Record<string, unknown>;
    expect(created).toStrictEqual({
      name: 'kannel-eu',
      kind: 'kannel',
      accounts: [],
      timezone: 'UTC',
      errorMap: {},
      enabled: true,
      createdAt: new Date(START).toISOString(),
      token: expect.stringMatching(TOKEN),
    });
    const token = created.token as string;

    const list = await h().admin('GET', '/admin/v1/routes');
    expect(list.statusCode).toBe(200);
    const { token: _shown, ...route } = created;
    expect(list.json()).toStrictEqual({ routes: [route] });
    const one = await h().admin('GET', '/admin/v1/routes/kannel-eu');
    expect(one.json()).toStrictEqual({ ...route, counts: { matched: 0, parked: 0, garbled: 0, ignored: 0 } });
    for (const body of [list.body, one.body, h().logs.join('')]) expect(body).not.toContain(token);
  });

  it('creates an SMPP route whose password is write-only, with the bind status its lease tells', async () => {
    const res = await h().admin('POST', '/admin/v1/routes', {
      name: 'smsc-1',
      kind: 'smpp',
      timezone: 'Europe/Berlin',
      errorMap: { '027': '2' },
      smpp: SMPP,
    });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toStrictEqual({
      name: 'smsc-1',
      kind: 'smpp',
      accounts: [],
      timezone: 'Europe/Berlin',
      errorMap: { '027': '2' },
      enabled: true,
      createdAt: expect.any(String),
      smpp: {
        host: 'smsc.example.net',
        port: 2775,
        systemId: 'waybill',
        bindType: 'receiver',
        tls: false,
        enquireLinkSeconds: 30,
      },
    });
    const one = await h().admin('GET', '/admin/v1/routes/smsc-1');
    expect(one.json()).toMatchObject({
      status: {
        // No process holds the bind (this harness runs no binds): connecting, with nothing to blame yet.
        state: 'connecting',
        since: null,
        lastError: null,
        heldBy: null,
      },
    });
    const patched = await h().admin('PATCH', '/admin/v1/routes/smsc-1', {
      enabled: false,
      smpp: { password: 'new-pw', systemType: 'VMA' },
    });
    expect(patched.statusCode, patched.body).toBe(200);
    expect(patched.json()).toMatchObject({
      enabled: false,
      smpp: { systemType: 'VMA', host: 'smsc.example.net' },
    });
    expect((await h().admin('GET', '/admin/v1/routes/smsc-1')).json()).toMatchObject({
      status: { state: 'disabled', lastError: null },
    });
    // Sealed at rest: the database holds neither password.
    const stored = await h().store.getIntakeRoute('smsc-1');
    expect(stored?.sealedPassword).toMatch(/^sealed:v1:/);
    const everything = [res.body, one.body, patched.body, JSON.stringify(stored), h().logs.join('')].join(
      '\n',
    );
    expect(everything).not.toContain('pw-12345');
    expect(everything).not.toContain('new-pw');
    // An SMPP route has no token to rotate.
    expectProblem(await h().admin('POST', '/admin/v1/routes/smsc-1/token'), 400, 'invalid_request');
  });

  it('changes the given fields and keeps the others', async () => {
    const acct = await h().createAccount();
    await h().admin('POST', '/admin/v1/routes', { name: 'j', kind: 'jasmin', timezone: 'Asia/Tokyo' });
    const res = await h().admin('PATCH', '/admin/v1/routes/j', {
      accounts: [acct.id],
      errorMap: { '1': '3' },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ accounts: [acct.id], errorMap: { '1': '3' }, timezone: 'Asia/Tokyo' });
    expect(res.json()).not.toHaveProperty('token');
  });

  it('refuses bad fields naming the one at fault, a taken name with 409, an unknown route with 404', async () => {
    const post = (body: unknown) => h().admin('POST', '/admin/v1/routes', body);
    const cases: [unknown, string][] = [
      [{ name: 'Bad_Name', kind: 'kannel' }, 'name'],
      [{ name: 'x'.repeat(33), kind: 'kannel' }, 'name'],
      [{ name: 'a', kind: 'http' }, 'kind'],
      [{ name: 'a', kind: 'kannel', timezone: 'Mars/Olympus' }, 'timezone'],
      [{ name: 'a', kind: 'kannel', errorMap: { '027': '42' } }, 'errorMap.027'],
      // The document says so (a key of at most 64 characters, not blank).
      [{ name: 'a', kind: 'kannel', errorMap: { ['x'.repeat(65)]: '2' } }, 'errorMap'],
      [{ name: 'a', kind: 'kannel', errorMap: { ' ': '2' } }, 'errorMap'],
      [{ name: 'a', kind: 'kannel', accounts: ['0190a5d4-7e2b-7c3d-8e4f-5a6b7c8d9e0f'] }, 'accounts[0]'],
      [{ name: 'a', kind: 'kannel', smpp: SMPP }, 'smpp'],
      [{ name: 'a', kind: 'smpp' }, 'smpp'],
      [{ name: 'a', kind: 'smpp', smpp: { ...SMPP, port: 70000 } }, 'smpp.port'],
      [{ name: 'a', kind: 'kannel', colour: 'red' }, 'colour'],
    ];
    for (const [body, param] of cases) {
      const problem = expectProblem(await post(body), 400, 'invalid_request');
      expect(problem.param, JSON.stringify(body)).toBe(param);
    }
    expect((await h().admin('GET', '/admin/v1/routes')).json()).toStrictEqual({ routes: [] });

    expect((await post({ name: 'a', kind: 'kannel' })).statusCode).toBe(201);
    expectProblem(await post({ name: 'a', kind: 'jasmin' }), 409, 'conflict');
    expectProblem(await h().admin('PATCH', '/admin/v1/routes/a', { kind: 'jasmin' }), 400, 'invalid_request');
    for (const [method, url] of [
      ['GET', '/admin/v1/routes/nope'],
      ['PATCH', '/admin/v1/routes/nope'],
      ['DELETE', '/admin/v1/routes/nope'],
      ['POST', '/admin/v1/routes/nope/token'],
    ] as const) {
      expectProblem(await h().admin(method, url, method === 'PATCH' ? {} : undefined), 404, 'not_found');
    }
  });

  it('needs the admin token', async () => {
    const res = await h().inject({ method: 'GET', url: '/admin/v1/routes' });
    expectProblem(res, 401, 'unauthorized');
  });

  it('rotating the token keeps the settings, and changing the settings keeps the token', async () => {
    await h().admin('POST', '/admin/v1/routes', { name: 'k', kind: 'kannel' });
    const before = await h().store.getIntakeRoute('k');
    await h().admin('PATCH', '/admin/v1/routes/k', { timezone: 'Asia/Tokyo' });
    expect((await h().store.getIntakeRoute('k'))?.tokenDigest).toStrictEqual(before?.tokenDigest);
    const rotated = await h().admin('POST', '/admin/v1/routes/k/token');
    expect(rotated.json()).toMatchObject({
      name: 'k',
      timezone: 'Asia/Tokyo',
      token: expect.stringMatching(TOKEN),
    });
    const after = await h().store.getIntakeRoute('k');
    expect(after?.tokenDigest).not.toStrictEqual(before?.tokenDigest);
    expect(after?.sealedToken).toMatch(/^sealed:v1:/);
    expect(after?.timezone).toBe('Asia/Tokyo');
  });

  it('deletes a route', async () => {
    await h().admin('POST', '/admin/v1/routes', { name: 'gone', kind: 'kannel' });
    expect((await h().admin('DELETE', '/admin/v1/routes/gone')).statusCode).toBe(204);
    expectProblem(await h().admin('GET', '/admin/v1/routes/gone'), 404, 'not_found');
  });
});
