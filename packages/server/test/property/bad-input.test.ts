import { randomUUID } from 'node:crypto';
import { METHODS } from 'node:http';
import { connect } from 'node:net';
import fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Answer,
  answerComplaints,
  DR_TIME,
  describeExchange,
  RFC3339_MS_Z,
  runsFrom,
  type Secrets,
  tally,
} from '../support/checks.js';
import { engines } from '../support/engines.js';
import { ADMIN_TOKEN, basic, type CreatedAccount, type Harness, startHarness } from '../support/http.js';

/**
 * Generated bad input at every public and operator route (the "Hardening" issue): junk query strings,
 * headers, methods, JSON bodies and raw request heads. Whatever arrives, the service answers with a refusal
 * of the contract's shapes — never a 5xx, a stack trace, SQL, a file path or a credential.
 *
 * Each property runs `WAYBILL_TEST_FUZZ_RUNS` times (default below); `WAYBILL_TEST_FUZZ_SEED` replays a seed;
 * `WAYBILL_TEST_FUZZ_SHRINK=1` shrinks a failing case (off by default: shrinking costs many requests).
 */

const RUNS = runsFrom('WAYBILL_TEST_FUZZ_RUNS', 600);
const RAW_RUNS = runsFrom('WAYBILL_TEST_FUZZ_RUNS', 800);
const SEED = process.env.WAYBILL_TEST_FUZZ_SEED ? Number(process.env.WAYBILL_TEST_FUZZ_SEED) : undefined;
const fcOptions = (numRuns: number) => ({
  numRuns,
  ...(SEED === undefined ? {} : { seed: SEED }),
  endOnFailure: !process.env.WAYBILL_TEST_FUZZ_SHRINK,
});
/** A long run must not trip the per-test timeout. */
const TIMEOUT = 120_000 + RUNS * 400;

const started = Date.now();
/** What the raw heads got: HTTP statuses, or "closed" when the server closed without answering. */
const rawOutcomes = new Map<string, number>();
/** Statuses by route, printed with WAYBILL_TEST_FUZZ_STATS=1 to see how deep the generated requests get. */
const injectOutcomes = new Map<string, number>();
afterAll(() => {
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  const raw = [...rawOutcomes]
    .sort()
    .map(([k, n]) => `${k}×${n}`)
    .join(' ');
  console.log(
    `[bad-input] generated requests tried: ${tally.total()} (${tally.describe()}) in ${seconds} s` +
      (raw === '' ? '' : `; raw-socket outcomes: ${raw}`),
  );
  if (process.env.WAYBILL_TEST_FUZZ_STATS) {
    console.log(
      [...injectOutcomes]
        .sort()
        .map(([k, n]) => `${k} ×${n}`)
        .join('\n'),
    );
  }
});

// ── Routes ──────────────────────────────────────────────────────────────────────────────────────────────

type Kind = 'dlr' | 'query' | 'ops' | 'metrics' | 'admin';
type BodyKind = 'account' | 'patch' | 'messages' | 'receipts' | 'empty' | 'none';

interface RouteSpec {
  template: string;
  /** Methods the route serves (HEAD with GET). */
  serves: readonly string[];
  kind: Kind;
  body: BodyKind;
  /** Which account a real id in the path should be: the query account stays usable, the other absorbs changes. */
  target?: 'query' | 'spare';
}

const GET = ['GET', 'HEAD'] as const;
const ROUTES: readonly RouteSpec[] = [
  { template: '/dlr', serves: GET, kind: 'dlr', body: 'none' },
  { template: '/messages', serves: GET, kind: 'query', body: 'none' },
  { template: '/api/v1/contacts/messages', serves: GET, kind: 'query', body: 'none' },
  { template: '/receipts', serves: GET, kind: 'query', body: 'none' },
  { template: '/healthz', serves: GET, kind: 'ops', body: 'none' },
  { template: '/readyz', serves: GET, kind: 'ops', body: 'none' },
  { template: '/openapi.json', serves: GET, kind: 'ops', body: 'none' },
  { template: '/metrics', serves: GET, kind: 'metrics', body: 'none' },
  { template: '/admin/v1/accounts', serves: ['POST'], kind: 'admin', body: 'account' },
  {
    template: '/admin/v1/accounts/:id',
    serves: ['GET', 'HEAD', 'PATCH'],
    kind: 'admin',
    body: 'patch',
    target: 'spare',
  },
  {
    template: '/admin/v1/accounts/:id/secret',
    serves: ['POST'],
    kind: 'admin',
    body: 'none',
    target: 'spare',
  },
  {
    template: '/admin/v1/accounts/:id/messages',
    serves: ['POST'],
    kind: 'admin',
    body: 'messages',
    target: 'query',
  },
  {
    template: '/admin/v1/accounts/:id/receipts',
    serves: ['POST'],
    kind: 'admin',
    body: 'receipts',
    target: 'query',
  },
  {
    template: '/admin/v1/accounts/:id/callback-secret',
    serves: ['POST'],
    kind: 'admin',
    body: 'none',
    target: 'spare',
  },
  {
    template: '/admin/v1/accounts/:id/deliveries',
    serves: GET,
    kind: 'admin',
    body: 'none',
    target: 'query',
  },
  {
    template: '/admin/v1/accounts/:id/deliveries/:deliveryId',
    serves: GET,
    kind: 'admin',
    body: 'none',
    target: 'query',
  },
  {
    template: '/admin/v1/accounts/:id/deliveries/:deliveryId/redeliver',
    serves: ['POST'],
    kind: 'admin',
    body: 'none',
    target: 'query',
  },
  {
    template: '/admin/v1/accounts/:id/deliveries/redeliver',
    serves: ['POST'],
    kind: 'admin',
    body: 'empty',
    target: 'query',
  },
];

/** Methods light-my-request can send (CONNECT needs a tunnel; the raw-socket property sends it). */
const INJECT_METHODS = METHODS.filter((m) => m !== 'CONNECT');

// ── Junk ────────────────────────────────────────────────────────────────────────────────────────────────

/** Percent-encoding that decoders trip on: truncated, non-hex, overlong, a lone surrogate, NUL, a slash. */
const PCT_JUNK = [
  '%',
  '%%',
  '%z',
  '%zz',
  '%0',
  '%00',
  '%C0%AF',
  '%E0%A4%A',
  '%ED%A0%80',
  '%FF%FE',
  '%2F',
  '%25',
  '%2e%2e',
  '%u0041',
  '+',
  '%2B',
  '&',
  '=',
];

const unicode = fc.string({ unit: 'binary', maxLength: 40 });
const graphemes = fc.string({ unit: 'grapheme', maxLength: 20 });
const printable = fc.string({
  unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
  maxLength: 40,
});
const huge = fc
  .tuple(fc.constantFrom('a', '9', 'é', '%41', '𝄞', ','), fc.integer({ min: 1_000, max: 10_000 }))
  .map(([c, n]) => c.repeat(Math.ceil(n / c.length)));
const junkString = fc.oneof(
  { weight: 8, arbitrary: unicode },
  { weight: 4, arbitrary: graphemes },
  { weight: 6, arbitrary: printable },
  { weight: 1, arbitrary: huge },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      '',
      ' ',
      '\t',
      'null',
      'undefined',
      'NaN',
      'Infinity',
      '-0',
      '1e309',
      '0x1F',
      '[]',
      '{}',
      '__proto__',
      'constructor',
      'prototype',
      'toString',
      'hasOwnProperty',
      "' OR '1'='1",
      '"; DROP TABLE accounts; --',
      '../../etc/passwd',
      '\u0000',
      '\ud800',
      '\udfff\ud800',
      '\u202e',
      '\ufeff',
      'ſms',
      'İ',
      'K',
    ),
  },
);

/** A query value as it goes on the wire: encoded, raw junk percent-encoding, or both mixed. */
const wireValue = (value: fc.Arbitrary<string>) =>
  fc.oneof(
    { weight: 6, arbitrary: value.map((v) => encodeURIComponent(toWellFormed(v))) },
    {
      weight: 2,
      arbitrary: fc
        .tuple(value, fc.constantFrom(...PCT_JUNK))
        .map(([v, j]) => `${encodeURIComponent(toWellFormed(v))}${j}`),
    },
    { weight: 1, arbitrary: fc.constantFrom(...PCT_JUNK) },
  );

/** encodeURIComponent refuses lone surrogates; send their replacement instead (the raw socket sends bytes). */
const toWellFormed = (s: string): string =>
  s.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');

// ── Accounts of a run ───────────────────────────────────────────────────────────────────────────────────

interface World {
  h: Harness;
  /** Queried with real credentials; never changed by the generated operator calls. */
  q: CreatedAccount;
  /** Absorbs PATCH and secret rotation. */
  spare: CreatedAccount;
  /** Ids, cursors and contacts of `q`, so that real ones are among the generated values. */
  pools: Pools;
  /** Every secret, callback secret and key the run has seen: none may appear where it does not belong. */
  secrets: Set<string>;
  keys: Set<string>;
  /** Log lines already checked. */
  logsSeen: number;
}

const PHONE = '447700900123';
/** The v1 sunset far away: a long run moves the clock by weeks and must still reach the v1 endpoint. */
const HARNESS_ENV = { WAYBILL_V1_SUNSET: '2100-01-01T00:00:00Z' };

