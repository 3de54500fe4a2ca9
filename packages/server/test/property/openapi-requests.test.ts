/**
 * Requests generated from the OpenAPI document itself, as an outside client or a property-based tester
 * (Schemathesis) would generate them: for every operation, parameter and body values are drawn from the
 * document's own schemas (test/support/schema-arbitrary.ts) and sent to a server holding an account and some
 * data. Every request the document calls valid must be accepted — a 2xx, or a documented answer that is not a
 * validation error (404 for an id no record has, 409 for a superseded delivery) — and every answer must be
 * what the document says: a documented status and media type, a body valid against its schema, and each
 * header the document marks required.
 *
 * The document cannot say everything: which query parameters go together (the modes of /messages), that a
 * cursor is a token only the server mints, and a few rules across fields of one item (an SMS identity is a phone
 * number; `sms` only on outbound SMS). Those are the test's own knowledge, each stated where it is used, and
 * the values still come from the document's schemas.
 */
import fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engines } from '../support/engines.js';
import { ADMIN_TOKEN, basic, type CreatedAccount, type Harness, startHarness } from '../support/http.js';
import {
  documentValidator,
  type JsonSchema,
  type OpenApiDocument,
  type Operation,
  operationsOf,
  pointerSegment,
} from '../support/openapi.js';
import { arbitraryOf } from '../support/schema-arbitrary.js';

const RUNS = Number(process.env.WAYBILL_FC_RUNS ?? 25);

/** What the server holds before the requests are generated, and the tokens only it can mint. */
interface Fixture {
  main: CreatedAccount;
  contactId: string;
  deliveryIds: string[];
  historyCursor: string;
  feedCursor: string;
  deliveriesCursor: string;
  /** Intake routes of each kind, enabled and open to any account, and the tokens of the HTTP ones. */
  routes: string[];
  tokens: { kannel: string; jasmin: string };
}

/** A request as generated: path parameters, query parameters, a body. */
interface Generated {
  path: Record<string, string>;
  query: Record<string, unknown>;
  body?: unknown;
}

/** Stands for "an account created just for this request", for the operations that change or delete one. */
const FRESH_ACCOUNT = 'fresh-account';

/** Operations that change or delete their account: each case gets one of its own, so the others keep theirs. */
const MUTATING = new Set(['updateAccount', 'deleteAccount', 'rotateAccountSecret', 'rotateCallbackSecret']);

/**
 * Stands for "an intake route created just for this request", for the operations that change, rotate or delete
 * one (the fixture's routes keep their tokens and stay enabled for the adapters). Its kind is the one the
 * request needs: `smpp` settings go to an smpp route only, and only an HTTP route has a token to rotate.
 */
const FRESH_ROUTE = 'fresh-route';
const MUTATING_ROUTES = new Set(['updateRoute', 'deleteRoute', 'rotateRouteToken']);
let freshRoutes = 0;

/** The intake adapters' operations (GET, and POST with a form), by the kind of route whose token they take. */
const INTAKE: Record<string, 'kannel' | 'jasmin'> = {
  intakeKannel: 'kannel',
  intakeKannelForm: 'kannel',
  intakeJasmin: 'jasmin',
  intakeJasminForm: 'jasmin',
};
const FORM = 'application/x-www-form-urlencoded';

/**
 * 400s the document states in words only, each with the field it must name: a request generated from the
 * schemas may break one of these rules, and is then refused for it — and only for it.
 */
const RULES_ACROSS_FIELDS: Record<string, (problem: Problem) => boolean> = {
  // An ipWhitelist range must have no host bits set (10.0.0.1/8 is refused, 10.0.0.0/8 taken); the document
  // gives an IPv6 range's shape only.
  createAccount: (p) => hostBits(p),
  updateAccount: (p) => hostBits(p),
  // Per item: an SMS identity is a phone number, `sms` only on outbound SMS, `status` not on SMS or inbound,
  // an identity belongs to one contact, a contact has one identity per channel, a record keeps its channel.
  ingestMessages: (p) =>
    (p.errors ?? []).length > 0 &&
    (p.errors ?? []).every((e) =>
      ['channelUserId', 'sms', 'status', 'contactId', 'channel', undefined].includes(e.param),
    ),
  // A name drawn from the schema may be a route the generated createRoute requests made, of another kind than
  // the request needs: smpp settings go to an smpp route only, and an smpp route has no token to rotate.
  updateRoute: (p) => p.param === 'smpp' && /takes no smpp settings/.test(p.detail ?? ''),
  rotateRouteToken: (p) => /has no intake token/.test(p.detail ?? ''),
  // Per item: `to` is required when the message has several recipients.
  ingestReceipts: (p) => (p.errors ?? []).length > 0 && (p.errors ?? []).every((e) => e.param === 'to'),
};

