import { type Static, type TSchema, Type } from 'typebox';
import {
  DLR_FAILURES as DLR_FAILURES_BY_CODE,
  type DlrFailureCode,
  PROBLEMS,
  type ProblemCode,
} from '../domain/errors.js';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../domain/query-params.js';
import {
  CHANNELS,
  DIRECTIONS,
  DR_ERRCODES,
  DR_STATUSCODES,
  MESSAGE_STATUSES,
  SEND_STATUSES,
} from '../domain/vocabulary.js';
import {
  DLR_ITEM_EXAMPLE,
  dlrFailureExample,
  MESSAGE_RECORD_EXAMPLE,
  MESSAGES_ENVELOPE_EXAMPLE,
  problemExample,
  RECEIPT_EVENT_EXAMPLE,
  RECEIPT_FEED_EXAMPLE,
} from './examples.js';
import { PATTERNS } from './patterns.js';

/**
 * Wire schemas shared by routes: they drive response serialization (so no field outside them can leak) and
 * the OpenAPI document at /openapi.json. A schema with an `$id` is registered once with `addSchema` and
 * referenced with {@link ref}; it becomes `#/components/schemas/<$id>` in the document.
 */

/** A schema registered under its `$id` (TypeBox's types do not carry the `$id`). */
export type NamedSchema = TSchema;

/** The example a reference carries from its schema's `examples`, for the responses that use it. */
const EXAMPLE = Symbol('example');

/** A reference to a registered schema (the type stays the schema's). */
export function ref<T extends TSchema>(schema: T) {
  const id = (schema as { $id?: unknown }).$id;
  if (typeof id !== 'string') throw new Error('only a schema with an $id can be referenced');
  const reference = Type.Unsafe<Static<T>>({ $ref: `${id}#` });
  const [example] = (schema as { examples?: unknown[] }).examples ?? [];
  if (example !== undefined) Object.defineProperty(reference, EXAMPLE, { value: example });
  return reference;
}

export const enumOf = (values: readonly string[], description?: string) =>
  Type.Unsafe<string>({ type: 'string', enum: [...values], ...(description ? { description } : {}) });

export const Timestamp = Type.String({
  format: 'date-time',
  description: 'RFC 3339 UTC with milliseconds',
  examples: ['2026-11-22T10:00:00.123Z'],
});

export const DlrItemSchema = Type.Object(
  {
    type: Type.Literal('dlr'),
    messageid: Type.String({ pattern: PATTERNS.messageId, examples: ['demo-sms-multi'] }),
    to: Type.String({
      description: 'Country code and number, no + or leading 0',
      pattern: PATTERNS.phone,
      examples: ['447700900201'],
    }),
    status: enumOf(SEND_STATUSES, '"1" in progress, "0" submitted to carrier, "400" submission failed'),
    price: Type.Number({ description: 'Price of one SMS, in the billing currency', minimum: 0 }),
    counts: Type.Integer({ description: 'Billed parts', minimum: 1 }),
    network: Type.Optional(
      Type.String({
        description: 'MCC+MNC; omitted when unknown',
        pattern: PATTERNS.network,
        examples: ['23415'],
      }),
    ),
    drStatus: Type.Optional(
      Type.Union([Type.Literal(0), Type.Literal(400)], {
        description: '0 for delivered and accepted, 400 for every other drStatuscode',
      }),
    ),
    drStatuscode: Type.Optional(enumOf(DR_STATUSCODES)),
    drErrcode: Type.Optional(enumOf(Object.keys(DR_ERRCODES), 'Operator error code; "0" is normal')),
    drTime: Type.Optional(
      Type.String({
        description: 'yyyy-MM-dd HH:mm:ss.SSS, UTC',
        pattern: PATTERNS.drTime,
        examples: ['2026-11-22 09:41:00.000'],
      }),
    ),
  },
  {
    $id: 'DlrItem',
    additionalProperties: false,
    examples: [DLR_ITEM_EXAMPLE],
    description:
      'One SMS recipient of a message. The receipt fields (drStatus, drStatuscode, drErrcode, drTime) appear ' +
      'once a receipt is recorded.',
  },
);