async function makeWorld(h: Harness): Promise<World> {
  // A callback URL queues deliveries (no relay runs here), so the delivery routes have something to list.
  const q = await h.createAccount({ name: 'fuzz-query', callbackUrl: 'https://example.com/hook' });
  const spare = await h.createAccount({ name: 'fuzz-spare' });
  const messageIds = ['m-1', 'm-2', 'multi', 'wa-1'];
  const ingest = await h.ingest(q.id, [
    { id: 'm-1', channel: 'SMS', channelUserId: PHONE, campaignId: 'c1', text: 'hi' },
    { id: 'm-2', channel: 'SMS', channelUserId: PHONE, sms: { status: '0', network: '23410' } },
    { id: 'multi', channel: 'SMS', channelUserId: PHONE },
    { id: 'multi', channel: 'SMS', channelUserId: '447700900124' },
    { id: 'wa-1', channel: 'WHATSAPP', channelUserId: 'wa-user', content: { a: [1, { b: null }] } },
  ]);
  expect(ingest.statusCode, ingest.body).toBe(200);
  const receipts = await h.receipts(q.id, [
    { messageId: 'm-2', drStatuscode: 'accepted' },
    { messageId: 'm-2', drStatuscode: 'delivered' },
    { messageId: 'multi', to: PHONE, drStatuscode: 'failed', drErrcode: '3' },
  ]);
  expect(receipts.statusCode, receipts.body).toBe(200);
  // Real cursors and ids, for generated requests to replay, alter and misuse.
  const auth = { authorization: basic(q.key, q.secret) };
  const history = await h.inject({
    url: `/messages?channel=SMS&channelUserId=${PHONE}&size=1`,
    headers: auth,
  });
  const one = history.json() as { messages: { contactId: string }[]; nextCursor: string };
  const feed = (await h.inject({ url: '/receipts?limit=1', headers: auth })).json() as { nextCursor: string };
  const deliveries = (await h.admin('GET', `/admin/v1/accounts/${q.id}/deliveries?limit=1`)).json() as {
    deliveries: { id: string }[];
    nextCursor: string;
  };
  const pools: Pools = {
    messageIds,
    cursors: [one.nextCursor, feed.nextCursor, deliveries.nextCursor],
    contactIds: one.messages.map((m) => m.contactId),
    deliveryIds: deliveries.deliveries.map((d) => d.id),
  };
  expect(pools.cursors.every((c) => typeof c === 'string')).toBe(true);
  return {
    h,
    q,
    spare,
    pools,
    secrets: new Set([q.secret, spare.secret, q.callbackSecret, spare.callbackSecret, ADMIN_TOKEN]),
    keys: new Set([q.key, spare.key]),
    logsSeen: h.logs.length,
  };
}

function secretsOf(w: World): Secrets {
  // The Basic blob of real credentials counts as a secret too.
  return { always: [...w.secrets, basic(w.q.key, w.q.secret).slice(6)], inRefusals: [...w.keys] };
}

/** Answers that legitimately show a secret or key: account creation and the two rotations. */
const SHOWS_SECRETS = /^\/admin\/v1\/accounts(\/[^/]+(\/(secret|callback-secret))?)?$/;

/** Remembers secrets an answer hands out, so that later answers are checked against them too. */
function learnSecrets(w: World, path: string, res: LightMyRequestResponse): void {
  if (res.statusCode < 200 || res.statusCode > 299 || !path.startsWith('/admin/v1/accounts')) return;
  let body: Record<string, unknown>;
  try {
    body = res.json();
  } catch {
    return;
  }
  if (typeof body !== 'object' || body === null) return;
  if (typeof body.secret === 'string') w.secrets.add(body.secret);
  if (typeof body.callbackSecret === 'string') w.secrets.add(body.callbackSecret);
  if (typeof body.key === 'string') w.keys.add(body.key);
}

/** The server's error lines not yet checked (its own account of a 5xx), for the failure message. */
function errorLines(w: World): string {
  return w.h.logs
    .slice(w.logsSeen)
    .filter((line) => /"level":50/.test(line))
    .join('')
    .slice(0, 1500);
}

/** New log lines must not hold a key, a secret, the admin token or a Basic credential. */
function logComplaints(w: World): string[] {
  const lines = w.h.logs.slice(w.logsSeen);
  w.logsSeen = w.h.logs.length;
  const text = lines.join('');
  const out: string[] = [];
  for (const s of [...w.secrets, ...w.keys, basic(w.q.key, w.q.secret).slice(6)]) {
    if (s.length >= 6 && text.includes(s))
      out.push(`the log holds a credential (${s.slice(0, 3)}…): ${text.slice(0, 400)}`);
  }
  return out;
}

// ── Generated requests ──────────────────────────────────────────────────────────────────────────────────

type Pair = { name: string; value: string; form: 'pair' | 'name-only' | 'value-only' | 'empty' };

interface Generated {
  route: RouteSpec;
  method: string;
  /** Choice of path parameter values, resolved against the world at run time. */
  idChoice: {
    kind: 'real' | 'other' | 'upper' | 'uuid' | 'junk' | 'long';
    junk: string;
    uuid: string;
    length: number;
  };
  deliveryId: string;
  pairs: Pair[];
  /** Credentials for the query endpoints (Basic or query) and the bearer token for the operator API. */
  auth: { scheme: string; tokenJunk: string; wrongSecret: string };
  queryCreds: 'none' | 'real' | 'wrong' | 'junk';
  extraHeaders: Record<string, string>;
  body: { contentType: string | null; text: string } | null;
  advanceMs: number;
}

/** Names of the query parameters each kind of route reads, plus junk names. */
const PARAM_NAMES: Record<Kind, readonly string[]> = {
  dlr: ['key', 'secret', 'messageid'],
  query: [
    'messageIds',
    'channel',
    'channelUserId',
    'contactId',
    'size',
    'cursor',
    'campaignId',
    'after',
    'limit',
    'key',
    'secret',
  ],
  ops: ['format', 'verbose'],
  metrics: ['name[]', 'format'],
  admin: ['state', 'cursor', 'limit'],
};
const JUNK_NAMES = [
  '__proto__',
  'constructor',
  'prototype',
  'KEY',
  'Secret',
  'messageID',
  'key[]',
  'secret.x',
  's%65cret',
  'k%65y',
  '%6Bey',
  '',
];

const sizeLike = fc.constantFrom(
  '0',
  '1',
  '5',
  '20',
  '100',
  '101',
  '1000',
  '1001',
  '-1',
  '1.5',
  '1e2',
  ' 5',
  '05',
  '0x10',
  'NaN',
  'Infinity',
  '9'.repeat(30),
  '',
  '٣',
);
const uuidLike = fc.oneof(
  fc.uuid(),
  fc.uuid().map((u) => u.toUpperCase()),
  fc.constantFrom('00000000-0000-0000-0000-000000000000', 'not-a-uuid', `{${randomUUID()}}`),
);
const cursorLike = fc.oneof(
  fc.constantFrom(
    '',
    '.',
    'a.',
    '.b',
    'MA.AAAAAAAAAAAAAAAAAAAAAA',
    'MA',
    'eyJ9.xx',
    `MTIz.${'A'.repeat(22)}`,
    `W10.${'A'.repeat(22)}`,
  ),
  fc.base64String({ maxLength: 60 }).map((s) => `${s}.${s.slice(0, 22)}`),
  fc.string({ maxLength: 700 }),
);

/** Real values of the world (ids, cursors, contacts), so that generated requests reach the store. */
interface Pools {
  messageIds: readonly string[];
  cursors: readonly string[];
  contactIds: readonly string[];
  deliveryIds: readonly string[];
}

/** A value for a parameter: usually a plausible or real one, sometimes junk. */
function valueFor(name: string, pools: Pools): fc.Arbitrary<string> {
  return fc.oneof({ weight: 1, arbitrary: junkString }, { weight: 3, arbitrary: goodValueFor(name, pools) });
}

function goodValueFor(name: string, pools: Pools): fc.Arbitrary<string> {
  const { messageIds } = pools;
  switch (name) {
    case 'messageid':
      return fc.constantFrom(...messageIds, 'nope', 'a'.repeat(64), 'a'.repeat(65));
    case 'messageIds':
      return fc
        .array(fc.constantFrom(...messageIds, ...messageIds, ' ', '', 'x', 'a'.repeat(65)), { maxLength: 25 })
        .map((a) => a.join(','));
    case 'channel':
      return fc.oneof(
        fc.constantFrom(
          'SMS',
          'sms',
          'WhatsApp',
          'RBM',
          'viber',
          'TELEGRAM',
          'applemb',
          'EMAIL',
          'ſms',
          'SMS ',
        ),
      );
    case 'channelUserId':
      return fc.constantFrom(PHONE, PHONE, 'wa-user', '0447700900123', '+447700900123', '1'.repeat(16));
    case 'contactId':
      return fc.oneof(uuidLike, fc.constantFrom(...pools.contactIds));
    case 'size':
    case 'limit':
      return sizeLike;
    case 'cursor':
    case 'after':
      return fc.oneof(cursorLike, fc.constantFrom(...pools.cursors));
    case 'campaignId':
      return fc.constantFrom('c1', 'c2', 'a'.repeat(65));
    case 'state':
      return fc.constantFrom('pending', 'delivered', 'dead', 'superseded', 'PENDING', 'failed');
    default:
      return junkString;
  }
}

