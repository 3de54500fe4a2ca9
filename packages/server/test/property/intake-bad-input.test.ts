import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeExchange, leakComplaints, refusalComplaints, runsFrom, tally } from '../support/checks.js';
import { engines } from '../support/engines.js';
import { ADMIN_TOKEN, basic, type CreatedAccount, type Harness, startHarness } from '../support/http.js';

/**
 * Generated bad requests at the gateway adapters, `/intake/v1/kannel` and `/intake/v1/jasmin` (CONTRACT §12 "HTTP
 * adapters", docs/intake.md "The HTTP adapters"): GET and POST (and other methods), junk and huge parameters,
 * parameters repeated with other values, bad, foreign, disabled and restricted tokens, recipients named wrongly,
 * bodies of other types, paths next to the adapters'. Each request carries at least one defect, so whatever else
 * it holds, it is refused: 400, 401 or 403 as one line of text/plain (413 and 415 too, the adapters' own), 404,
 * 405 or 414 as a problem — never a 5xx, never a credential echoed — and it stores nothing: no receipt event, no
 * parked receipt, no change to the recipients, nothing counted matched or parked. (A receipt that cannot be read
 * is kept for the operator's garbled list, as documented; that list is the one thing a refusal may add to.)
 *
 * `WAYBILL_TEST_FUZZ_RUNS` sets the runs (default below), `WAYBILL_TEST_FUZZ_SEED` replays a seed.
 */

const RUNS = runsFrom('WAYBILL_TEST_FUZZ_RUNS', 400);
const SEED = process.env.WAYBILL_TEST_FUZZ_SEED ? Number(process.env.WAYBILL_TEST_FUZZ_SEED) : undefined;
const TIMEOUT = 120_000 + RUNS * 200;

const ALICE = '447700900001';

/** Answers by defect and status, printed with WAYBILL_TEST_FUZZ_STATS=1 to see how deep the requests get. */
const outcomes = new Map<string, number>();
afterAll(() => {
  if (!process.env.WAYBILL_TEST_FUZZ_STATS) return;
  console.log(
    [...outcomes]
      .sort()
      .map(([k, n]) => `${k} ×${n}`)
      .join('\n'),
  );
});
/** Every parameter an adapter reads: junk parameters are named otherwise. */
const KNOWN = new Set([
  'token',
  'type',
  'reply',
  'account',
  'messageid',
  'to',
  'carrierId',
  'id',
  'message_status',
  'level',
  'connector',
  'subdate',
  'donedate',
  'sub',
  'dlvrd',
  'err',
  'text',
  'id_smsc',
]);

type Adapter = 'kannel' | 'jasmin';

/** What the world holds: one account with a message per route, the routes and their tokens. */
interface World {
  h: Harness;
  acct: CreatedAccount;
  other: CreatedAccount;
  /** route name → token: k/j (any account), kr/jr (only `other`), kd/jd (disabled). */
  tokens: Record<string, string>;
}

/** The state a refusal must leave as it was. */
async function snapshot(w: World): Promise<string> {
  const dlr: string[] = [];
  for (const route of ['k', 'j', 'kr', 'jr']) {
    dlr.push((await w.h.inject(`/dlr?key=${w.acct.key}&secret=${w.acct.secret}&messageid=m-${route}`)).body);
  }
  const feed = await w.h.inject({
    url: '/receipts?limit=1000',
    headers: { authorization: basic(w.acct.key, w.acct.secret) },
  });
  const counts: Record<string, unknown> = {};
  for (const name of Object.keys(w.tokens)) {
    const route = (await w.h.admin('GET', `/admin/v1/routes/${name}`)).json() as {
      counts: { matched: number; parked: number };
    };
    counts[name] = [route.counts.matched, route.counts.parked];
  }
  const { parked } = await w.h.store.outboxStats();
  return JSON.stringify({ dlr, feed: feed.body, counts, parked });
}

// ── The generator ────────────────────────────────────────────────────────────────────────────────────────

const junkText = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: 'binary-ascii', maxLength: 40 }),
  fc.constantFrom('', ' ', '%', '%zz', '\u0000', 'null', 'undefined', '[]', '{}', '-1', '1e999', '../../etc'),
  fc.nat({ max: 4000 }).map((n) => 'x'.repeat(n)),
);
const junkName = junkText.filter((name) => !KNOWN.has(name) && !KNOWN.has(name.trim()));
/** Raw query segments, sent as they are (not encoded); none decodes to a known name. */
const rawSegment = fc.constantFrom(
  '%',
  '%zz=1',
  '=',
  '==x',
  '&',
  'a[b]=c',
  'token[]=x',
  '__proto__=x',
  'x=%ff%fe',
);