export const DlrFailureSchema = Type.Object(
  {
    code: Type.Unsafe<number>({
      type: 'integer',
      enum: Object.keys(DLR_FAILURES_BY_CODE).map(Number),
      description: '2, 3, 4, 5, 9, 11, 20 (the spec) or 429 (rate limited, locked out)',
    }),
    descr: Type.Unsafe<string>({
      type: 'string',
      enum: [...new Set(Object.values(DLR_FAILURES_BY_CODE).map((f) => f.descr))],
      description: 'The spec’s text for the code',
    }),
  },
  {
    $id: 'DlrFailure',
    additionalProperties: false,
    description: 'A failed status query, in the spec’s shape',
    examples: [dlrFailureExample(4)],
  },
);

export const ItemErrorSchema = Type.Object(
  {
    index: Type.Integer({ minimum: 0, description: '0-based position of the item in the batch' }),
    detail: Type.String({ description: 'What is wrong with it, for a person' }),
    param: Type.Optional(
      Type.String({ description: 'The field of the item at fault, when it is one (sms.network)' }),
    ),
  },
  { $id: 'ItemError', description: 'A bad item of an operator batch' },
);

export const ProblemSchema = Type.Object(
  {
    type: Type.String({ description: 'Always about:blank: `code` tells problems apart' }),
    title: Type.String({ description: 'The HTTP reason phrase', examples: ['Bad Request'] }),
    status: Type.Integer({ description: 'The HTTP status' }),
    detail: Type.String({ description: 'What was wrong, for a person; the wording may change' }),
    code: enumOf(Object.keys(PROBLEMS), 'Stable slug to branch on (docs/errors.md)'),
    requestId: Type.String({ description: 'The X-Request-Id of the request, also in its log line' }),
    param: Type.Optional(
      Type.String({
        description:
          'The one query parameter or body field at fault, when there is one: limit, callbackUrl, ipWhitelist[2]',
      }),
    ),
    errors: Type.Optional(
      Type.Array(ref(ItemErrorSchema), {
        description: 'A refused operator batch: every bad item (nothing was written)',
      }),
    ),
    successor: Type.Optional(
      Type.String({ description: 'On 410 Gone: the path that replaces this one', examples: ['/messages'] }),
    ),
  },
  { $id: 'Problem', description: 'RFC 9457 problem details', examples: [problemExample('invalid_request')] },
);

export const MessageRecordSchema = Type.Object(
  {
    id: Type.String({ pattern: PATTERNS.messageId, examples: ['demo-sms-0001'] }),
    channel: enumOf(CHANNELS),
    direction: enumOf(DIRECTIONS),
    contactId: Type.String({ format: 'uuid', pattern: PATTERNS.uuid }),
    channelUserId: Type.String({ pattern: PATTERNS.channelUserId, examples: ['447700900123'] }),
    conversationId: Type.String({ format: 'uuid', pattern: PATTERNS.uuid }),
    campaignId: Type.Union([Type.String({ pattern: PATTERNS.messageId }), Type.Null()]),
    text: Type.Union([Type.String(), Type.Null()]),
    content: Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()], {
      description: 'Structured content, as the operator sent it',
    }),
    status: enumOf(MESSAGE_STATUSES),
    createdAt: Timestamp,
  },
  {
    $id: 'MessageRecord',
    additionalProperties: false,
    examples: [MESSAGE_RECORD_EXAMPLE],
    description:
      'A stored message, identified by (id, channelUserId): an SMS sent to several numbers is one record each',
  },
);

export const MessagesEnvelopeSchema = Type.Object(
  {
    messages: Type.Array(ref(MessageRecordSchema), { description: 'Oldest first' }),
    nextCursor: Type.Union([Type.String(), Type.Null()], {
      description: 'Fetches the page just older; null on the last',
    }),
    hasMore: Type.Boolean(),
  },
  {
    $id: 'MessagesEnvelope',
    additionalProperties: false,
    description: 'A page of messages',
    examples: [MESSAGES_ENVELOPE_EXAMPLE],
  },
);