const pairOf = (name: string, pools: Pools): fc.Arbitrary<Pair> =>
  wireValue(valueFor(name, pools)).map((value): Pair => ({ name, value, form: 'pair' }));

/** The parameters a route needs to get anywhere (one mode of the query, say), from real and plausible values. */
function basePairs(kind: Kind, pools: Pools): fc.Arbitrary<Pair[]> {
  const some = (...names: string[]) =>
    fc
      .tuple(...names.map((n) => fc.option(pairOf(n, pools), { freq: 4 })))
      .map((ps) => ps.filter((p) => p !== null));
  switch (kind) {
    case 'dlr':
      return some('messageid');
    case 'query':
      return fc.oneof(
        some('messageIds', 'campaignId'),
        fc
          .tuple(
            some('channel', 'size', 'cursor', 'campaignId'),
            fc.constantFrom('channelUserId', 'contactId'),
          )
          .chain(([ps, who]) => pairOf(who, pools).map((p) => [...ps, p])),
        some('campaignId', 'channel', 'size', 'cursor'),
        some('after', 'limit'),
      );
    case 'admin':
      return some('state', 'cursor', 'limit');
    default:
      return fc.constant([]);
  }
}

/** Base parameters, then junk ones: unknown names, repeated names, names without values, empty pairs. */
function pairsFor(kind: Kind, pools: Pools): fc.Arbitrary<Pair[]> {
  const names = [...PARAM_NAMES[kind], ...JUNK_NAMES];
  const pair = fc
    .tuple(
      fc.oneof(
        { weight: 5, arbitrary: fc.constantFrom(...names) },
        { weight: 1, arbitrary: printable.filter((s) => !/[&=#]/.test(s)) },
      ),
      fc.constantFrom<Pair['form']>('pair', 'pair', 'pair', 'pair', 'name-only', 'value-only', 'empty'),
    )
    .chain(([name, form]) => wireValue(valueFor(name, pools)).map((value): Pair => ({ name, value, form })));
  // Repeated names come from drawing the same name twice.
  return fc
    .tuple(basePairs(kind, pools), fc.array(pair, { maxLength: 4 }), fc.boolean())
    .map(([base, junk, junkFirst]) => (junkFirst ? [...junk, ...base] : [...base, ...junk]));
}

/** A JSON text: values the generator may not produce through JSON.stringify (1e309, -0 as text, __proto__ keys). */
class Raw {
  constructor(readonly text: string) {}
}
type J = null | boolean | number | string | Raw | J[] | { [k: string]: J };

function serialize(v: J): string {
  if (v instanceof Raw) return v.text;
  if (Array.isArray(v)) return `[${v.map(serialize).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    return `{${Object.entries(v)
      .map(([k, x]) => `${JSON.stringify(k)}:${serialize(x)}`)
      .join(',')}}`;
  }
  const text = JSON.stringify(v);
  return text === undefined ? 'null' : text;
}

const rawNumbers = fc.constantFrom(
  new Raw('1e309'),
  new Raw('-1e309'),
  new Raw('1E400'),
  new Raw('-0'),
  new Raw('0.0000000000000000000000000000000000000001e-400'),
  new Raw('123456789012345678901234567890'),
  new Raw('2147483648'),
  new Raw('9007199254740993'),
  new Raw('1e20'),
  new Raw('4.9e-324'),
);
const junkNumber = fc.oneof(
  fc.constantFrom(0, -1, 1, 1.5, -0.5, 2 ** 31, 2 ** 31 - 1, 2 ** 53, 1e308, -1e308, Number.MIN_VALUE, 1e20),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer(),
  rawNumbers,
);
const junkValue: fc.Arbitrary<J> = fc.letrec<{ v: J }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    { weight: 3, arbitrary: junkString },
    { weight: 3, arbitrary: junkNumber },
    { weight: 2, arbitrary: fc.constantFrom<J>(null, true, false, 'NaN', 'null', '') },
    { weight: 1, arbitrary: fc.array(tie('v'), { maxLength: 4 }) },
    {
      weight: 1,
      arbitrary: fc.dictionary(
        fc.oneof(junkString, fc.constantFrom('__proto__', 'constructor', 'prototype')),
        tie('v'),
        { maxKeys: 3 },
      ),
    },
  ),
})).v;

/** Keeps the entries whose value is not `undefined` (an absent optional field). */
const compact = (o: Record<string, J | undefined>): { [k: string]: J } =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as { [k: string]: J };
const maybe = <T>(arb: fc.Arbitrary<T>, freq = 2) => fc.option(arb, { nil: undefined, freq });

/**
 * A valid object, then perhaps one mutation: a field set to junk, a required field dropped, a stray member
 * (`__proto__` and friends among them). Most generated bodies are valid or one step from it, so they reach the
 * checks behind the schema — and the store.
 */
function mutated(valid: fc.Arbitrary<{ [k: string]: J }>, fields: readonly string[]): fc.Arbitrary<J> {
  const mutation = fc.oneof(
    fc.record({ kind: fc.constant('junk' as const), field: fc.constantFrom(...fields), value: junkValue }),
    fc.record({
      kind: fc.constant('drop' as const),
      field: fc.constantFrom(...fields),
      value: fc.constant(null),
    }),
    fc.record({
      kind: fc.constant('stray' as const),
      field: fc.constantFrom('__proto__', 'constructor', 'prototype', 'extra', 'Id', 'ID', ''),
      value: junkValue,
    }),
  );
  const maybeMutation = fc.oneof(
    { weight: 3, arbitrary: fc.constant(null) },
    { weight: 1, arbitrary: mutation },
  );
  return fc.tuple(valid, maybeMutation).map(([o, m]) => {
    if (m === null) return o;
    const copy: { [k: string]: J } = { ...o };
    if (m.kind === 'drop') delete copy[m.field];
    else
      Object.defineProperty(copy, m.field, {
        value: m.value,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    return copy;
  });
}

const phone = fc.constantFrom(PHONE, '447700900124', '12345678901234', '0447', '+4477', '1'.repeat(16));
const validPhone = fc.constantFrom(PHONE, '447700900124', '12345678901234', '100000');
/** Valid RFC 3339 and spec times, with the edges of the calendar among them. */
const validTime = fc.oneof(
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '2026-11-22T10:00:00Z',
      '2026-11-22T10:00:00.123456789+05:30',
      '2026-11-22t10:00:00z',
      '0000-01-01T00:00:00Z',
      '0001-01-01T00:00:00.000Z',
      '9999-12-31T23:59:59.999Z',
      '9999-12-31T23:59:59.999-23:59',
      '0000-01-01T00:30:00+01:00',
      '2024-02-29T00:00:00Z',
    ),
  },
  {
    weight: 3,
    arbitrary: fc
      .date({
        noInvalidDate: true,
        min: new Date('0001-01-01T00:00:00.000Z'),
        max: new Date('9999-12-31T23:59:59.999Z'),
      })
      .map((d) => d.toISOString()),
  },
);
const timeLike = fc.oneof(
  { weight: 3, arbitrary: validTime },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '2026-11-22 10:00:00.000',
      '0099-01-01 00:00:00.000',
      '2026-02-30T10:00:00Z',
      '2026-11-22T24:00:00Z',
      '+010000-01-01T00:00:00Z',
      '2026-11-22',
      '1795420800',
    ),
  },
);
/** Deeply nested arrays, as text (too deep for JSON.stringify on the way out, fine for the parser). */
const deepNesting = fc
  .integer({ min: 1, max: 20_000 })
  .map((n) => new Raw(`${'['.repeat(n)}${']'.repeat(n)}`));
const contentValue = fc.oneof(
  { weight: 1, arbitrary: fc.constant(null) },
  {
    weight: 4,
    arbitrary: fc.dictionary(fc.oneof(junkString, fc.constantFrom('__proto__', 'constructor')), junkValue, {
      maxKeys: 4,
    }),
  },
  { weight: 1, arbitrary: deepNesting.map((d) => ({ d })) },
);
/** Non-negative prices and positive counts the schema accepts, the large ones among them. */
const validPrice = fc.oneof(
  fc.constantFrom<J>(0, 0.05, 1e-7, 1e308, Number.MIN_VALUE, 2 ** 53, new Raw('0.1e1'), new Raw('4.9e-324')),
  fc.double({ min: 0, max: 1e6, noNaN: true }),
);
const validCounts = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: 1, max: 10 }) },
  { weight: 1, arbitrary: fc.constantFrom<J>(2 ** 31 - 1, 2 ** 31, 2 ** 53, 1e20, new Raw('1.0')) },
);
const messageIdPool = fc.constantFrom('m-1', 'm-2', 'fz-1', 'fz.2', 'fz:3', 'multi', 'wa-1');

const validMessageItem = fc
  .oneof(
    // Outbound SMS
    fc
      .record({
        id: messageIdPool,
        channel: fc.constantFrom('SMS', 'sms', 'Sms'),
        channelUserId: validPhone,
        direction: maybe(fc.constant('outbound')),
        sms: maybe(
          fc
            .record({
              status: maybe(fc.constantFrom('1', '0', '400')),
              network: maybe(fc.constantFrom('23410', '234100')),
              price: maybe(validPrice),
              counts: maybe(validCounts),
            })
            .map(compact),
        ),
      })
      .map(compact),
    // Inbound SMS
    fc.record({
      id: messageIdPool,
      channel: fc.constant('SMS'),
      channelUserId: validPhone,
      direction: fc.constant('inbound'),
    }),
    // Other channels
    fc
      .record({
        id: messageIdPool,
        channel: fc.constantFrom('WHATSAPP', 'viber', 'RBM', 'Telegram', 'APPLEMB'),
        channelUserId: fc.oneof(
          fc.constantFrom('wa-user', 'tg:1', 'ü', '𝄞'.repeat(128)),
          printable.filter((t) => /^\S+$/.test(t)),
        ),
        direction: maybe(fc.constantFrom('outbound', 'inbound')),
        status: maybe(fc.constantFrom('pending', 'sent', 'delivered', 'read', 'failed')),
      })
      .map(compact)
      .map((o) => (o.direction === 'inbound' ? compact({ ...o, status: undefined }) : o)),
  )
  .chain((base) =>
    fc
      .record({
        contactId: maybe(fc.uuid(), 5),
        campaignId: maybe(fc.oneof(fc.constant(null), fc.constantFrom('c1', 'c2', 'a'.repeat(64)))),
        createdAt: maybe(validTime),
        text: maybe(
          fc.oneof(
            fc.constant(null),
            unicode.map((t) => t.replaceAll('\u0000', '')),
            fc.constant('x'.repeat(65_536)),
          ),
        ),
        content: maybe(contentValue),
      })
      .map((extra) => compact({ ...base, ...extra })),
  );
const messageItem = mutated(validMessageItem, [
  'id',
  'channel',
  'channelUserId',
  'contactId',
  'direction',
  'campaignId',
  'createdAt',
  'text',
  'content',
  'status',
  'sms',
]);

const validReceiptItem = fc
  .record({
    messageId: fc.oneof(messageIdPool, fc.constant('never')),
    to: maybe(fc.oneof({ weight: 6, arbitrary: validPhone }, { weight: 1, arbitrary: phone })),
    drStatuscode: fc.constantFrom(
      'delivered',
      'accepted',
      'rejected',
      'failed',
      'expired',
      'deleted',
      'unknown',
    ),
    drErrcode: maybe(fc.constantFrom<J>('0', '1', '99', '12', 0, 5, 11, new Raw('5.0'), new Raw('-0'))),
    drTime: maybe(
      fc.oneof(
        { weight: 4, arbitrary: validTime },
        { weight: 2, arbitrary: fc.constantFrom('2026-11-22 10:00:00.000', '9999-12-31 23:59:59.999') },
        { weight: 1, arbitrary: timeLike },
      ),
    ),
    network: maybe(fc.constantFrom('23410', '234100')),
    price: maybe(validPrice),
    counts: maybe(validCounts),
  })
  .map(compact);
const receiptItem = mutated(validReceiptItem, [
  'messageId',
  'to',
  'drStatuscode',
  'drErrcode',
  'drTime',
  'network',
  'price',
  'counts',
]);

const accountFields = {
  name: fc.oneof(
    fc.constantFrom('Acme', 'a'.repeat(200), 'Zoë & Co'),
    unicode.filter((n) => n !== '' && !/\p{Cc}/u.test(n)),
  ),
  ipWhitelist: fc.array(
    fc.constantFrom(
      '10.0.0.0/8',
      '::1',
      '::ffff:1.2.3.4',
      '0.0.0.0/0',
      '2001:db8::/32',
      '127.0.0.1',
      '10.0.0.1/8',
      '1.2.3.4/33',
      'fe80::1%eth0',
      '',
    ),
    { maxLength: 4 },
  ),
  dlrQueryEnabled: fc.boolean(),
  balance: fc.oneof(validPrice, fc.constantFrom<J>(-1, -1e308)),
  creditLimit: fc.oneof(validPrice, fc.constantFrom<J>(-1, -1e308)),
  callbackUrl: fc.oneof(
    fc.constant(null),
    fc.constantFrom(
      'https://example.com/hook',
      'http://127.0.0.1:9/x',
      'http://[::1]/',
      'http://169.254.169.254/latest/meta-data/',
      'ftp://example.com/',
      'https://user:pass@example.com/',
      'https://example.com/\u0000',
      'javascript:alert(1)',
      `https://example.com/${'a'.repeat(2100)}`,
    ),
    unicode.map((t) => `https://example.com/${t}`),
  ),
  callbackEnabled: fc.boolean(),
};
const accountBody = mutated(
  fc
    .record(
      Object.fromEntries(
        Object.entries(accountFields).map(([k, v]) => [k, maybe(v as fc.Arbitrary<J>)]),
      ) as Record<string, fc.Arbitrary<J | undefined>>,
    )
    .map(compact)
    .chain((o) =>
      o.name === undefined ? accountFields.name.map((name) => ({ ...o, name })) : fc.constant(o),
    ),
  Object.keys(accountFields),
);

/** A batch: a list of items (sometimes too many, sometimes none), or a body of the wrong shape. */
const batchOf = (field: string, item: fc.Arbitrary<J>): fc.Arbitrary<J> =>
  fc.oneof(
    {
      weight: 8,
      arbitrary: fc.array(item, { minLength: 1, maxLength: 3 }).map((items) => ({ [field]: items })),
    },
    {
      weight: 1,
      arbitrary: fc.constantFrom<J>(
        { [field]: [] },
        { [field]: null },
        { [field]: {} },
        { [field]: 'x' },
        {},
        [],
      ),
    },
    {
      weight: 1,
      arbitrary: fc
        .integer({ min: 1001, max: 1500 })
        .map((n) => ({ [field]: Array.from({ length: n }, () => ({})) })),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.array(item, { minLength: 1, maxLength: 2 }), junkValue)
        .map(([items, x]) => ({ [field]: items, extra: x })),
    },
  );