/** A readable receipt's parameters, or junk in their place. */
const kannelFields = fc.record(
  {
    type: fc.oneof(fc.constantFrom('1', '2', '4', '8', '16'), junkText),
    reply: fc.oneof(
      fc.constantFrom('ACK/', 'NACK/0x0000000b/Invalid Destination Address', 'id:c-1 stat:DELIVRD err:000'),
      junkText,
    ),
  },
  { requiredKeys: [] },
);
const jasminFields = fc.record(
  {
    message_status: fc.oneof(fc.constantFrom('ESME_ROK', 'DELIVRD', 'UNDELIV', 'ESME_RINVDSTADR'), junkText),
    level: fc.oneof(fc.constantFrom('1', '2', '3'), junkText),
    donedate: fc.oneof(fc.constantFrom('2611221001', '261122100130'), junkText),
    err: junkText,
    connector: junkText,
  },
  { requiredKeys: [] },
);

/** A carrier id that is not one: too long, or with a space or a character outside printable ASCII inside. */
const notACarrierId = fc.oneof(
  fc.integer({ min: 65, max: 300 }).map((n) => 'c'.repeat(n)),
  fc
    .tuple(
      fc.stringMatching(/^[a-z0-9]{1,10}$/),
      fc.constantFrom(' ', '\t', 'é', '\u0000', '☃'),
      fc.stringMatching(/^[a-z0-9]{1,10}$/),
    )
    .map(([a, bad, b]) => `${a}${bad}${b}`),
);

/** How the token is wrong (or, `right`, not: then the recipient is). */
const tokenDefect = fc.constantFrom(
  'missing',
  'empty',
  'junk',
  'other-kind',
  'disabled',
  'appended',
  'right',
  'right',
  'right',
);
/** How the recipient is named wrongly. */
const recipientDefect = fc.constantFrom(
  'unnamed',
  'partial',
  'junk-account',
  'unknown-account',
  'junk-messageid',
  'junk-to',
  'junk-carrier',
  'restricted',
  'repeated',
);
/** Defects of the HTTP request itself, whatever its parameters. */
const httpDefect = fc.constantFrom('none', 'none', 'none', 'none', 'path', 'method', 'content-type', 'huge');

interface Generated {
  adapter: Adapter;
  method: 'GET' | 'POST' | 'HEAD';
  token: string;
  recipient: string;
  http: string;
  fields: Record<string, string>;
  junk: [string, string][];
  raw: string[];
  pick: number;
  text: string;
  carrierJunk: string;
  otherMethod: string;
  path: string;
  contentType: string;
}

const generated: fc.Arbitrary<Generated> = fc.record({
  adapter: fc.constantFrom<Adapter>('kannel', 'jasmin'),
  method: fc.constantFrom<'GET' | 'POST' | 'HEAD'>('GET', 'POST', 'POST', 'GET', 'HEAD'),
  token: tokenDefect,
  recipient: recipientDefect,
  http: httpDefect,
  fields: fc.oneof(kannelFields, jasminFields) as fc.Arbitrary<Record<string, string>>,
  junk: fc.array(fc.tuple(junkName, junkText), { maxLength: 4 }),
  raw: fc.array(rawSegment, { maxLength: 2 }),
  pick: fc.nat(),
  text: junkText,
  carrierJunk: notACarrierId,
  otherMethod: fc.constantFrom('PUT', 'DELETE', 'PATCH', 'OPTIONS'),
  path: fc.constantFrom(
    '/intake/v1/KANNEL',
    '/intake/v1/kannelx',
    '/intake/v1/kannel/extra',
    '/intake/v1/smpp',
    '/intake/v2/kannel',
    '/intake/kannel',
    '/intake/v1/jasmin/x',
  ),
  contentType: fc.constantFrom(
    'text/plain',
    'application/xml',
    'multipart/form-data; boundary=x',
    'application/octet-stream',
  ),
});

interface Built {
  method: string;
  url: string;
  headers: Record<string, string>;
  payload?: string;
  /** The defects it carries, for the failure message. */
  defects: string[];
}