export const ReceiptEventSchema = Type.Object(
  {
    id: Type.String({
      description: 'evt_ + ULID; the webhook-id of its callback',
      pattern: PATTERNS.eventId,
      examples: ['evt_01JD0000000000000000000000'],
    }),
    recordedAt: Timestamp,
    receipt: ref(DlrItemSchema),
  },
  {
    $id: 'ReceiptEvent',
    additionalProperties: false,
    description: 'An applied receipt, with the recipient’s state right after it',
    examples: [RECEIPT_EVENT_EXAMPLE],
  },
);

export const ReceiptFeedSchema = Type.Object(
  {
    receipts: Type.Array(ref(ReceiptEventSchema), { description: 'Oldest first' }),
    nextCursor: Type.String({
      description:
        'The position after the last event returned (the same position after an empty page): poll with it',
    }),
    hasMore: Type.Boolean({ description: 'More events exist right now' }),
  },
  {
    $id: 'ReceiptFeed',
    additionalProperties: false,
    description: 'A page of the receipt feed',
    examples: [RECEIPT_FEED_EXAMPLE],
  },
);

export const HealthSchema = Type.Object(
  {
    status: enumOf(['ok', 'unavailable']),
    replicas: Type.Optional(
      Type.Array(
        Type.Object({
          name: Type.String({ description: 'host:port of the replica (never a credential), or replica-N' }),
          up: Type.Boolean({ description: 'It answered its last probe' }),
          lagMs: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], {
            description: 'Replay lag behind the primary when last measured; null while down or unmeasured',
          }),
        }),
        { description: 'Readiness only: each read replica (DATABASE_READ_URL); never affects the status' },
      ),
    ),
  },
  {
    $id: 'Health',
    additionalProperties: false,
    description: 'Liveness or readiness',
    examples: [
      { status: 'ok' },
      { status: 'ok', replicas: [{ name: 'db-replica-1:5432', up: true, lagMs: 40 }] },
    ],
  },
);

/** The named schemas every configuration serves; the operator API registers its own beside them. */
export const SHARED_SCHEMAS: readonly NamedSchema[] = [
  ItemErrorSchema,
  ProblemSchema,
  DlrItemSchema,
  DlrFailureSchema,
  MessageRecordSchema,
  MessagesEnvelopeSchema,
  ReceiptEventSchema,
  ReceiptFeedSchema,
  HealthSchema,
];

/**
 * Response headers, each documented once. `required` marks those sent on every response that lists them
 * (http/openapi-document.ts moves it onto the header object); the rate-limit headers are not, since a refused
 * request took no token and the limit can be turned off.
 */
const HEADERS = {
  'X-Request-Id': {
    type: 'string',
    required: true,
    description: 'The caller’s own X-Request-Id when it was sane, else a fresh one; also in the log line',
  },
  RateLimit: {
    type: 'string',
    description:
      'Tokens left and seconds to the next one (IETF draft), on authenticated answers while rate limiting is on',
    examples: ['"burst";r=99;t=1'],
  },
  'RateLimit-Policy': {
    type: 'string',
    description: 'The per-account token bucket (IETF draft)',
    examples: ['"burst";q=100;w=2'],
  },
  'Retry-After': {
    type: 'integer',
    minimum: 0,
    required: true,
    description: 'Seconds to wait before trying again',
    examples: [5],
  },
  Deprecation: {
    type: 'string',
    required: true,
    description: 'RFC 9745: when this endpoint was deprecated (@ Unix seconds)',
    examples: ['@1767225600'],
  },
  Sunset: {
    type: 'string',
    required: true,
    description: 'RFC 8594: when this endpoint turns 410 Gone (HTTP date)',
    examples: ['Fri, 01 Jan 2027 00:00:00 GMT'],
  },
  Link: {
    type: 'string',
    required: true,
    description: 'The successor of this endpoint with the same query, minus credentials',
    examples: ['</messages?messageIds=m-1>; rel="successor-version"'],
  },
  'WWW-Authenticate': {
    type: 'string',
    required: true,
    description: 'The scheme to authenticate with',
    examples: ['Basic realm="waybill"'],
  },
  Allow: {
    type: 'string',
    required: true,
    description: 'The methods this path serves',
    examples: ['GET, HEAD'],
  },
} as const;
export type HeaderName = keyof typeof HEADERS;