const hostBits = (p: Problem) =>
  /^ipWhitelist\[\d+\]$/.test(p.param ?? '') && /host bits set|is not a CIDR range/.test(p.detail ?? '');

interface Problem {
  code?: string;
  param?: string;
  detail?: string;
  errors?: { index: number; detail: string; param?: string }[];
}

describe.each(engines())('$name requests generated from the OpenAPI document', (engine) => {
  let h: Harness;
  let doc: OpenApiDocument;
  let validate: ReturnType<typeof documentValidator>;
  let fx: Fixture;

  beforeAll(async () => {
    // No rate limit: hundreds of generated requests go to one account, and a 429 is not what is tested.
    h = await startHarness(engine, { WAYBILL_RATE_PER_SECOND: '0' });
    doc = (await h.inject('/openapi.json')).json() as OpenApiDocument;
    validate = documentValidator(doc);
    fx = await seed(h);
  }, 60_000);
  afterAll(async () => {
    await h?.close();
  });

  it('accepts every valid request of every operation and answers as documented', async () => {
    const operations = operationsOf(doc);
    expect(operations.length).toBeGreaterThanOrEqual(19);
    const seen = new Map<string, Set<number>>();
    // One seed for every operation, shown on failure: WAYBILL_FC_SEED=<seed> replays the run.
    const seed = Number(process.env.WAYBILL_FC_SEED ?? Date.now() % 2 ** 31);
    for (const { path, method, operation } of operations) {
      const statuses = new Set<number>();
      seen.set(operation.operationId, statuses);
      await fc.assert(
        fc.asyncProperty(requestOf(doc, fx, operation), async (generated) => {
          const res = await send(h, fx, path, method, operation, generated);
          statuses.add(res.statusCode);
          checkAnswer(validate, path, method, operation, generated, res);
        }),
        { numRuns: RUNS, seed },
      );
    }
    // Each operation was seen to succeed at least once: the generated requests are not all refused.
    const neverSucceeded = [...seen].filter(([, s]) => ![...s].some((x) => x < 300)).map(([id]) => id);
    expect(neverSucceeded, `seed ${seed}`).toStrictEqual([]);
  }, 300_000);
});