/** The request of a generated case: its parameters with the chosen defects, sent the chosen way. */
function build(w: World, g: Generated): Built {
  const own = g.adapter === 'kannel' ? 'k' : 'j';
  const tokens: Record<string, string | undefined> = {
    missing: undefined,
    empty: '',
    junk: g.text,
    'other-kind': w.tokens[g.adapter === 'kannel' ? 'j' : 'k'],
    disabled: w.tokens[`${own}d`],
    // What Jasmin's GET does to a url ending in the token: `token=wbi_…?id=…`.
    appended: `${w.tokens[own]}?id=${g.text}`,
    right: w.tokens[own],
  };
  // The right token of the restricted route when the recipient is the defect `restricted`.
  const token = g.token === 'right' && g.recipient === 'restricted' ? w.tokens[`${own}r`] : tokens[g.token];
  const params: [string, string][] = [];
  if (token !== undefined) params.push(['token', token]);
  for (const [name, value] of Object.entries(g.fields)) params.push([name, value]);
  const carrierParam = g.adapter === 'kannel' ? 'carrierId' : 'id';
  const direct: [string, string][] = [
    ['account', w.acct.id],
    ['messageid', `m-${own}`],
    ['to', ALICE],
  ];
  switch (g.recipient) {
    case 'unnamed':
      break;
    case 'partial':
      // One or two of the three, never all.
      params.push(...direct.filter((_, i) => i !== g.pick % 3).slice(0, 1 + (g.pick % 2)));
      break;
    case 'junk-account':
      params.push(['account', `x${g.text}`], ...direct.slice(1));
      break;
    case 'unknown-account':
      params.push(['account', randomUUID()], ...direct.slice(1));
      break;
    case 'junk-messageid':
      params.push(direct[0] as [string, string], ['messageid', `${g.text} !`], direct[2] as [string, string]);
      break;
    case 'junk-to':
      params.push(...direct.slice(0, 2), ['to', `z${g.text}`]);
      break;
    case 'junk-carrier':
      params.push([carrierParam, g.carrierJunk]);
      break;
    case 'restricted':
      // The direct form with an account the route may not touch, or the pair such a recipient holds.
      if (g.pick % 2 === 0) params.push(...direct);
      else params.push([carrierParam, `${own}r-1`]);
      break;
    case 'repeated': {
      params.push(...direct);
      // One of the parameters again with another value (the token too).
      const [name, value] = params[g.pick % params.length] ?? ['token', ''];
      params.push([name, `${value}-again`]);
      break;
    }
  }
  // Junk parameters, and known ones repeated with the same value (which is fine), in a shuffled order.
  params.push(...g.junk);
  if (params.length > 0 && g.pick % 3 === 0) params.push(params[g.pick % params.length] as [string, string]);
  const encoded = params.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`);
  let path = `/intake/v1/${g.adapter}`;
  let method: string = g.method;
  const headers: Record<string, string> = {};
  let query = [...encoded, ...g.raw];
  let payload: string | undefined;
  if (g.method === 'POST') {
    // The token in the query, everything else as a form (or all of it in the form, when pick says so).
    const inQuery = g.pick % 4 === 0 ? [] : encoded.filter((p) => p.startsWith('token='));
    payload = [...encoded.filter((p) => !inQuery.includes(p)), ...g.raw].join('&');
    query = inQuery;
    headers['content-type'] = 'application/x-www-form-urlencoded';
  }
  const defects = [`token:${g.token}`, `recipient:${g.recipient}`];
  if (g.http === 'path') path = g.path;
  if (g.http === 'method') method = g.otherMethod;
  if (g.http === 'content-type' && g.method === 'POST') headers['content-type'] = g.contentType;
  if (g.http === 'huge') {
    // Past the request line's 8 KiB (GET) or the body's 64 KiB (POST).
    if (g.method === 'POST') payload = `${payload ?? ''}&reply=${'r'.repeat(70 * 1024)}`;
    else query.push(`text=${'t'.repeat(9 * 1024)}`);
  }
  if (g.http !== 'none') defects.push(`http:${g.http}`);
  const url = query.length === 0 ? path : `${path}?${query.join('&')}`;
  return { method, url, headers, ...(payload === undefined ? {} : { payload }), defects };
}

// ── The properties ──────────────────────────────────────────────────────────────────────────────────────

/** Refusals the adapters answer themselves, as one line of text/plain. */
const TEXT_REFUSALS = new Set([400, 401, 403, 413, 415]);
/** Refusals before any adapter: the unknown path, the method, the request line. */
const PROBLEM_REFUSALS = new Set([404, 405, 414]);

describe.each(engines())('$name: generated bad requests at the gateway adapters', (engine) => {
  let w: World;

  beforeAll(async () => {
    const h = await startHarness(engine, { WAYBILL_RATE_PER_SECOND: '0' });
    const acct = await h.createAccount();
    const other = await h.createAccount({ name: 'Other' });
    const tokens: Record<string, string> = {};
    const routes: [string, string, Record<string, unknown>][] = [
      ['k', 'kannel', {}],
      ['j', 'jasmin', {}],
      ['kr', 'kannel', { accounts: [other.id] }],
      ['jr', 'jasmin', { accounts: [other.id] }],
      ['kd', 'kannel', { enabled: false }],
      ['jd', 'jasmin', { enabled: false }],
    ];
    for (const [name, kind, extra] of routes) {
      const res = await h.admin('POST', '/admin/v1/routes', { name, kind, ...extra });
      expect(res.statusCode, res.body).toBe(201);
      tokens[name] = (res.json() as { token: string }).token;
    }
    // A recipient per route, holding that route's carrier pair (`k-1`, `kr-1`, …).
    const ingested = await h.ingest(
      acct.id,
      ['k', 'j', 'kr', 'jr'].map((route) => ({
        id: `m-${route}`,
        channel: 'SMS',
        channelUserId: ALICE,
        sms: { carrier: { route, messageId: `${route}-1` } },
      })),
    );
    expect(ingested.statusCode, ingested.body).toBe(200);
    w = { h, acct, other, tokens };
  }, 60_000);

  afterAll(async () => {
    await w?.h.close();
  });

  it(
    'refuses every generated bad request with the documented answer, and stores nothing',
    async () => {
      const before = await snapshot(w);
      const secrets = { always: [ADMIN_TOKEN, ...Object.values(w.tokens)], inRefusals: [w.acct.secret] };
      await fc.assert(
        fc.asyncProperty(generated, async (g) => {
          const req = build(w, g);
          const res = await w.h.inject({
            method: req.method as 'GET',
            url: req.url,
            headers: req.headers,
            ...(req.payload === undefined ? {} : { payload: req.payload }),
          });
          tally.add(`${engine.name} intake`);
          const key = `${req.method} ${req.defects.join(' ')} → ${res.statusCode}`;
          outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
          const complaints: string[] = [];
          const type = String(res.headers['content-type'] ?? '');
          if (req.method === 'HEAD') {
            // HEAD says whether the token would be taken and writes nothing (routes/intake.ts): 200 is allowed.
            if (res.body !== '') complaints.push('a HEAD answer has a body');
            if (res.statusCode >= 500) complaints.push(`HTTP ${res.statusCode}`);
          } else if (TEXT_REFUSALS.has(res.statusCode)) {
            if (!/^text\/plain/.test(type)) complaints.push(`a ${res.statusCode} is sent as ${type}`);
            if (!/^[^\r\n\u0085\u2028\u2029]+$/.test(res.body))
              complaints.push('the refusal is not one line of text');
          } else if (PROBLEM_REFUSALS.has(res.statusCode)) {
            complaints.push(
              ...refusalComplaints({
                method: req.method,
                path: req.url.split('?')[0] ?? '',
                status: res.statusCode,
                headers: res.headers,
                body: res.body,
              }),
            );
          } else {
            complaints.push(`HTTP ${res.statusCode}, not a documented refusal`);
          }
          complaints.push(...leakComplaints(res.body, secrets, res.statusCode !== 200));
          const after = await snapshot(w);
          if (after !== before) complaints.push(`it stored something: ${after} (was ${before})`);
          if (complaints.length > 0) {
            expect.fail(describeExchange({ ...req, payload: req.payload?.slice(0, 300) }, res, complaints));
          }
        }),
        { numRuns: RUNS, ...(SEED === undefined ? {} : { seed: SEED }), endOnFailure: true },
      );
      // Junk reached the translation (not only the token check): some refusals were about the receipt.
      const garbled = (await w.h.admin('GET', '/admin/v1/routes/k/garbled')).json() as { garbled: unknown[] };
      expect(garbled.garbled.length).toBeGreaterThan(0);
    },
    TIMEOUT,
  );

  it('never writes a token to the log', () => {
    const log = w.h.logs.join('\n');
    for (const token of Object.values(w.tokens)) expect(log).not.toContain(token);
  });
});