/**
 * The documented headers of a response: X-Request-Id and `names`, and `sometimes`: headers this response
 * carries only in some cases (Retry-After on a /dlr 500 when the database is unavailable, not on a bug).
 */
export function headers(names: readonly HeaderName[], sometimes: readonly HeaderName[] = []) {
  const always = [...new Set(['X-Request-Id' as const, ...names])].map((name) => [name, HEADERS[name]]);
  const optional = sometimes.map((name) => {
    const { required: _required, ...header } = HEADERS[name] as { required?: boolean };
    return [name, header];
  });
  return Object.fromEntries([...always, ...optional]);
}

/** The examples of a response: one value, or several by name (a summary and the value each). */
export interface ResponseExamples {
  example?: unknown;
  examples?: Record<string, { summary: string; value: unknown }>;
}

/**
 * A documented response (its description, headers, schema and example per media type), in the form Fastify
 * compiles a serializer from per content type and @fastify/swagger documents as is. The example is the
 * schema's own when it is a reference to a named schema that has one; responses of other schemas give theirs.
 */
export function response(
  description: string,
  schema: TSchema,
  options: {
    headers?: readonly HeaderName[];
    sometimesHeaders?: readonly HeaderName[];
    mediaType?: string;
  } & ResponseExamples = {},
) {
  const own = (schema as { [EXAMPLE]?: unknown })[EXAMPLE];
  const examples =
    options.examples !== undefined
      ? { examples: options.examples }
      : options.example !== undefined
        ? { example: options.example }
        : own !== undefined
          ? { example: own }
          : {};
  return {
    description,
    headers: headers(options.headers ?? [], options.sometimesHeaders),
    content: { [options.mediaType ?? 'application/json']: { schema, ...examples } },
  };
}

/** Named examples of the /dlr failure object, one per code this status answers with. */
export const dlrFailureExamples = (codes: readonly DlrFailureCode[]) =>
  Object.fromEntries(
    codes.map((code) => [
      `code${code}`,
      { summary: `${code} ${DLR_FAILURES_BY_CODE[code].descr}`, value: dlrFailureExample(code) },
    ]),
  );

/** What each problem status means, wherever it is answered. */
const PROBLEM_RESPONSES: Record<number, { description: string; headers?: readonly HeaderName[] }> = {
  400: {
    description:
      'invalid_request: a parameter or the body is malformed; `param` names the one at fault, batch errors list every bad item',
  },
  401: {
    description: 'unauthorized: missing, malformed or wrong credentials',
    headers: ['WWW-Authenticate'],
  },
  403: { description: 'ip_not_allowed: the caller’s IP is not on the account’s whitelist' },
  404: { description: 'not_found: no such account, or no such delivery of it' },
  405: {
    description:
      'method_not_allowed: the path does not serve the method that was used; Allow lists those it does',
    headers: ['Allow'],
  },
  409: { description: 'conflict: a newer event of the same recipient supersedes this delivery' },
  410: { description: 'gone: the endpoint was removed at its sunset; `successor` names /messages' },
  413: { description: 'payload_too_large: the body is larger than 5 MiB' },
  414: { description: 'uri_too_long: the request line is longer than 8 KiB' },
  415: { description: 'unsupported_media_type: the body is not sent as application/json' },
  429: {
    description:
      'locked_out (too many failed secrets for this key) or rate_limited (over the account’s request rate)',
    headers: ['Retry-After', 'RateLimit', 'RateLimit-Policy'],
  },
  500: { description: 'internal: an unexpected fault; the log has it under the request id' },
  503: {
    description: 'unavailable: the database cannot be reached; retry shortly',
    headers: ['Retry-After'],
  },
};