/** An account with SMS and WhatsApp messages, receipts, queued callback deliveries, and a cursor of each kind. */
async function seed(h: Harness): Promise<Fixture> {
  const main = await h.createAccount({ callbackUrl: 'https://hooks.example/waybill' });
  const ok = (res: LightMyRequestResponse) => {
    if (res.statusCode >= 300) throw new Error(`seeding failed: ${res.statusCode} ${res.body}`);
    return res;
  };
  ok(
    await h.ingest(main.id, [
      { id: 'sms-1', channel: 'SMS', channelUserId: '447700900123', sms: { status: '0', network: '23415' } },
      { id: 'sms-1', channel: 'SMS', channelUserId: '447700900124', sms: { status: '0' } },
      { id: 'wa-1', channel: 'WHATSAPP', channelUserId: 'wa-user', text: 'Hi', campaignId: 'spring' },
      { id: 'wa-2', channel: 'WHATSAPP', channelUserId: 'wa-user', content: { card: 1 }, status: 'read' },
    ]),
  );
  h.advance(1000);
  ok(
    await h.receipts(main.id, [
      { messageId: 'sms-1', to: '447700900123', drStatuscode: 'accepted', drTime: '2026-11-22 09:00:00.000' },
      {
        messageId: 'sms-1',
        to: '447700900123',
        drStatuscode: 'delivered',
        drTime: '2026-11-22 09:01:00.000',
      },
      { messageId: 'sms-1', to: '447700900124', drStatuscode: 'failed', drErrcode: 3 },
    ]),
  );
  const auth = { authorization: basic(main.key, main.secret) };
  const history = ok(
    await h.inject({ url: '/messages?channel=WHATSAPP&channelUserId=wa-user&size=1', headers: auth }),
  ).json() as { messages: { contactId: string }[]; nextCursor: string };
  const feed = ok(await h.inject({ url: '/receipts?limit=1', headers: auth })).json() as {
    nextCursor: string;
  };
  const deliveries = ok(await h.admin('GET', `/admin/v1/accounts/${main.id}/deliveries?limit=1`)).json() as {
    nextCursor: string;
  };
  const all = ok(await h.admin('GET', `/admin/v1/accounts/${main.id}/deliveries`)).json() as {
    deliveries: { id: string }[];
  };
  const route = async (name: string, kind: string, extra: Record<string, unknown> = {}) =>
    ok(await h.admin('POST', '/admin/v1/routes', { name, kind, ...extra })).json() as { token?: string };
  const kannel = await route('gen-kannel', 'kannel');
  const jasmin = await route('gen-jasmin', 'jasmin');
  await route('gen-smpp', 'smpp', {
    smpp: { host: 'smsc.example.net', port: 2775, systemId: 'w', password: 'p' },
  });
  const contactId = history.messages[0]?.contactId;
  if (
    !contactId ||
    !history.nextCursor ||
    !deliveries.nextCursor ||
    all.deliveries.length < 2 ||
    !kannel.token ||
    !jasmin.token
  ) {
    throw new Error('seeding did not produce the cursors and deliveries the test needs');
  }
  return {
    main,
    contactId,
    deliveryIds: all.deliveries.map((d) => d.id),
    historyCursor: history.nextCursor,
    feedCursor: feed.nextCursor,
    deliveriesCursor: deliveries.nextCursor,
    routes: ['gen-kannel', 'gen-jasmin', 'gen-smpp'],
    tokens: { kannel: kannel.token, jasmin: jasmin.token },
  };
}

const parameterSchema = (operation: Operation, name: string): JsonSchema => {
  const parameter = operation.parameters?.find((p) => p.name === name);
  if (!parameter) throw new Error(`${operation.operationId} has no parameter ${name}`);
  return parameter.schema;
};

/** Generated requests of one operation. */
function requestOf(doc: OpenApiDocument, fx: Fixture, operation: Operation): fc.Arbitrary<Generated> {
  const of = (name: string) => arbitraryOf(doc, parameterSchema(operation, name));
  const pathParameters = (operation.parameters ?? []).filter((p) => p.in === 'path');
  const pathArbitraries: Record<string, fc.Arbitrary<string>> = {};
  for (const p of pathParameters) {
    const fromSchema = of(p.name) as fc.Arbitrary<string>;
    if (p.name === 'id') {
      const known = MUTATING.has(operation.operationId)
        ? fc.constant(FRESH_ACCOUNT)
        : fc.constantFrom(fx.main.id, fx.main.id.toUpperCase());
      pathArbitraries.id = fc.oneof({ weight: 4, arbitrary: known }, { weight: 1, arbitrary: fromSchema });
    } else if (p.name === 'deliveryId') {
      pathArbitraries.deliveryId = fc.oneof(
        { weight: 4, arbitrary: fc.constantFrom(...fx.deliveryIds) },
        { weight: 1, arbitrary: fromSchema },
      );
    } else if (p.name === 'name') {
      // A route name in a path is a route that exists (else 404, allowed): the fixture's, or a fresh one.
      const known = MUTATING_ROUTES.has(operation.operationId)
        ? fc.constant(FRESH_ROUTE)
        : fc.constantFrom(...fx.routes);
      pathArbitraries.name = fc.oneof({ weight: 4, arbitrary: known }, { weight: 1, arbitrary: fromSchema });
    } else {
      pathArbitraries[p.name] = fromSchema;
    }
  }
  const query = queryOf(doc, fx, operation);
  const content = operation.requestBody?.content ?? {};
  const bodySchema = (content['application/json'] ?? content[FORM])?.schema as JsonSchema | undefined;
  let body = bodySchema ? arbitraryOf(doc, bodySchema) : fc.constant(undefined);
  if (operation.operationId === 'ingestMessages') body = body.chain((b) => withItemRules(doc, b));
  if (operation.operationId === 'createRoute' || operation.operationId === 'updateRoute') {
    body = body.map((b) => withRouteRules(fx, operation.operationId, b as Record<string, unknown>));
  }
  const kind = INTAKE[operation.operationId];
  if (kind !== undefined && content[FORM]) {
    body = body.map((b) => withIntakeRules(fx, kind, b as Record<string, unknown>));
  }
  return fc
    .record({ path: fc.record(pathArbitraries), query, body })
    .map(({ path: p, query: q, body: b }) => ({ path: p, query: q, ...(bodySchema ? { body: b } : {}) }));
}