const BODY_OF: Record<BodyKind, fc.Arbitrary<J>> = {
  account: accountBody,
  patch: accountBody,
  messages: batchOf('messages', messageItem),
  receipts: batchOf('receipts', receiptItem),
  empty: fc.constantFrom<J>({}, { x: 1 }, [], null),
  none: fc.constant(null),
};

const rawBodyText = fc.constantFrom(
  '',
  '{',
  '{"a":',
  'null',
  '[]',
  '"x"',
  '1e309',
  'NaN',
  '{"__proto__":{"polluted":1}}',
  '{"constructor":{"prototype":{"polluted":1}}}',
  '{"a":1,"a":2}',
  '\ufeff{}',
  '{"messages":[{"id":"x","channel":"SMS","channelUserId":"447700900123"}]}\u0000',
  'name=Acme',
  '\u0000\u0001\u0002',
);
const contentType = fc.oneof(
  { weight: 20, arbitrary: fc.constant('application/json') },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      'application/json; charset=utf-8',
      'application/json; charset=utf-16',
      'APPLICATION/JSON',
      'application/problem+json',
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/json, text/plain',
      ';',
      '/',
      'application/jsonx',
      'application/json;;;',
    ),
  },
  { weight: 1, arbitrary: printable },
);

function bodyFor(kind: BodyKind): fc.Arbitrary<{ contentType: string | null; text: string }> {
  return fc.oneof(
    {
      weight: 12,
      arbitrary: fc
        .tuple(contentType, BODY_OF[kind])
        .map(([ct, v]) => ({ contentType: ct, text: serialize(v) })),
    },
    {
      weight: 2,
      arbitrary: fc
        .tuple(contentType, fc.jsonValue({ maxDepth: 3 }))
        .map(([ct, v]) => ({ contentType: ct, text: JSON.stringify(v) ?? 'null' })),
    },
    {
      weight: 2,
      arbitrary: fc
        .tuple(fc.option(contentType), rawBodyText)
        .map(([ct, t]) => ({ contentType: ct, text: t })),
    },
  );
}

const headerValue = fc.oneof(
  printable,
  fc.string({ unit: fc.integer({ min: 0x20, max: 0xff }).map((c) => String.fromCharCode(c)), maxLength: 30 }),
);

/** How each kind of route is mostly called: with the credentials it wants, so most requests get past them. */
const SCHEMES: Record<Kind, readonly string[]> = {
  admin: ['bearer-real', 'bearer-real', 'bearer-real', 'bearer-real', 'bearer-real', 'bearer-real'],
  metrics: ['bearer-real', 'bearer-real', 'bearer-real'],
  query: ['basic-real', 'basic-real', 'basic-real', 'basic-real', 'none', 'none'],
  dlr: ['none'],
  ops: ['none'],
};
const OTHER_SCHEMES = [
  'none',
  'basic-real',
  'basic-wrong',
  'basic-garbage',
  'basic-bytes',
  'basic-empty',
  'bearer-real',
  'bearer-lower',
  'bearer-padded',
  'bearer-junk',
  'bearer-prefix',
  'junk',
];

/** Routes with bodies are drawn more often: their inputs are the richest. */
const routeWeight = (r: RouteSpec) =>
  r.body === 'messages' || r.body === 'receipts' ? 5 : r.body === 'none' ? 1 : 2;

