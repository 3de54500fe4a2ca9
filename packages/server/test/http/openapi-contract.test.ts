/**
 * The OpenAPI document is a contract a client can be generated from: it passes Redocly's recommended rules
 * with no error and no warning (the rules `redocly lint` applies when given no configuration), it is a valid
 * OpenAPI 3.1 document, and a client generated from it with openapi-typescript type-checks against responses
 * the server really sent — every operation's success, and every error kind that can be provoked — with the
 * response headers each one carries documented.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import { Validator } from '@seriousme/openapi-schema-validator';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engines } from '../support/engines.js';
import { ADMIN_TOKEN, basic, type Harness, startHarness } from '../support/http.js';

const ROOT = fileURLToPath(new URL('../../../..', import.meta.url));
const run = promisify(execFile);

interface ResponseObject {
  description: string;
  headers?: Record<string, { required?: boolean }>;
  content?: Record<string, unknown>;
}
interface Operation {
  operationId?: string;
  responses: Record<string, ResponseObject>;
}
interface OpenApiDocument {
  paths: Record<string, Record<string, Operation>>;
}

/** One answer the server gave, filed under the operation it answers for. */
interface Recorded {
  operationId: string;
  status: number;
  mediaType: string;
  body: unknown;
  headers: Record<string, unknown>;
}

/** Headers a client may act on; each one a response carries must be documented for it. */
const MEANINGFUL_HEADERS = [
  'x-request-id',
  'ratelimit',
  'ratelimit-policy',
  'retry-after',
  'deprecation',
  'sunset',
  'link',
  'www-authenticate',
  'allow',
];

const sqlite = engines()[0];
if (!sqlite) throw new Error('no SQLite engine');