/**
 * What a route body's descriptions state in words: `accounts` names existing accounts (the fixture's, in either
 * case), and `smpp` settings are required for an smpp route and refused for the other kinds — a generated
 * route takes the kind its settings call for.
 */
function withRouteRules(fx: Fixture, operationId: string, body: Record<string, unknown>) {
  const accounts = Array.isArray(body.accounts)
    ? { accounts: body.accounts.map((_a, i) => (i % 2 ? fx.main.id.toUpperCase() : fx.main.id)) }
    : {};
  if (operationId === 'updateRoute') return { ...body, ...accounts };
  const kind = body.smpp === undefined ? (body.kind === 'smpp' ? 'kannel' : body.kind) : 'smpp';
  return { ...body, ...accounts, kind };
}

/**
 * What the adapters' descriptions state in words: the token is the one of a route of the adapter's kind (only
 * the server mints tokens); the recipient is named directly by `account` (an existing account: the fixture's),
 * `messageid` and `to` together (the direct form; the carrier-id form is tested in test/http/intake.test.ts); Kannel's state is its `type` when the
 * `reply` text has no `stat:`; a Jasmin `ESME_…` status is a level-1 answer.
 */
function withIntakeRules(fx: Fixture, kind: 'kannel' | 'jasmin', params: Record<string, unknown>) {
  const ruled: Record<string, unknown> = {
    ...params,
    token: fx.tokens[kind],
    account: params.account === undefined ? fx.main.id : fx.main.id.toUpperCase(),
    messageid: params.messageid ?? 'sms-1',
    to: params.to ?? '447700900123',
  };
  if (kind === 'kannel' && ruled.type === undefined) ruled.type = '1';
  if (kind === 'jasmin') {
    if (ruled.message_status === undefined) ruled.message_status = 'DELIVRD';
    if (String(ruled.message_status).startsWith('ESME_') && ruled.level !== undefined) ruled.level = '1';
  }
  return ruled;
}

/**
 * The rules between fields of a message item that its description states in words: an SMS identity is a phone
 * number, `sms` goes on outbound SMS only, `status` on outbound non-SMS only. Applied to the generated items
 * (with a phone number from the document's own pattern), so that most batches are valid as a whole.
 */
function withItemRules(doc: OpenApiDocument, body: unknown): fc.Arbitrary<unknown> {
  const items = (body as { messages: Record<string, unknown>[] }).messages;
  const phone = arbitraryOf(doc, { type: 'string', pattern: '^[1-9][0-9]{5,14}$' });
  return fc.array(phone, { minLength: items.length, maxLength: items.length }).map((phones) => ({
    messages: items.map((item, i) => {
      const sms = String(item.channel).toUpperCase() === 'SMS';
      const inbound = item.direction === 'inbound';
      const { sms: smsFields, status, ...rest } = item;
      return {
        ...rest,
        ...(sms ? { channelUserId: phones[i] } : {}),
        ...(sms && !inbound && smsFields !== undefined ? { sms: smsFields } : {}),
        ...(!sms && !inbound && status !== undefined ? { status } : {}),
      };
    }),
  }));
}

/** The optional query parameters of an operation, each present or not, from their schemas. */
function optionalQuery(doc: OpenApiDocument, operation: Operation, names: string[]) {
  return fc.record(
    Object.fromEntries(names.map((n) => [n, arbitraryOf(doc, parameterSchema(operation, n))])),
    { requiredKeys: [] },
  );
}