const generated = (pools: Pools): fc.Arbitrary<Generated> =>
  fc.oneof(...ROUTES.map((r) => ({ weight: routeWeight(r), arbitrary: fc.constant(r) }))).chain((route) =>
    fc.record({
      route: fc.constant(route),
      method: fc.oneof(
        { weight: 6, arbitrary: fc.constantFrom(...route.serves) },
        { weight: 1, arbitrary: fc.constantFrom(...INJECT_METHODS) },
      ),
      idChoice: fc.record({
        kind: fc.constantFrom('real', 'real', 'real', 'real', 'other', 'upper', 'uuid', 'junk', 'long'),
        junk: fc.oneof(
          junkString.filter((s) => s !== '' && !s.startsWith('/')),
          fc.constantFrom(...PCT_JUNK),
        ),
        uuid: fc.uuid(),
        length: fc.integer({ min: 150, max: 260 }),
      }),
      deliveryId: fc.oneof(
        fc.constantFrom(...pools.deliveryIds),
        fc.stringMatching(/^evt_[0-9A-HJKMNP-TV-Z]{26}$/),
        fc.constantFrom('redeliver', 'evt_', '%00', 'a%00b', '%ED%A0%80', '..', 'x'.repeat(201)),
        junkString.filter((s) => s !== ''),
      ),
      pairs: pairsFor(route.kind, pools),
      auth: fc.record({
        scheme: fc.oneof(
          { weight: 3, arbitrary: fc.constantFrom(...SCHEMES[route.kind]) },
          { weight: 1, arbitrary: fc.constantFrom(...OTHER_SCHEMES) },
        ),
        tokenJunk: headerValue,
        wrongSecret: fc.stringMatching(/^[A-Za-z0-9]{8}$/),
      }),
      queryCreds: fc.constantFrom('none', 'real', 'real', 'real', 'real', 'real', 'wrong', 'junk'),
      extraHeaders: fc.record(
        {
          'x-request-id': fc.oneof(
            fc.constantFrom('abc', 'a'.repeat(128), 'a'.repeat(129), 'bad id', '../x'),
            headerValue,
          ),
          'x-forwarded-for': fc.constantFrom('1.2.3.4', 'junk', '::1, 10.0.0.1', '999.999.999.999'),
          accept: fc.constantFrom('*/*', 'text/html', 'application/xml', 'junk/'),
        },
        { requiredKeys: [] },
      ),
      body: fc.option(bodyFor(route.body), { freq: route.body === 'none' ? 2 : 8 }),
      advanceMs: fc.integer({ min: 1_000, max: 20 * 60_000 }),
    }),
  );

/** Builds the request of a generated case against the world's accounts. */
function build(w: World, g: Generated) {
  const target = g.route.target === 'spare' ? w.spare : w.q;
  const id = (() => {
    switch (g.idChoice.kind) {
      case 'real':
        return target.id;
      case 'other':
        // Never the query account through a route that changes its target: its credentials must keep working.
        return target === w.q ? w.spare.id : g.idChoice.uuid;
      case 'upper':
        return target.id.toUpperCase();
      case 'uuid':
        return g.idChoice.uuid;
      case 'junk':
        return PCT_JUNK.includes(g.idChoice.junk)
          ? g.idChoice.junk
          : encodeURIComponent(toWellFormed(g.idChoice.junk));
      case 'long':
        return 'a'.repeat(g.idChoice.length);
    }
  })();
  const deliveryId = /^%|%00|%ED/.test(g.deliveryId)
    ? g.deliveryId
    : encodeURIComponent(toWellFormed(g.deliveryId));
  const path = g.route.template.replace(':id', id).replace(':deliveryId', deliveryId);

  const written: Record<Pair['form'], (p: Pair) => string> = {
    pair: (p) => `${p.name}=${p.value}`,
    'name-only': (p) => p.name,
    'value-only': (p) => `=${p.value}`,
    empty: () => '',
  };
  const pairs = g.pairs.map((p) => written[p.form](p));
  if (g.route.kind === 'dlr' || g.route.kind === 'query') {
    if (g.queryCreds === 'real') pairs.unshift(`key=${w.q.key}`, `secret=${w.q.secret}`);
    if (g.queryCreds === 'wrong') pairs.unshift(`key=${w.q.key}`, `secret=${g.auth.wrongSecret}`);
    if (g.queryCreds === 'junk') pairs.unshift(`key=${encodeURIComponent(toWellFormed(g.auth.tokenJunk))}`);
  }
  const url = pairs.length > 0 ? `${path}?${pairs.join('&')}` : path;

  const headers: Record<string, string> = { ...g.extraHeaders };
  const a = g.auth;
  const authorization: Record<string, string | null> = {
    none: null,
    'basic-real': basic(w.q.key, w.q.secret),
    'basic-wrong': basic(w.q.key, a.wrongSecret),
    'basic-garbage': `Basic ${a.tokenJunk}`,
    'basic-bytes': `Basic ${Buffer.from(a.tokenJunk, 'latin1').toString('base64')}`,
    'basic-empty': 'Basic',
    'bearer-real': `Bearer ${ADMIN_TOKEN}`,
    'bearer-lower': `bearer ${ADMIN_TOKEN}`,
    'bearer-padded': `Bearer   ${ADMIN_TOKEN}  `,
    'bearer-junk': `Bearer ${a.tokenJunk}`,
    'bearer-prefix': `Bearer ${ADMIN_TOKEN.slice(0, -1)}`,
    junk: a.tokenJunk,
  };
  const auth = authorization[a.scheme] ?? null;
  if (auth !== null) headers.authorization = auth;
  if (g.body?.contentType) headers['content-type'] = g.body.contentType;
  return { method: g.method, url, path, headers, payload: g.body ? g.body.text : undefined };
}

/** After an accepted ingest into the query account: what it stored reads back in the contract's formats. */
async function storedFormatComplaints(w: World, body: string): Promise<string[]> {
  const ids = new Set<string>();
  try {
    const parsed = JSON.parse(body) as {
      messages?: { id?: unknown }[];
      receipts?: { messageId?: unknown }[];
    };
    for (const m of parsed.messages ?? []) if (typeof m?.id === 'string') ids.add(m.id);
    for (const r of parsed.receipts ?? []) if (typeof r?.messageId === 'string') ids.add(r.messageId);
  } catch {
    return [];
  }
  const out: string[] = [];
  const valid = [...ids].filter((id) => /^[A-Za-z0-9._:-]{1,64}$/.test(id)).slice(0, 5);
  if (valid.length === 0) return out;
  const auth = { authorization: basic(w.q.key, w.q.secret) };
  const list = await w.h.inject({ url: `/messages?messageIds=${valid.join(',')}`, headers: auth });
  tally.add('read-back');
  if (list.statusCode !== 200)
    return [`reading back ${valid.join(',')}: HTTP ${list.statusCode} ${list.body.slice(0, 300)}`];
  for (const m of (list.json() as { messages: { createdAt: string }[] }).messages) {
    if (!RFC3339_MS_Z.test(m.createdAt)) out.push(`a stored record reads back with createdAt ${m.createdAt}`);
  }
  for (const id of valid) {
    const dlr = await w.h.inject({ url: `/dlr?key=${w.q.key}&secret=${w.q.secret}&messageid=${id}` });
    tally.add('read-back');
    if (dlr.statusCode !== 200) {
      out.push(`/dlr of ${id}: HTTP ${dlr.statusCode} ${dlr.body.slice(0, 300)}`);
      continue;
    }
    for (const item of dlr.json() as { drTime?: string; price: unknown; counts: unknown }[]) {
      if (item.drTime !== undefined && !DR_TIME.test(item.drTime))
        out.push(`a receipt reads back with drTime ${item.drTime}`);
      if (typeof item.price !== 'number' || !Number.isFinite(item.price))
        out.push(`price reads back as ${String(item.price)}`);
      if (!Number.isSafeInteger(item.counts)) out.push(`counts reads back as ${String(item.counts)}`);
    }
  }
  return out;
}

// ── Properties over app.inject ──────────────────────────────────────────────────────────────────────────