async function lintProblems(doc: unknown) {
  const config = await createConfig({ extends: ['recommended'] });
  const problems = await lintFromString({
    source: JSON.stringify(doc),
    absoluteRef: '/openapi.json',
    config,
  });
  return problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer ?? '?'}`);
}

const operations = (doc: OpenApiDocument) =>
  Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, operation]) => ({ path, method, operation })),
  );

describe('the OpenAPI document', () => {
  let h: Harness;
  let doc: OpenApiDocument;
  let withoutOperator: OpenApiDocument;
  const recorded: Recorded[] = [];

  const record = (operationId: string, res: LightMyRequestResponse): LightMyRequestResponse => {
    const mediaType = String(res.headers['content-type'] ?? '').split(';')[0] ?? '';
    const body = mediaType.endsWith('json') ? res.json() : res.body;
    recorded.push({ operationId, status: res.statusCode, mediaType, body, headers: res.headers });
    return res;
  };

  beforeAll(async () => {
    // A small burst, so that one account can be driven to 429; three failed secrets lock a key.
    h = await startHarness(sqlite, { WAYBILL_RATE_BURST: '40', WAYBILL_LOCKOUT_FAILURES: '3' });
    doc = (await h.inject('/openapi.json')).json() as OpenApiDocument;
    const off = await startHarness(sqlite, { WAYBILL_ADMIN_TOKEN: '' });
    withoutOperator = (await off.inject('/openapi.json')).json() as OpenApiDocument;
    await off.close();
    await recordEveryOperation(h, record);
  });
  afterAll(async () => {
    await h?.close();
  });

  it('passes the recommended Redocly rules with no error and no warning, with and without the operator API', async () => {
    expect(await lintProblems(doc)).toStrictEqual([]);
    expect(await lintProblems(withoutOperator)).toStrictEqual([]);
  });

  it('is a valid OpenAPI 3.1 document', async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc) as unknown as Record<string, unknown>);
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it('names every operation, describes every response, and sends errors as problems (but /dlr’s)', () => {
    const ids = new Set<string>();
    for (const { path, method, operation } of operations(doc)) {
      expect(operation.operationId, `${method} ${path}`).toMatch(/^[a-z][A-Za-z0-9]+$/);
      ids.add(operation.operationId ?? '');
      for (const [status, response] of Object.entries(operation.responses)) {
        const where = `${method} ${path} ${status}`;
        expect(response.description, where).not.toBe('Default Response');
        expect(Object.keys(response.headers ?? {}), where).toContain('X-Request-Id');
        const media = Object.keys(response.content ?? {});
        if (Number(status) < 400) continue;
        // /dlr keeps the spec's {code, descr} (but for protocol refusals); /readyz its {"status": …}; the
        // gateway adapters answer one line of text, which is what gateways log.
        const protocol = Number(status) === 405 || Number(status) === 414;
        const plainJson = (path === '/dlr' && !protocol) || (path === '/readyz' && status === '503');
        const text = path.startsWith('/intake/') && !protocol;
        expect(media, where).toStrictEqual([
          text ? 'text/plain' : plainJson ? 'application/json' : 'application/problem+json',
        ]);
      }
      expect(Object.keys(operation.responses), `${method} ${path}`).toEqual(
        expect.arrayContaining(['405', '414']),
      );
    }
    expect(ids.size).toBe(operations(doc).length);
  });

  it('documents, for every answer recorded, each header a client may act on', () => {
    const byId = new Map(operations(doc).map((o) => [o.operation.operationId, o.operation]));
    for (const r of recorded) {
      const documented = byId.get(r.operationId)?.responses[String(r.status)];
      const where = `${r.operationId} ${r.status}`;
      expect(documented, `${where} is not documented`).toBeDefined();
      const names = Object.keys(documented?.headers ?? {}).map((n) => n.toLowerCase());
      const sent = MEANINGFUL_HEADERS.filter((name) => r.headers[name] !== undefined);
      expect(names, where).toEqual(expect.arrayContaining(sent));
      // A header the document calls required is on every such answer.
      for (const [name, header] of Object.entries(documented?.headers ?? {})) {
        if (header.required) expect(r.headers[name.toLowerCase()], `${where} ${name}`).toBeDefined();
      }
      // 204 No Content has no body, so no media type either.
      if (r.status === 204) expect(documented?.content, where).toBeUndefined();
      else expect(Object.keys(documented?.content ?? {}), where).toContain(r.mediaType);
    }
  });

  it('records a success of every operation and the error kinds a client can provoke', () => {
    const succeeded = new Set(recorded.filter((r) => r.status < 300).map((r) => r.operationId));
    const all = operations(doc).map((o) => o.operation.operationId);
    expect([...succeeded].sort()).toStrictEqual([...all].sort());
    const statuses = new Set(recorded.map((r) => r.status));
    for (const status of [400, 401, 402, 403, 404, 405, 409, 410, 413, 414, 415, 429]) {
      expect(statuses, `no ${status} recorded`).toContain(status);
    }
  });

  it('generates a client with openapi-typescript whose types accept every recorded answer', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'waybill-openapi-'));
    try {
      await writeFile(join(dir, 'openapi.json'), JSON.stringify(doc));
      // openapi-typescript needs TypeScript 5's compiler API; tools/openapi-typegen installs it beside it.
      const typegen = createRequire(join(ROOT, 'tools/openapi-typegen/package.json'));
      const cli = join(dirname(typegen.resolve('openapi-typescript/package.json')), 'bin/cli.js');
      await run(process.execPath, [cli, join(dir, 'openapi.json'), '--output', join(dir, 'api.d.ts')]);

      const lines = [
        "import type { operations } from './api.js';",
        'type Ops = operations;',
        'type Body<Op extends keyof Ops, S extends keyof Ops[Op]["responses"], M extends string> =',
        '  Ops[Op]["responses"][S] extends { content: { [K in M]: infer B } } ? B : never;',
        ...recorded
          .filter((r) => r.status !== 204)
          .map(
            (r, i) =>
              `export const r${i}: Body<${JSON.stringify(r.operationId)}, ${r.status}, ${JSON.stringify(r.mediaType)}> = ${JSON.stringify(r.body)};`,
          ),
        // The types are not vacuous: each of these must be refused.
        '// @ts-expect-error an unknown send status',
        'export const wrongEnum: Body<"getDlr", 200, "application/json">[number]["status"] = "5";',
        '// @ts-expect-error a field the document does not have',
        'export const extra: Body<"getLiveness", 200, "application/json"> = { status: "ok", uptime: 1 };',
        '// @ts-expect-error a problem without its code',
        'export const noCode: Body<"listMessages", 400, "application/problem+json"> = { type: "about:blank", title: "Bad Request", status: 400, detail: "x", requestId: "r" };',
        '// @ts-expect-error /dlr failures are not problems',
        'export const dlrProblem: Body<"getDlr", 401, "application/problem+json"> = { code: 4, descr: "Invalid credentials" };',
      ];
      await writeFile(join(dir, 'check.ts'), `${lines.join('\n')}\n`);
      await writeFile(
        join(dir, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            strict: true,
            exactOptionalPropertyTypes: true,
            noUncheckedIndexedAccess: true,
            noEmit: true,
            module: 'nodenext',
            target: 'es2022',
            types: [],
          },
          files: ['check.ts'],
        }),
      );
      const tsc = join(ROOT, 'node_modules/typescript/bin/tsc');
      const result = await run(process.execPath, [tsc, '-p', join(dir, 'tsconfig.json')]).then(
        () => ({ ok: true, output: '' }),
        (err: { stdout: string; stderr: string }) => ({ ok: false, output: `${err.stdout}${err.stderr}` }),
      );
      expect(result.output).toBe('');
      expect(result.ok).toBe(true);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

/** Drives every operation to a success, and to each error a client can provoke, recording the answers. */
async function recordEveryOperation(
  h: Harness,
  record: (operationId: string, res: LightMyRequestResponse) => LightMyRequestResponse,
): Promise<void> {
  const admin = (id: string, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, body?: unknown) =>
    h.admin(method, url, body).then((res) => record(id, res));
  const created = await admin('createAccount', 'POST', '/admin/v1/accounts', {
    name: 'Acme',
    callbackUrl: 'https://hooks.example/waybill',
  });
  const acct = created.json() as { id: string; key: string; secret: string };
  const auth = { authorization: basic(acct.key, acct.secret) };
  const get = (id: string, url: string, headers: Record<string, string> = auth) =>
    h.inject({ method: 'GET', url, headers }).then((res) => record(id, res));

  await admin('createAccount', 'POST', '/admin/v1/accounts', { name: 'Acme', colour: 'red' });
  record(
    'createAccount',
    await h.inject({
      method: 'POST',
      url: '/admin/v1/accounts',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'text/plain' },
      payload: 'name=Acme',
    }),
  );
  record(
    'createAccount',
    await h.inject({ method: 'POST', url: '/admin/v1/accounts', payload: { name: 'No token' } }),
  );
  record(
    'createAccount',
    await h.inject({
      method: 'POST',
      url: '/admin/v1/accounts',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      payload: `{"name":"${'x'.repeat(5 * 1024 * 1024)}"}`,
    }),
  );
  await admin('getAccount', 'GET', `/admin/v1/accounts/${acct.id}`);
  await admin('getAccount', 'GET', '/admin/v1/accounts/0190c0de-0000-7000-8000-000000000000');
  await admin('updateAccount', 'PATCH', `/admin/v1/accounts/${acct.id}`, { creditLimit: 10 });
  await admin('updateAccount', 'PATCH', `/admin/v1/accounts/${acct.id}`, { ipWhitelist: ['10.0.0.1/8'] });
  record(
    'updateAccount',
    await h.inject({
      method: 'PUT',
      url: `/admin/v1/accounts/${acct.id}`,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    }),
  );

  await admin('ingestMessages', 'POST', `/admin/v1/accounts/${acct.id}/messages`, {
    messages: [
      { id: 'sms-1', channel: 'SMS', channelUserId: '447700900123', sms: { status: '0', network: '23415' } },
      { id: 'sms-1', channel: 'SMS', channelUserId: '447700900124', sms: { status: '0', price: 0.05 } },
      { id: 'wa-1', channel: 'WHATSAPP', channelUserId: '447700900123', text: 'Hi', campaignId: 'spring' },
      {
        id: 'wa-2',
        channel: 'WHATSAPP',
        channelUserId: '447700900123',
        content: { card: 1 },
        status: 'read',
      },
    ],
  });
  await admin('ingestMessages', 'POST', `/admin/v1/accounts/${acct.id}/messages`, {
    messages: [
      { id: 'bad id', channel: 'SMS', channelUserId: '447700900123' },
      { id: 'x', chanel: 'SMS' },
    ],
  });
  await admin('ingestReceipts', 'POST', `/admin/v1/accounts/${acct.id}/receipts`, {
    receipts: [
      { messageId: 'sms-1', to: '447700900123', drStatuscode: 'accepted', drTime: '2026-11-22 09:00:00.000' },
      {
        messageId: 'sms-1',
        to: '447700900123',
        drStatuscode: 'delivered',
        drTime: '2026-11-22 09:01:00.000',
      },
      { messageId: 'early', drStatuscode: 'delivered' },
    ],
  });
  await admin('ingestReceipts', 'POST', `/admin/v1/accounts/${acct.id}/receipts`, {
    receipts: [{ messageId: 'sms-1', drStatuscode: 'delivered', drErrcode: 42 }],
  });

  const q = `key=${acct.key}&secret=${acct.secret}`;
  await get('getDlr', `/dlr?${q}&messageid=sms-1`, {});
  await get('getDlr', `/dlr?${q}&messageid=unknown`, {});
  await get('getDlr', `/dlr?key=${acct.key}&messageid=sms-1`, {});
  await get('getDlr', `/dlr?key=NOSUCHKY&secret=${acct.secret}&messageid=sms-1`, {});
  record('getDlr', await h.inject({ method: 'POST', url: `/dlr?${q}&messageid=sms-1` }));
  await get('getDlr', `/dlr?${q}&messageid=sms-1&pad=${'x'.repeat(9000)}`, {});

  await get('listMessages', '/messages?messageIds=sms-1,wa-1');
  await get('listMessages', '/messages?channel=WHATSAPP&channelUserId=447700900123&size=1');
  await get('listMessages', `/messages?campaignId=spring&${q}`, {});
  await get('listMessages', '/messages?channel=WHATSAPP&channelUserId=447700900123&size=0');
  await get('listMessages', '/messages?messageIds=sms-1', {});
  await get('listMessages', '/messages?messageIds=sms-1', { authorization: basic(acct.key, 'WRONGSEC') });
  record('listMessages', await h.inject({ method: 'POST', url: '/messages', headers: auth }));

  await get('listReceipts', '/receipts?limit=1');
  await get('listReceipts', '/receipts?limit=5000');

  await get('listContactMessagesV1', '/api/v1/contacts/messages?messageIds=sms-1');
  await get('listContactMessagesV1', '/api/v1/contacts/messages?channel=SMS&channelUserId=447700900124');
  await get('listContactMessagesV1', '/api/v1/contacts/messages?channel=SMS');

  await get('getLiveness', '/healthz', {});
  await get('getReadiness', '/readyz', {});
  await get('getMetrics', '/metrics', { authorization: `Bearer ${ADMIN_TOKEN}` });
  await get('getMetrics', '/metrics', {});

  await admin('rotateAccountSecret', 'POST', `/admin/v1/accounts/${acct.id}/secret`);
  await admin('rotateCallbackSecret', 'POST', `/admin/v1/accounts/${acct.id}/callback-secret`);
  const page = await admin('listDeliveries', 'GET', `/admin/v1/accounts/${acct.id}/deliveries?limit=5`);
  await admin('listDeliveries', 'GET', `/admin/v1/accounts/${acct.id}/deliveries?state=lost`);
  const deliveries = (page.json() as { deliveries: { id: string; state: string }[] }).deliveries;
  const superseded = deliveries.find((d) => d.state === 'superseded');
  const pending = deliveries.find((d) => d.state === 'pending');
  if (!superseded || !pending) throw new Error(`expected a superseded and a pending delivery: ${page.body}`);
  await admin('getDelivery', 'GET', `/admin/v1/accounts/${acct.id}/deliveries/${pending.id}`);
  await admin(
    'getDelivery',
    'GET',
    `/admin/v1/accounts/${acct.id}/deliveries/evt_00000000000000000000000000`,
  );
  await admin(
    'redeliverDelivery',
    'POST',
    `/admin/v1/accounts/${acct.id}/deliveries/${pending.id}/redeliver`,
  );
  await admin(
    'redeliverDelivery',
    'POST',
    `/admin/v1/accounts/${acct.id}/deliveries/${superseded.id}/redeliver`,
  );
  await admin('redeliverDeadDeliveries', 'POST', `/admin/v1/accounts/${acct.id}/deliveries/redeliver`, {});
  const since = { since: '2026-01-01T00:00:00Z' };
  await admin('backfillDeliveries', 'POST', `/admin/v1/accounts/${acct.id}/deliveries/backfill`, since);
  await admin('backfillDeliveries', 'POST', `/admin/v1/accounts/${acct.id}/deliveries/backfill`, {});

  // A second account: its IP whitelist, its quota, its rate, its lockout.
  const other = (await h.createAccount({ ipWhitelist: ['192.0.2.1'] })) as {
    id: string;
    key: string;
    secret: string;
  };
  await get('getDlr', `/dlr?key=${other.key}&secret=${other.secret}&messageid=sms-1`, {});
  await get('listMessages', '/messages?messageIds=sms-1', { authorization: basic(other.key, other.secret) });
  const broke = await h.createAccount({ balance: -1 });
  await get('getDlr', `/dlr?key=${broke.key}&secret=${broke.secret}&messageid=sms-1`, {});
  const busy = await h.createAccount();
  let limited: LightMyRequestResponse | undefined;
  for (let i = 0; i < 50 && limited?.statusCode !== 429; i++) {
    limited = await h.inject({ url: '/receipts', headers: { authorization: basic(busy.key, busy.secret) } });
  }
  if (limited) record('listReceipts', limited);
  const locked = await h.createAccount();
  for (let i = 0; i < 4; i++) {
    await get('getDlr', `/dlr?key=${locked.key}&secret=WRONGSEC&messageid=sms-1`, {});
  }

  // Intake routes and the gateway adapters (CONTRACT §12).
  const kannel = await admin('createRoute', 'POST', '/admin/v1/routes', { name: 'kannel-1', kind: 'kannel' });
  await admin('createRoute', 'POST', '/admin/v1/routes', {
    name: 'smsc-1',
    kind: 'smpp',
    smpp: { host: 'smsc.example', port: 2775, systemId: 'wb', password: 'pw' },
  });
  await admin('createRoute', 'POST', '/admin/v1/routes', { name: 'kannel-1', kind: 'kannel' });
  await admin('createRoute', 'POST', '/admin/v1/routes', { name: 'Bad', kind: 'kannel' });
  const jasmin = await admin('createRoute', 'POST', '/admin/v1/routes', { name: 'jasmin-1', kind: 'jasmin' });
  await admin('listRoutes', 'GET', '/admin/v1/routes');
  await admin('getRoute', 'GET', '/admin/v1/routes/smsc-1');
  await admin('getRoute', 'GET', '/admin/v1/routes/kannel-1');
  await admin('getRoute', 'GET', '/admin/v1/routes/nope');
  await admin('updateRoute', 'PATCH', '/admin/v1/routes/smsc-1', { smpp: { systemType: null } });
  await admin('rotateRouteToken', 'POST', '/admin/v1/routes/jasmin-1/token');
  await admin('rotateRouteToken', 'POST', '/admin/v1/routes/smsc-1/token');
  const kannelToken = (kannel.json() as { token: string }).token;
  const direct = `account=${acct.id}&messageid=sms-1&to=447700900123`;
  await get('intakeKannel', `/intake/v1/kannel?token=${kannelToken}&type=8&reply=ACK%2F&${direct}`, {});
  await get('intakeKannel', '/intake/v1/kannel?token=wbi_00000000000000000000000000000000&type=1', {});
  await get('intakeKannel', `/intake/v1/kannel?token=${kannelToken}&type=1&carrierId=abc`, {});
  record(
    'intakeKannelForm',
    await h.inject({
      method: 'POST',
      url: `/intake/v1/kannel?token=${kannelToken}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: `type=1&reply=${encodeURIComponent('id:1 stat:DELIVRD err:000')}&${direct}`,
    }),
  );
  const jasminToken = ((await h.admin('POST', '/admin/v1/routes/jasmin-1/token')).json() as { token: string })
    .token;
  await get(
    'intakeJasmin',
    `/intake/v1/jasmin?token=${jasminToken}&id=j-1&message_status=ESME_ROK&level=1&${direct}`,
    {},
  );
  await admin('updateRoute', 'PATCH', '/admin/v1/routes/jasmin-1', { enabled: false });
  await get(
    'intakeJasmin',
    `/intake/v1/jasmin?token=${jasminToken}&id=j-1&message_status=DELIVRD&level=2`,
    {},
  );
  await admin('updateRoute', 'PATCH', '/admin/v1/routes/jasmin-1', { enabled: true });
  record(
    'intakeJasminForm',
    await h.inject({
      method: 'POST',
      url: `/intake/v1/jasmin?token=${jasminToken}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: `id=j-1&message_status=DELIVRD&level=2&donedate=2611220901&err=000&${direct}`,
    }),
  );
  await get('intakeKannel', `/intake/v1/kannel?token=${kannelToken}&type=99&${direct}`, {});
  await admin('listGarbledReceipts', 'GET', '/admin/v1/routes/kannel-1/garbled');
  await admin('listGarbledReceipts', 'GET', '/admin/v1/routes/nope/garbled');
  await admin('deleteRoute', 'DELETE', '/admin/v1/routes/kannel-1');
  await admin('deleteRoute', 'DELETE', '/admin/v1/routes/kannel-1');
  void jasmin;

  const doomed = await h.createAccount();
  await admin('deleteAccount', 'DELETE', `/admin/v1/accounts/${doomed.id}`);
  await admin('deleteAccount', 'DELETE', `/admin/v1/accounts/${doomed.id}`);

  // After the sunset the deprecated endpoint is gone.
  h.advance(400 * 24 * 3600 * 1000);
  await get('listContactMessagesV1', '/api/v1/contacts/messages?messageIds=sms-1');
}