function queryOf(
  doc: OpenApiDocument,
  fx: Fixture,
  operation: Operation,
): fc.Arbitrary<Record<string, unknown>> {
  const of = (name: string) => arbitraryOf(doc, parameterSchema(operation, name));
  switch (operation.operationId) {
    case 'getDlr':
      return fc.record({ messageid: fc.oneof(fc.constant('sms-1'), of('messageid')) });
    case 'listMessages':
    case 'listContactMessagesV1':
      return messagesQuery(doc, fx, operation);
    case 'listReceipts':
      // A cursor is a token the server minted ("nextCursor of the previous page"), not any string.
      return fc.record({ after: fc.constant(fx.feedCursor), limit: of('limit') }, { requiredKeys: [] });
    case 'listDeliveries':
      // The cursor is bound to the state filter it was minted under (none here).
      return fc.oneof(
        optionalQuery(doc, operation, ['state', 'limit']),
        fc.record(
          { cursor: fc.constant(fx.deliveriesCursor), limit: of('limit') },
          { requiredKeys: ['cursor'] },
        ),
      );
    case 'intakeKannel':
    case 'intakeJasmin':
      return optionalQuery(
        doc,
        operation,
        (operation.parameters ?? []).map((p) => p.name),
      ).map((q) => withIntakeRules(fx, INTAKE[operation.operationId] ?? 'kannel', q));
    case 'intakeKannelForm':
    case 'intakeJasminForm':
      // The parameters go in the form; the token, in the query string too, is the same.
      return fc.constant({ token: fx.tokens[INTAKE[operation.operationId] ?? 'kannel'] });
    default: {
      // No rule between its parameters is known: each from its schema, the required ones always.
      const query = (operation.parameters ?? []).filter((p) => p.in === 'query');
      return fc.record(Object.fromEntries(query.map((p) => [p.name, arbitraryOf(doc, p.schema)])), {
        requiredKeys: query.filter((p) => p.required).map((p) => p.name),
      });
    }
  }
}

/**
 * The modes of the contact-message query, as the operation's description names them: messageIds (Mode 1);
 * channel with exactly one of channelUserId or contactId (Mode 2); on /messages also campaignId alone.
 */
function messagesQuery(doc: OpenApiDocument, fx: Fixture, operation: Operation) {
  const of = (name: string) => arbitraryOf(doc, parameterSchema(operation, name));
  const withCampaign = operation.operationId === 'listMessages';
  const campaign = withCampaign ? { campaignId: of('campaignId') } : {};
  const byIds = fc.record({ messageIds: of('messageIds'), ...campaign }, { requiredKeys: ['messageIds'] });
  // An SMS identity is a phone number: the one rule between two parameters that the document states in words.
  const phone = arbitraryOf(doc, { type: 'string', pattern: '^[1-9][0-9]{5,14}$' });
  const byUser = fc
    .record({
      channel: of('channel') as fc.Arbitrary<string>,
      size: fc.option(of('size'), { nil: undefined }),
    })
    .chain(({ channel, size }) =>
      (channel.toUpperCase() === 'SMS' ? phone : of('channelUserId')).map((channelUserId) => ({
        channel,
        channelUserId,
        ...(size === undefined ? {} : { size }),
      })),
    );
  const byContact = fc.record(
    {
      channel: of('channel'),
      contactId: fc.oneof(fc.constant(fx.contactId), of('contactId')),
      size: of('size'),
    },
    { requiredKeys: ['channel', 'contactId'] },
  );
  // The cursor continues the history it was minted for (WhatsApp, that contact, no campaign filter).
  const nextPage = fc.record(
    {
      channel: fc.constantFrom('WHATSAPP', 'whatsapp', 'WhatsApp'),
      channelUserId: fc.constant('wa-user'),
      cursor: fc.constant(fx.historyCursor),
      size: of('size'),
    },
    { requiredKeys: ['channel', 'channelUserId', 'cursor'] },
  );
  const modes = [byIds, byUser, byContact, nextPage] as fc.Arbitrary<Record<string, unknown>>[];
  if (withCampaign) {
    modes.push(
      fc.record(
        { campaignId: of('campaignId'), channel: of('channel'), size: of('size') },
        { requiredKeys: ['campaignId'] },
      ),
    );
  }
  return fc.oneof(...modes);
}

