import { DLR_FAILURES, PROBLEMS } from '../../src/domain/errors.js';

/**
 * Shared judgement of answers for the generated tests: what every refusal must look like (CONTRACT §2, §3,
 * §8, §11) and what no answer may ever contain. Each check returns a list of complaints instead of throwing,
 * so a failing fast-check run reports every broken rule of one request at once.
 */

export interface Answer {
  method: string;
  /** The path as sent, without the query (decides whether the /dlr body style applies). */
  path: string;
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: string;
}

/** Strings that must never appear in an answer (credentials, tokens, secrets); empty strings are ignored. */
export interface Secrets {
  /** Never anywhere, not even in a 2xx body. */
  always: readonly string[];
  /** Never in a refusal (a key may be shown by the operator API's 2xx answers, say). */
  inRefusals: readonly string[];
}

/** Internals: a stack frame, SQL, driver names, file paths. */
const LEAKS: readonly [RegExp, string][] = [
  [/ {4}at /, 'a stack trace'],
  [/\bSELECT\b|\bINSERT\b|\bUPDATE\s+\w+\s+SET\b|\bDELETE FROM\b/, 'SQL text'],
  [/sqlite|SQLITE_/i, 'the SQLite driver'],
  [
    /relation "|violates|duplicate key|syntax error at|out of range for type|invalid input syntax/,
    'a PostgreSQL error',
  ],
  [/\/work\/|node_modules|\.ts:\d|\.js:\d/, 'a file path'],
];

/** RFC 9457 members and our extensions: `errors` (batches), `successor` (410), `param` (the field at fault). */
const PROBLEM_MEMBERS = new Set([
  'type',
  'title',
  'status',
  'detail',
  'code',
  'requestId',
  'errors',
  'successor',
  'param',
]);
/**
 * Refusals that keep the problem style even on /dlr (CONTRACT §2: "Protocol-level refusals… use problem
 * bodies"). `not_found` is how methods outside the router's list are answered (see the pinned 405 cases).
 */
const PROTOCOL_ON_DLR = new Set(['method_not_allowed', 'payload_too_large', 'uri_too_long', 'not_found']);
/** Through a socket, the HTTP parser may refuse a head before any route is known (CONTRACT §11). */
const PARSER_REFUSALS = new Set([
  'invalid_request',
  'request_timeout',
  'headers_too_large',
  'expectation_failed',
]);

const header = (a: Answer, name: string): string | undefined => {
  const v = a.headers[name];
  return v === undefined ? undefined : String(v);
};

/** Problems with a refusal's body: an RFC 9457 problem, or on /dlr the spec's `{code, descr}`. */
export function refusalComplaints(a: Answer, rawSocket = false): string[] {
  const out: string[] = [];
  if (a.method === 'HEAD') {
    if (a.body !== '') out.push('a HEAD answer has a body');
    return out;
  }
  let body: unknown;
  try {
    body = JSON.parse(a.body);
  } catch {
    return [`the refusal body is not JSON: ${JSON.stringify(a.body.slice(0, 200))}`];
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return [`the refusal body is not an object: ${a.body.slice(0, 200)}`];
  }
  const b = body as Record<string, unknown>;
  const isDlrPath = a.path === '/dlr';
  if (isDlrPath && !('type' in b)) {
    // The status query's own failure object.
    const keys = Object.keys(b).sort().join(',');
    if (keys !== 'code,descr') out.push(`a /dlr failure has members ${keys}, not exactly code,descr`);
    const code = b.code as number;
    const known = Object.hasOwn(DLR_FAILURES, String(code))
      ? DLR_FAILURES[code as keyof typeof DLR_FAILURES]
      : null;
    if (!known) out.push(`a /dlr failure has code ${String(b.code)}, not one of the contract's table`);
    else {
      if (known.status !== a.status)
        out.push(`/dlr code ${code} came with HTTP ${a.status}, not ${known.status}`);
      if (b.descr !== known.descr)
        out.push(`/dlr code ${code} has descr ${String(b.descr)}, not ${known.descr}`);
    }
    if (!/^application\/json/.test(header(a, 'content-type') ?? ''))
      out.push('a /dlr failure is not application/json');
    return out;
  }
  for (const k of Object.keys(b))
    if (!PROBLEM_MEMBERS.has(k)) out.push(`the problem has an unexpected member ${k}`);
  if (b.type !== 'about:blank') out.push(`problem type is ${String(b.type)}`);
  if (b.status !== a.status) out.push(`problem status ${String(b.status)} differs from HTTP ${a.status}`);
  const slug = String(b.code);
  const problem = Object.hasOwn(PROBLEMS, slug) ? PROBLEMS[slug as keyof typeof PROBLEMS] : null;
  if (!problem) out.push(`problem code ${slug} is not a slug of PROBLEMS`);
  else {
    if (problem.status !== a.status)
      out.push(`problem code ${slug} belongs to ${problem.status}, sent with ${a.status}`);
    if (b.title !== problem.title) out.push(`problem title ${String(b.title)} is not ${problem.title}`);
    if (isDlrPath && !PROTOCOL_ON_DLR.has(slug) && !(rawSocket && PARSER_REFUSALS.has(slug)))
      out.push(`/dlr answered a ${slug} problem instead of {code, descr}`);
  }
  if (typeof b.detail !== 'string' || b.detail === '') out.push('problem detail is not a non-empty string');
  if (typeof b.requestId !== 'string' || b.requestId === '') out.push('problem requestId is missing');
  else if (header(a, 'x-request-id') !== undefined && b.requestId !== header(a, 'x-request-id')) {
    out.push('problem requestId differs from X-Request-Id');
  }
  if (!/^application\/problem\+json/.test(header(a, 'content-type') ?? '')) {
    out.push(`a problem is sent as ${header(a, 'content-type')}`);
  }
  return out;
}