describe.each(engines())('$name: generated bad input', (engine) => {
  let w: World;
  beforeAll(async () => {
    w = await makeWorld(await startHarness(engine, HARNESS_ENV));
  });
  afterAll(async () => {
    await w?.h.close();
  });

  it(
    'answers every generated request at every route with a well-formed refusal or success, and leaks nothing',
    async () => {
      await fc.assert(
        fc.asyncProperty(generated(w.pools), async (g) => {
          w.h.advance(g.advanceMs);
          const req = build(w, g);
          const res = await w.h.inject({
            method: req.method as 'GET',
            url: req.url,
            headers: req.headers,
            ...(req.payload === undefined ? {} : { payload: req.payload }),
          });
          tally.add(engine.name);
          const key = `${g.route.template} ${req.method} ${res.statusCode} ${/"code":"?([a-z_0-9]+)/.exec(res.body)?.[1] ?? ''}`;
          injectOutcomes.set(key, (injectOutcomes.get(key) ?? 0) + 1);
          const answer: Answer = {
            method: req.method,
            path: req.path,
            status: res.statusCode,
            headers: res.headers,
            body: res.body,
          };
          const mayShowSecrets =
            SHOWS_SECRETS.test(req.path) && res.statusCode >= 200 && res.statusCode < 300;
          const secrets = mayShowSecrets ? { always: [ADMIN_TOKEN], inRefusals: [] } : secretsOf(w);
          const complaints = answerComplaints(answer, secrets);
          if (res.headers['cache-control'] !== 'no-store')
            complaints.push(`Cache-Control is ${String(res.headers['cache-control'])}`);
          learnSecrets(w, req.path, res);
          const serverErrors = res.statusCode >= 500 ? errorLines(w) : '';
          complaints.push(...logComplaints(w));
          if (
            res.statusCode === 200 &&
            req.method === 'POST' &&
            (g.route.body === 'messages' || g.route.body === 'receipts') &&
            req.path.includes(w.q.id)
          ) {
            complaints.push(...(await storedFormatComplaints(w, req.payload ?? '')));
          }
          if (complaints.length > 0) {
            expect.fail(
              `${describeExchange(req, res, complaints)}${serverErrors === '' ? '' : `\nserver log: ${serverErrors}`}`,
            );
          }
        }),
        fcOptions(RUNS),
      );
    },
    TIMEOUT,
  );

  it(
    'refuses generated junk credentials on the query endpoints the same way as wrong ones, whatever else is sent',
    async () => {
      // Junk credentials from every position: always 401, never a hint. The clock moves 16 minutes per run,
      // so wrong secrets never add up to a lockout here.
      const routes = ROUTES.filter((r) => r.kind === 'query');
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...routes),
          fc.constantFrom(
            'basic-garbage',
            'basic-bytes',
            'basic-empty',
            'basic-wrong',
            'junk',
            'query-junk',
            'bearer-real',
          ),
          headerValue,
          fc.stringMatching(/^[A-Za-z0-9]{8}$/),
          async (route, scheme, junk, wrongSecret) => {
            w.h.advance(16 * 60_000);
            const headers: Record<string, string> = {};
            let url = `${route.template}?messageIds=m-1`;
            if (scheme === 'basic-garbage') headers.authorization = `Basic ${junk}`;
            if (scheme === 'basic-bytes')
              headers.authorization = `Basic ${Buffer.from(junk, 'latin1').toString('base64')}`;
            if (scheme === 'basic-empty') headers.authorization = 'Basic ';
            if (scheme === 'basic-wrong') headers.authorization = basic(w.q.key, wrongSecret);
            if (scheme === 'junk') headers.authorization = junk;
            if (scheme === 'bearer-real') headers.authorization = `Bearer ${ADMIN_TOKEN}`;
            if (scheme === 'query-junk')
              url += `&key=${encodeURIComponent(junk)}&secret=${encodeURIComponent(junk)}`;
            const res = await w.h.inject({ url, headers });
            tally.add(engine.name);
            const complaints = answerComplaints(
              {
                method: 'GET',
                path: route.template,
                status: res.statusCode,
                headers: res.headers,
                body: res.body,
              },
              secretsOf(w),
            );
            if (res.statusCode !== 401) complaints.push(`expected 401, got ${res.statusCode}`);
            else if (res.json().code !== 'unauthorized') complaints.push(`code ${res.json().code}`);
            if (complaints.length > 0) expect.fail(describeExchange({ url, headers }, res, complaints));
          },
        ),
        fcOptions(Math.ceil(RUNS / 3)),
      );
    },
    TIMEOUT,
  );

  it('reads every receipt event of the fuzzed account back in the contract formats', async () => {
    let after = '';
    for (let page = 0; page < 1_000; page++) {
      const res = await w.h.inject({
        url: `/receipts?limit=1000${after}`,
        headers: { authorization: basic(w.q.key, w.q.secret) },
      });
      tally.add(engine.name);
      expect(res.statusCode, res.body).toBe(200);
      const body = res.json() as {
        receipts: { recordedAt: string; receipt: { drTime?: string } }[];
        nextCursor: string;
        hasMore: boolean;
      };
      for (const e of body.receipts) {
        expect(e.recordedAt).toMatch(RFC3339_MS_Z);
        if (e.receipt.drTime !== undefined) expect(e.receipt.drTime).toMatch(DR_TIME);
      }
      if (!body.hasMore) break;
      after = `&after=${body.nextCursor}`;
    }
  });
});

// ── Known server bugs the generator found, pinned as plain cases ───────────────────────────────────────

describe.each(engines())(
  '$name: bad input the generator found (server bugs, reported to the lead)',
  (engine) => {
    let w: World;
    beforeAll(async () => {
      w = await makeWorld(await startHarness(engine, HARNESS_ENV));
    });
    afterAll(async () => {
      await w?.h.close();
    });

    /**
     * A value the schema lets through must be refused with a 400 item error, or stored and read back as sent
     * (in the contract's formats) — never a 500, never stored as something else.
     */
    const expectRefusedOrKept = async (
      res: LightMyRequestResponse,
      path: string,
      request: unknown,
      readBack: () => Promise<string[]>,
    ) => {
      tally.add(engine.name);
      const complaints = answerComplaints(
        { method: 'POST', path, status: res.statusCode, headers: res.headers, body: res.body },
        secretsOf(w),
      );
      if (res.statusCode >= 200 && res.statusCode < 300) complaints.push(...(await readBack()));
      else if (res.statusCode !== 400)
        complaints.push(`expected 400 invalid_request or a 2xx, got ${res.statusCode}`);
      if (complaints.length > 0) expect.fail(describeExchange(request, res, complaints));
    };
    const auth = () => ({ authorization: basic(w.q.key, w.q.secret) });
    const dlrOf = async (id: string) => {
      tally.add(engine.name);
      const res = await w.h.inject({ url: `/dlr?key=${w.q.key}&secret=${w.q.secret}&messageid=${id}` });
      expect(res.statusCode, res.body).toBe(200);
      return res.json() as Record<string, unknown>[];
    };
    const recordOf = async (id: string) => {
      tally.add(engine.name);
      const res = await w.h.inject({ url: `/messages?messageIds=${id}`, headers: auth() });
      expect(res.statusCode, res.body).toBe(200);
      return (res.json() as { messages: Record<string, unknown>[] }).messages[0] ?? {};
    };
    const messagesPath = () => `/admin/v1/accounts/${w.q.id}/messages`;
    let serial = 0;

    // Regression (was a server bug): `counts` beyond what the store's integer column holds is a 500 — SQLite from 2^63 (1e20),
    // PostgreSQL from 2^31 (an int4 column). It must be refused with a 400 item error (or stored whole).
    it.each([1e20, 2 ** 31, 2 ** 53])('refuses sms.counts = %s with a 400, or keeps it', async (counts) => {
      const id = `bug-counts-${++serial}`;
      const items = [{ id, channel: 'SMS', channelUserId: PHONE, sms: { counts } }];
      await expectRefusedOrKept(await w.h.ingest(w.q.id, items), messagesPath(), items, async () => {
        const [item] = await dlrOf(id);
        return item?.counts === counts ? [] : [`counts reads back as ${String(item?.counts)}`];
      });
    });

    // Regression (was a server bug): the same for a receipt's `counts`.
    it.each([1e20, 2 ** 31])('refuses a receipt with counts = %s with a 400, or keeps it', async (counts) => {
      const id = `bug-rcounts-${++serial}`;
      expect((await w.h.ingest(w.q.id, [{ id, channel: 'SMS', channelUserId: PHONE }])).statusCode).toBe(200);
      const items = [{ messageId: id, drStatuscode: 'delivered', counts }];
      const path = `/admin/v1/accounts/${w.q.id}/receipts`;
      await expectRefusedOrKept(await w.h.receipts(w.q.id, items), path, items, async () => {
        const [item] = await dlrOf(id);
        return item?.counts === counts ? [] : [`counts reads back as ${String(item?.counts)}`];
      });
    });

    // Regression (was a server bug): `content` nested about 5000 levels deep is a 500 on both engines (4000 pass): the store's
    // JSON.stringify overflows the stack (sqlite/rows.ts messageParams). A depth limit would make it a 400.
    it('refuses message content nested 5000 levels deep with a 400, or keeps it', async () => {
      const depth = 5_000;
      const nested = `${'['.repeat(depth)}${']'.repeat(depth)}`;
      const payload = `{"messages":[{"id":"bug-deep","channel":"WHATSAPP","channelUserId":"wa-user","content":{"d":${nested}}}]}`;
      const res = await w.h.inject({
        method: 'POST',
        url: messagesPath(),
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        payload,
      });
      await expectRefusedOrKept(res, messagesPath(), `content {"d": ${depth} nested arrays}`, async () => {
        tally.add(engine.name);
        const read = await w.h.inject({ url: '/messages?messageIds=bug-deep', headers: auth() });
        return read.statusCode === 200 && read.body.includes(`"content":{"d":${nested}}`)
          ? []
          : [`the content reads back as HTTP ${read.statusCode} ${read.body.slice(0, 200)}`];
      });
    });

    // Regression (was a server bug): timestamps whose UTC instant falls outside years 0000–9999 are accepted. SQLite then answers
    // createdAt "+010000-01-01T00:59:59.999Z" / "-000001-12-31T23:30:00.000Z" and drTime
    // "+010000-01-01 23:58:59." (not the contract's formats); PostgreSQL answers 500 (and 500 for year 0000,
    // which it cannot store). Refuse them with a 400 item error, or store and answer them in the formats.
    it.each(['9999-12-31T23:59:59.999-23:59', '0000-01-01T00:00:00Z', '0000-01-01T00:30:00+01:00'])(
      'refuses createdAt %s with a 400, or keeps it',
      async (createdAt) => {
        const id = `bug-year-${++serial}`;
        const items = [{ id, channel: 'SMS', channelUserId: PHONE, createdAt }];
        await expectRefusedOrKept(await w.h.ingest(w.q.id, items), messagesPath(), items, async () => {
          const record = await recordOf(id);
          const wanted = new Date(createdAt).toISOString();
          return record.createdAt === wanted && RFC3339_MS_Z.test(wanted)
            ? []
            : [`createdAt ${createdAt} reads back as ${String(record.createdAt)}`];
        });
      },
    );

    it('refuses a receipt drTime whose UTC year is 10000 with a 400, or keeps it', async () => {
      const id = `bug-drtime-${++serial}`;
      expect((await w.h.ingest(w.q.id, [{ id, channel: 'SMS', channelUserId: PHONE }])).statusCode).toBe(200);
      const items = [{ messageId: id, drStatuscode: 'delivered', drTime: '9999-12-31T23:59:59.999-23:59' }];
      const path = `/admin/v1/accounts/${w.q.id}/receipts`;
      await expectRefusedOrKept(await w.h.receipts(w.q.id, items), path, items, async () => {
        const [item] = await dlrOf(id);
        return typeof item?.drTime === 'string' && DR_TIME.test(item.drTime)
          ? []
          : [`drTime reads back as ${String(item?.drTime)}`];
      });
    });

    // Regression (was a server bug): a callbackUrl holding U+0000 passes the URL check; PostgreSQL then fails the insert (500),
    // SQLite stores it. A 400 on both engines would keep them alike.
    it('refuses a callbackUrl with a NUL character with a 400, or keeps it', async () => {
      const body = { name: 'x', callbackUrl: 'https://example.com/\u0000' };
      const res = await w.h.admin('POST', '/admin/v1/accounts', body);
      await expectRefusedOrKept(res, '/admin/v1/accounts', body, async () =>
        (res.json() as { callbackUrl?: unknown }).callbackUrl === body.callbackUrl
          ? []
          : ['the callbackUrl reads back changed'],
      );
      // Only now: the 201 shows the new account's secrets, as it should.
      learnSecrets(w, '/admin/v1/accounts', res);
    });

    // Regression (was a server bug, PostgreSQL): a delivery id holding U+0000 reaches the query and fails there (500); it must be
    // a 404 like any other unknown delivery.
    it.each(['GET', 'POST'] as const)('answers 404 to %s of a delivery id with %00 in it', async (method) => {
      const url = `/admin/v1/accounts/${w.q.id}/deliveries/evt%00x${method === 'POST' ? '/redeliver' : ''}`;
      const res = await w.h.inject({ method, url, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
      tally.add(engine.name);
      expect(res.statusCode, res.body).toBe(404);
      expect(res.json()).toMatchObject({ code: 'not_found', status: 404 });
    });

    // Regression (was a server bug): CONTRACT §2 ("any other method gets 405 with Allow: GET, HEAD") and §11 ("a wrong method →
    // 405 with Allow"): methods outside GET HEAD POST PUT PATCH DELETE OPTIONS (TRACE, PROPFIND, SEARCH…) get a
    // 404, and so does every wrong method on /healthz, /readyz and /openapi.json (no 405 route is registered).
    it.each([
      ['TRACE', '/dlr'],
      ['QUERY', '/dlr'],
      ['PROPFIND', '/messages'],
      ['SEARCH', '/receipts'],
      ['POST', '/healthz'],
      ['DELETE', '/readyz'],
      ['PUT', '/openapi.json'],
    ])('answers %s %s with 405 and Allow', async (method, url) => {
      const res = await w.h.inject({ method: method as 'GET', url });
      tally.add(engine.name);
      expect(res.statusCode, res.body).toBe(405);
      expect(res.headers.allow).toBe('GET, HEAD');
      expect(res.json()).toMatchObject({ code: 'method_not_allowed', status: 405 });
    });
  },
);

// ── Raw request heads through a real socket ─────────────────────────────────────────────────────────────

interface RawResult {
  answer: Buffer;
  timedOut: boolean;
}

/** Writes `bytes`, half-closes, and collects the answer until the server closes or the deadline passes. */
function exchange(port: number, bytes: Buffer, deadlineMs: number): Promise<RawResult> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const socket = connect(port, '127.0.0.1');
    let done = false;
    const finish = (timedOut: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ answer: Buffer.concat(chunks), timedOut });
    };
    const timer = setTimeout(() => finish(true), deadlineMs);
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', () => finish(false));
    socket.on('close', () => finish(false));
    socket.on('connect', () => {
      socket.end(bytes);
    });
  });
}