async function send(
  h: Harness,
  fx: Fixture,
  path: string,
  method: string,
  operation: Operation,
  generated: Generated,
): Promise<LightMyRequestResponse> {
  const values = { ...generated.path };
  if (values.id === FRESH_ACCOUNT) values.id = (await h.createAccount()).id;
  if (values.name === FRESH_ROUTE) {
    const smpp = (generated.body as { smpp?: unknown } | undefined)?.smpp !== undefined;
    const name = `fresh-${++freshRoutes}`;
    const created = await h.admin('POST', '/admin/v1/routes', {
      name,
      kind: smpp ? 'smpp' : freshRoutes % 2 ? 'kannel' : 'jasmin',
      ...(smpp ? { smpp: { host: 'smsc.example.net', port: 2775, systemId: 'w', password: 'p' } } : {}),
    });
    if (created.statusCode !== 201) throw new Error(`no fresh route: ${created.body}`);
    values.name = name;
  }
  const url = path.replace(/\{(\w+)\}/g, (_m, name: string) => encodeURIComponent(values[name] ?? ''));
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(generated.query)) {
    if (value !== undefined) query.append(name, String(value));
  }
  const headers: Record<string, string> = {};
  const schemes = new Set((operation.security ?? []).flatMap((s) => Object.keys(s)));
  if (schemes.has('adminToken')) headers.authorization = `Bearer ${ADMIN_TOKEN}`;
  else if (schemes.has('basic')) headers.authorization = basic(fx.main.key, fx.main.secret);
  else if (schemes.has('queryKey')) {
    query.append('key', fx.main.key);
    query.append('secret', fx.main.secret);
  }
  const search = query.toString();
  const form = operation.requestBody?.content[FORM] !== undefined;
  if (form) headers['content-type'] = FORM;
  const payload = form
    ? new URLSearchParams(
        Object.entries(generated.body as Record<string, unknown>)
          .filter(([, v]) => v !== undefined)
          .map(([k, v]): [string, string] => [k, String(v)]),
      ).toString()
    : (generated.body as object);
  return h.inject({
    method: method.toUpperCase() as 'GET',
    url: search ? `${url}?${search}` : url,
    headers,
    ...(generated.body === undefined ? {} : { payload }),
  });
}

function checkAnswer(
  validate: ReturnType<typeof documentValidator>,
  path: string,
  method: string,
  operation: Operation,
  generated: Generated,
  res: LightMyRequestResponse,
): void {
  const where = `${operation.operationId} ${res.statusCode} for ${JSON.stringify(generated).slice(0, 600)}: ${res.body.slice(0, 600)}`;
  const documented = operation.responses[String(res.statusCode)];
  expect(documented, `undocumented status: ${where}`).toBeDefined();
  if (!documented) return;

  const accepted = res.statusCode < 300 || res.statusCode === 404 || res.statusCode === 409;
  if (!accepted) {
    // (The adapters' 400s are text/plain lines: no rule across fields excuses them.)
    const json = /json/.test(String(res.headers['content-type']));
    const problem = res.statusCode === 400 && json ? (res.json() as Problem) : null;
    const allowed = problem !== null && RULES_ACROSS_FIELDS[operation.operationId]?.(problem) === true;
    expect(allowed, `a valid request was refused: ${where}`).toBe(true);
  }

  for (const [name, header] of Object.entries(documented.headers ?? {})) {
    if (header.required) expect(res.headers[name.toLowerCase()], `${name} missing: ${where}`).toBeDefined();
  }
  if (res.statusCode === 204) {
    expect(res.body, where).toBe('');
    return;
  }
  const mediaType =
    String(res.headers['content-type'] ?? '')
      .split(';')[0]
      ?.trim() ?? '';
  const content = documented.content ?? {};
  expect(Object.keys(content), `undocumented media type ${mediaType}: ${where}`).toContain(mediaType);
  const pointer = `/paths/${pointerSegment(path)}/${method}/responses/${res.statusCode}/content/${pointerSegment(mediaType)}/schema`;
  const value = mediaType === 'text/plain' ? res.body : res.json();
  expect(validate(pointer, value), `body does not match the document: ${where}`).toStrictEqual([]);
}