/** Internals or credentials in a body. */
export function leakComplaints(body: string, secrets: Secrets, refusal: boolean): string[] {
  const out: string[] = [];
  for (const [pattern, what] of LEAKS) {
    const m = pattern.exec(body);
    if (m) out.push(`the body shows ${what}: …${body.slice(Math.max(0, m.index - 60), m.index + 80)}…`);
  }
  for (const s of secrets.always)
    if (s !== '' && body.includes(s)) out.push(`the body echoes a secret (${s.slice(0, 3)}…)`);
  if (refusal) {
    for (const s of secrets.inRefusals) {
      if (s !== '' && body.includes(s)) out.push(`the refusal echoes a credential (${s.slice(0, 3)}…)`);
    }
  }
  return out;
}

/** Every rule an answer to a generated request must keep (no 5xx: the database is up in these tests). */
export function answerComplaints(a: Answer, secrets: Secrets, rawSocket = false): string[] {
  const out: string[] = [];
  if (a.status >= 500) out.push(`HTTP ${a.status}`);
  if (!header(a, 'x-request-id')) out.push('no X-Request-Id');
  const refusal = a.status < 200 || a.status > 299;
  if (refusal) out.push(...refusalComplaints(a, rawSocket));
  out.push(...leakComplaints(a.body, secrets, refusal));
  return out;
}

/** A readable account of a request and its answer for a failure message. */
export function describeExchange(
  request: unknown,
  a: { statusCode: number; body: string },
  complaints: string[],
): string {
  const shown = JSON.stringify(request, (_k, v) =>
    typeof v === 'string' && v.length > 300 ? `${v.slice(0, 300)}…(${v.length})` : v,
  );
  return `${complaints.join('\n')}\nrequest: ${shown}\nanswer: HTTP ${a.statusCode} ${a.body.slice(0, 600)}`;
}

export const RFC3339_MS_Z = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
export const DR_TIME = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}$/;

/** How many requests the generated tests sent, by suite, for the lead's figures. */
export const tally = {
  counts: new Map<string, number>(),
  add(label: string, n = 1): void {
    this.counts.set(label, (this.counts.get(label) ?? 0) + n);
  },
  total(): number {
    let t = 0;
    for (const n of this.counts.values()) t += n;
    return t;
  },
  describe(): string {
    return [...this.counts].map(([k, n]) => `${k}: ${n}`).join(', ');
  },
};

/** Runs of each property: `fallback`, or the positive integer in the environment variable `variable`. */
export function runsFrom(variable: string, fallback: number): number {
  const raw = process.env[variable];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${variable} must be a positive integer, got ${raw}`);
  return n;
}