/**
 * The first final response of an answer: status, lower-cased headers and body. Interim 1xx responses (Node's
 * automatic `100 Continue` to `Expect: 100-continue`) are skipped: they carry no body and no headers of ours.
 */
function firstResponse(whole: Buffer, head: boolean) {
  let answer = whole;
  while (/^HTTP\/1\.[01] 1\d\d /.test(answer.subarray(0, 16).toString('latin1'))) {
    const end = answer.indexOf('\r\n\r\n');
    if (end < 0) break;
    answer = answer.subarray(end + 4);
  }
  const text = answer.toString('latin1');
  const end = text.indexOf('\r\n\r\n');
  const headText = end < 0 ? text : text.slice(0, end);
  const [statusLine = '', ...lines] = headText.split('\r\n');
  const m = /^HTTP\/1\.[01] (\d{3}) /.exec(statusLine);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = Number(headers['content-length'] ?? 0);
  const rest = end < 0 ? '' : answer.subarray(Buffer.byteLength(text.slice(0, end + 4), 'latin1'));
  const body = head
    ? ''
    : Buffer.from(rest)
        .subarray(0, Number.isFinite(length) ? length : 0)
        .toString('utf8');
  return { status: m ? Number(m[1]) : null, statusLine, headers, body };
}

/**
 * The admin token goes only where a credential goes: an answer may echo another header (a 415 names the
 * Content-Type it refused), and that is no leak.
 */
const onlyInAuthorization = (name: string, value: string) =>
  name.trim().toLowerCase() === 'authorization' ? value : value.replaceAll(ADMIN_TOKEN, 'not-the-token');

/** Mostly the well-formed choice, sometimes one of the broken ones: most heads then get past the parser. */
const mostly = <T>(good: T, ...bad: T[]) =>
  fc.oneof({ weight: 8, arbitrary: fc.constant(good) }, { weight: 1, arbitrary: fc.constantFrom(...bad) });
const rawBytes = (max: number) =>
  fc.uint8Array({ maxLength: max }).map((a) => Buffer.from(a).toString('latin1'));