/** Problem responses (`application/problem+json`) of these statuses, each with the headers it carries. */
export function problemResponses(
  statuses: readonly number[],
  options: { headers?: readonly HeaderName[] } = {},
) {
  return Object.fromEntries(
    statuses.map((status) => {
      const known = PROBLEM_RESPONSES[status];
      if (!known) throw new Error(`no problem response is described for HTTP ${status}`);
      const codes = (Object.keys(PROBLEMS) as ProblemCode[]).filter((c) => PROBLEMS[c].status === status);
      return [
        status,
        response(known.description, ref(ProblemSchema), {
          headers: [...(known.headers ?? []), ...(options.headers ?? [])],
          mediaType: 'application/problem+json',
          examples: Object.fromEntries(
            codes.map((code) => [code, { summary: code, value: problemExample(code) }]),
          ),
        }),
      ];
    }),
  );
}

/**
 * Security requirements by kind of endpoint. The spec's `key`/`secret` query parameters are two API keys used
 * together (`queryKey` and `querySecret`); the contact-message endpoints prefer HTTP Basic and accept them too.
 */
export const SECURITY = {
  dlr: [{ queryKey: [], querySecret: [] }],
  query: [{ basic: [] }, { queryKey: [], querySecret: [] }],
  admin: [{ adminToken: [] }],
  none: [],
};

/** Every path answers these whatever its operation: another method (405), an overlong request line (414). */
export const PROTOCOL_STATUSES = [405, 414] as const;

/** The problems of an operator API operation, plus `statuses` (401 for a missing or wrong admin token). */
export const adminProblems = (statuses: readonly number[]) =>
  problemResponses([...statuses, 401, 500, 503, ...PROTOCOL_STATUSES]);

/** The problems of an operator API body: malformed (400), over 5 MiB (413), not JSON (415). */
export const BODY_STATUSES = [400, 413, 415] as const;

/** The headers of an answer given after the credentials were accepted (a token was taken). */
export const RATE_LIMIT_HEADERS: readonly HeaderName[] = ['RateLimit', 'RateLimit-Policy'];

/**
 * The problems of the contact-message endpoints and the feed, plus `statuses`, each with `headers`; those
 * that can come after authentication carry the rate-limit headers too.
 */
export const queryProblems = (statuses: readonly number[], headers: readonly HeaderName[] = []) => ({
  ...problemResponses([401, 403, ...statuses, ...PROTOCOL_STATUSES], { headers }),
  ...problemResponses([400, 429, 500, 503], { headers: [...headers, ...RATE_LIMIT_HEADERS] }),
});

/**
 * A channel name as a parameter or item field takes it: one of {@link CHANNELS} in any case (echoed upper-case).
 * A pattern rather than an enum, so that a client reading the document knows `sms` is as good as `SMS`.
 */
export const channelParameter = (description: string) => ({
  type: 'string' as const,
  pattern: PATTERNS.channel,
  description: `${description}: ${CHANNELS.join(', ')}, in any case`,
  examples: ['SMS'],
});

/** The query string of the contact message endpoints (v1 and its successor, which adds campaignId). */
export const messagesQuerystring = (withCampaign: boolean) =>
  Type.Object({
    messageIds: Type.Optional(
      Type.String({
        description:
          'Mode 1: comma-separated message ids, 1-20 (white space around them and empty elements are ignored, repeats count once)',
        pattern: PATTERNS.messageIds,
        examples: ['demo-sms-0001,demo-wa-0001'],
      }),
    ),
    channel: Type.Optional(Type.Unsafe<string>(channelParameter('The channel'))),
    channelUserId: Type.Optional(
      Type.String({
        description:
          'Mode 2: the contact’s identity on the channel; on SMS a phone number (country code and number, 6-15 digits, no + or leading 0)',
        pattern: PATTERNS.channelUserId,
        examples: ['447700900123'],
      }),
    ),
    contactId: Type.Optional(
      Type.String({ format: 'uuid', pattern: PATTERNS.uuid, description: 'Mode 2: the contact UUID' }),
    ),
    size: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE })),
    cursor: Type.Optional(Type.String({ minLength: 1, description: 'nextCursor of the previous page' })),
    ...(withCampaign
      ? {
          campaignId: Type.Optional(
            Type.String({
              description: 'Campaign filter',
              pattern: PATTERNS.messageId,
              examples: ['spring-sale'],
            }),
          ),
        }
      : {}),
  });