const rawMethod = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.constantFrom(
      'GET',
      'GET',
      'GET',
      'HEAD',
      'POST',
      'POST',
      'PUT',
      'DELETE',
      'PATCH',
      'OPTIONS',
    ),
  },
  { weight: 2, arbitrary: fc.constantFrom('TRACE', 'CONNECT', 'PROPFIND', 'get', 'G ET', 'GET\u0000', '') },
  { weight: 1, arbitrary: printable.filter((s) => !/\s/.test(s)) },
);
const rawQuery = fc.oneof(
  fc
    .array(
      fc.tuple(
        fc.constantFrom('key', 'secret', 'messageid', 'messageIds', 'channel', 'size', 'cursor', 'x'),
        fc.oneof(printable, rawBytes(20)),
      ),
      { maxLength: 4 },
    )
    .map((pairs) => pairs.map(([k, v]) => `${k}=${v}`).join('&')),
  rawBytes(60),
);
const rawTarget = fc.oneof(
  {
    weight: 6,
    arbitrary: fc
      .tuple(
        fc.constantFrom(
          ...ROUTES.map((r) => r.template.replace(':id', randomUUID()).replace(':deliveryId', 'evt_x')),
        ),
        fc.option(rawQuery, { freq: 2 }),
      )
      .map(([p, q]) => (q === null ? p : `${p}?${q}`)),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '*',
      'http://example.com/dlr',
      '/dlr?key=a b',
      '/../../etc/passwd',
      '',
      '/%',
      '/dlr#frag',
      '//healthz',
      '/dlr%zz',
      '/\u00e9',
    ),
  },
  { weight: 1, arbitrary: fc.integer({ min: 8_000, max: 20_000 }).map((n) => `/dlr?x=${'a'.repeat(n)}`) },
  { weight: 1, arbitrary: rawBytes(40) },
);
const rawHeader = fc.tuple(
  fc.oneof(
    {
      weight: 6,
      arbitrary: fc.constantFrom(
        'Content-Length',
        'Transfer-Encoding',
        'Authorization',
        'Content-Type',
        'X-Request-Id',
        'Connection',
        'Host',
        'X-Forwarded-For',
        'Expect',
      ),
    },
    { weight: 1, arbitrary: fc.constantFrom('', 'Bad Header', 'X\u0000', ' Host', 'Content-Length ') },
    { weight: 1, arbitrary: printable },
  ),
  mostly(': ', ':', ' : ', '', ':\t'),
  fc.oneof(
    {
      weight: 6,
      arbitrary: fc.constantFrom(
        'x',
        '0',
        '-1',
        '5',
        '+5',
        'abc',
        '99999999999999999999',
        'chunked',
        'gzip, chunked',
        'chunked, chunked',
        'close',
        'keep-alive',
        '100-continue',
        `Bearer ${ADMIN_TOKEN}`,
        `Bearer ${'x'.repeat(20)}`,
        'Basic !!!',
        'Basic ',
        'application/json',
        'text/plain; charset=utf-8',
        '1.2.3.4, 5.6.7.8',
        'ab c',
        '\u00ff\u00fe',
      ),
    },
    { weight: 2, arbitrary: rawBytes(30) },
    { weight: 1, arbitrary: fc.integer({ min: 16_000, max: 20_000 }).map((n) => 'h'.repeat(n)) },
  ),
);
const structuredHead = fc
  .record({
    method: rawMethod,
    sp1: mostly(' ', '  ', '\t', ''),
    target: rawTarget,
    sp2: mostly(' ', '  ', ''),
    version: mostly('HTTP/1.1', 'HTTP/1.0', 'HTTP/1.2', 'HTTP/2', 'HTTP/1.1 ', 'http/1.1', 'HTTPS/1.1', ''),
    eol: mostly('\r\n', '\n', '\r'),
    host: fc.oneof({ weight: 7, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
    headers: fc.array(rawHeader, { maxLength: 4 }),
    body: fc.option(rawBytes(80), { freq: 3 }),
  })
  .map((r) => {
    const lines = [`${r.method}${r.sp1}${r.target}${r.sp2}${r.version}`];
    if (r.host) lines.push('Host: localhost');
    for (const [name, sep, value] of r.headers)
      lines.push(`${name}${sep}${onlyInAuthorization(name, value)}`);
    return {
      kind: 'structured' as const,
      method: r.method,
      // With no space before the version, the parser reads the version as the end of the target (seen: a
      // POST to "/dlrHTTP/1.1", which is not /dlr and may answer a problem).
      target: r.sp2 === '' ? `${r.target}${r.version}` : r.target,
      bytes: `${lines.join(r.eol)}${r.eol}${r.eol}${r.body ?? ''}`,
    };
  });
/** A head any parser accepts, with junk only where HTTP allows it: in the query, header values and the body. */
const wellFormedHead = fc
  .record({
    method: fc.constantFrom('GET', 'GET', 'HEAD', 'POST', 'PATCH', 'PUT', 'DELETE', 'OPTIONS'),
    target: fc
      .tuple(
        fc.constantFrom(
          ...ROUTES.map((r) => r.template.replace(':id', randomUUID()).replace(':deliveryId', 'evt_x')),
        ),
        fc.option(
          rawQuery.map((q) =>
            [...q].map((c) => (c <= ' ' || c >= '\u007f' || c === '#' ? encodeURIComponent(c) : c)).join(''),
          ),
          { freq: 2 },
        ),
      )
      .map(([p, q]) => (q === null ? p : `${p}?${q}`)),
    headers: fc.array(
      fc.tuple(
        fc.constantFrom(
          'Authorization',
          'Content-Type',
          'X-Request-Id',
          'X-Forwarded-For',
          'Accept',
          'Cookie',
          'X-Junk',
        ),
        fc
          .oneof(
            printable,
            fc.constantFrom(`Bearer ${ADMIN_TOKEN}`, 'Basic !!!', 'application/json', '\u00ff\u00fe'),
          )
          .map((v) => v.trim()),
      ),
      { maxLength: 4 },
    ),
    body: fc.option(fc.oneof(rawBodyText, rawBytes(80)), { freq: 2 }),
    close: fc.boolean(),
  })
  .map((r) => {
    const lines = [`${r.method} ${r.target} HTTP/1.1`, 'Host: localhost'];
    for (const [name, value] of r.headers) lines.push(`${name}: ${onlyInAuthorization(name, value)}`);
    if (r.close) lines.push('Connection: close');
    if (r.body !== null) lines.push(`Content-Length: ${Buffer.byteLength(r.body, 'latin1')}`);
    return {
      kind: 'well-formed' as const,
      method: r.method,
      target: r.target,
      bytes: `${lines.join('\r\n')}\r\n\r\n${r.body ?? ''}`,
    };
  });
/** Bytes no HTTP parser accepts: the first one cannot start a method. */
const garbageHead = fc
  .tuple(
    fc.constantFrom('\u0000', '\u0001', '\u007f', '\u00ff', '(', '{', '"', '@', ' '),
    rawBytes(300),
    fc.boolean(),
  )
  .map(([first, rest, terminated]) => ({
    kind: 'garbage' as const,
    method: '',
    target: '',
    bytes: `${first}${rest}${terminated ? '\r\n\r\n' : ''}`,
  }));

describe.each(engines().slice(0, 1))('$name: raw request heads', (engine) => {
  let w: World;
  let port: number;
  beforeAll(async () => {
    w = await makeWorld(await startHarness(engine, HARNESS_ENV));
    await w.h.app.listen({ host: '127.0.0.1', port: 0 });
    const address = w.h.app.server.address();
    if (address === null || typeof address === 'string') throw new Error('not listening');
    port = address.port;
  });
  afterAll(async () => {
    await w?.h.close();
  });

  it(
    'answers generated garbage with a 400/408/431 problem or a closed connection, and any head with a well-formed answer, never hanging',
    async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.oneof(
            { weight: 3, arbitrary: wellFormedHead },
            { weight: 3, arbitrary: structuredHead },
            { weight: 1, arbitrary: garbageHead },
          ),
          async (sent) => {
            const { answer, timedOut } = await exchange(port, Buffer.from(sent.bytes, 'latin1'), 5_000);
            tally.add('raw socket');
            const isHead = /^HEAD[ \t]/.test(sent.bytes);
            const first = answer.length === 0 ? null : firstResponse(answer, isHead);
            const code = first === null ? '' : (/"code":"?([a-z_0-9]+)/.exec(first.body)?.[1] ?? '');
            const outcome =
              first === null ? 'closed' : `${first.status ?? 'junk'}${code === '' ? '' : ` ${code}`}`;
            rawOutcomes.set(outcome, (rawOutcomes.get(outcome) ?? 0) + 1);
            const complaints: string[] = [];
            if (timedOut) complaints.push('no answer and no close within 5 s');
            if (first !== null) {
              const r = first;
              if (r.status === null)
                complaints.push(`not an HTTP/1.1 response: ${JSON.stringify(r.statusLine.slice(0, 100))}`);
              else {
                // The router sees the path of an absolute-form target too.
                const path = sent.target.replace(/^https?:\/\/[^/]*/i, '').split(/[?#]/)[0] ?? '';
                complaints.push(
                  ...answerComplaints(
                    {
                      method: isHead ? 'HEAD' : 'GET',
                      path,
                      status: r.status,
                      headers: r.headers,
                      body: r.body,
                    },
                    secretsOf(w),
                    true,
                  ),
                );
                if (sent.kind === 'garbage' && ![400, 408, 431].includes(r.status))
                  complaints.push(`garbage answered with ${r.status}`);
                if (/"statusCode"\s*:/.test(r.body)) complaints.push('a default Fastify error body');
              }
            }
            if (complaints.length > 0) {
              expect.fail(
                `${complaints.join('\n')}\nsent: ${JSON.stringify(sent.bytes.slice(0, 400))}\nanswer: ${JSON.stringify(answer.toString('latin1').slice(0, 600))}`,
              );
            }
          },
        ),
        fcOptions(RAW_RUNS),
      );
    },
    TIMEOUT,
  );

  // Regression (was a server bug): an HTTP/1.1 head without Host is refused by Node itself ("HTTP/1.1 400 Bad Request", an empty
  // chunked body, no X-Request-Id), not by the service: CONTRACT §11 wants a 400 invalid_request problem and
  // §8 an X-Request-Id on every response. (Node's requireHostHeader; the service never sees the request.)
  it('answers an HTTP/1.1 head without Host with a 400 problem', async () => {
    const { answer } = await exchange(port, Buffer.from('GET /healthz HTTP/1.1\r\n\r\n'), 5_000);
    tally.add('raw socket');
    const r = firstResponse(answer, false);
    expect(r.status, answer.toString('latin1')).toBe(400);
    const complaints = answerComplaints(
      { method: 'GET', path: '/healthz', ...r, status: 400 },
      secretsOf(w),
      true,
    );
    expect(complaints, answer.toString('latin1')).toStrictEqual([]);
  });

  // Regression (was a server bug): `Expect:` with anything but 100-continue gets Node's own "417 Expectation Failed" with no body
  // and no X-Request-Id (CONTRACT §8: every response carries X-Request-Id; §11: malformed HTTP gets a problem
  // body). Either serve the request or refuse it with a problem.
  it('answers a head with an unknown Expect with a well-formed answer', async () => {
    const { answer } = await exchange(
      port,
      Buffer.from('GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: something-else\r\n\r\n'),
      5_000,
    );
    tally.add('raw socket');
    const r = firstResponse(answer, false);
    const complaints = answerComplaints(
      { method: 'GET', path: '/healthz', ...r, status: r.status ?? 0 },
      secretsOf(w),
      true,
    );
    expect(complaints, answer.toString('latin1')).toStrictEqual([]);
  });
});
