import { Type } from 'typebox';
import { Compile } from 'typebox/compile';
import {
  channelUserIdRule,
  isCampaignId,
  isCarrierMessageId,
  isChannelUserId,
  isMessageId,
  isNetwork,
  isPhoneNumber,
  isRouteName,
  isUuid,
  parseChannel,
} from '../domain/formats.js';
import type { MessageUpsert, ReceiptInput } from '../domain/ingest/precedence.js';
import {
  CHANNELS,
  DIRECTIONS,
  DR_ERRCODES,
  DR_STATUSCODES,
  type DrErrcode,
  type DrStatuscode,
  SEND_STATUSES,
  SETTABLE_STATUSES,
} from '../domain/vocabulary.js';
import { parseRfc3339, parseTimestamp } from '../domain/wire.js';
import { fieldPath, schemaMessage } from './error-handling.js';
import { documented } from './openapi-document.js';
import { PATTERNS } from './patterns.js';

/** Message parts of one SMS: far above any real message, and within every engine's integer column. */
const MAX_COUNTS = 1_000_000;

/**
 * Items of the ingest batches. The schemas document the items in OpenAPI and check their shape; the checks
 * below them add the rules a schema cannot say (formats per channel, fields allowed only on outbound SMS).
 * Each item is checked on its own so that every bad index can be reported. The formats are stated to the
 * document only (`documented`): the checks below enforce them, each with an error that says the rule in words.
 */

const enumOf = (values: readonly string[]) => Type.Unsafe<string>({ type: 'string', enum: [...values] });
const nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);

export const MessageItemSchema = Type.Object(
  {
    id: Type.String({
      description: '1-64 characters of A-Z a-z 0-9 . _ : -',
      ...documented({ pattern: PATTERNS.messageId }),
    }),
    channel: Type.String({
      description: `${CHANNELS.join(', ')} (any case)`,
      ...documented({ pattern: PATTERNS.channel }),
    }),
    channelUserId: Type.String({
      description:
        'SMS: a phone number (country code and number, 6-15 digits, no + or leading 0); other channels: 1-128 characters, no white space or control characters',
      ...documented({ pattern: PATTERNS.channelUserId }),
    }),
    contactId: Type.Optional(
      Type.String({
        description: 'Links the identity to this contact (UUID)',
        ...documented({ format: 'uuid', pattern: PATTERNS.uuid }),
      }),
    ),
    direction: Type.Optional(enumOf(DIRECTIONS)),
    campaignId: Type.Optional(nullable(Type.String(documented({ pattern: PATTERNS.messageId })))),
    createdAt: Type.Optional(
      Type.String({
        description: 'RFC 3339, years 1970 to 9999; default now; never changes on a re-send',
        ...documented({ format: 'date-time' }),
      }),
    ),
    text: Type.Optional(
      nullable(Type.String({ maxLength: 65_536, ...documented({ pattern: PATTERNS.noNul }) })),
    ),
    content: Type.Optional(nullable(Type.Object({}, { additionalProperties: true }))),
    status: Type.Optional(enumOf(SETTABLE_STATUSES)),
    sms: Type.Optional(
      Type.Object(
        {
          status: Type.Optional(enumOf(SEND_STATUSES)),
          network: Type.Optional(
            Type.String({ description: 'MCC+MNC', ...documented({ pattern: PATTERNS.network }) }),
          ),
          price: Type.Optional(Type.Number({ minimum: 0 })),
          counts: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_COUNTS })),
          carrier: Type.Optional(
            Type.Object(
              {
                route: Type.String({
                  description: 'The route the message went out on: 1-32 of a-z 0-9 -',
                  ...documented({ pattern: PATTERNS.routeName }),
                }),
                messageId: Type.String({
                  description: "The id the route's SMSC gave this recipient: 1-64 printable ASCII characters",
                  ...documented({ pattern: PATTERNS.carrierMessageId }),
                }),
              },
              {
                additionalProperties: false,
                description:
                  "The carrier's id of this recipient, which receipts from the route name it by. A (route, " +
                  'messageId) pair belongs to one recipient of any account; a recipient holds one pair, and a ' +
                  'new one replaces it',
              },
            ),
          ),
        },
        { additionalProperties: false, description: 'Outbound SMS only' },
      ),
    ),
  },
  {
    $id: 'MessageItem',
    additionalProperties: false,
    description: 'A message to store; re-sending the same (id, channelUserId) updates it',
  },
);

export const ReceiptItemSchema = Type.Object(
  {
    messageId: Type.String(documented({ pattern: PATTERNS.messageId })),
    to: Type.Optional(
      Type.String({
        description: 'Required when the message has several recipients',
        ...documented({ pattern: PATTERNS.phone }),
      }),
    ),
    drStatuscode: enumOf(DR_STATUSCODES),
    drErrcode: Type.Optional(
      Type.Union(
        [
          Type.String(documented({ enum: Object.keys(DR_ERRCODES) })),
          Type.Integer(documented({ enum: Object.keys(DR_ERRCODES).map(Number) })),
        ],
        { description: 'One of the spec’s operator error codes, as a string or a JSON number; default "0"' },
      ),
    ),
    drTime: Type.Optional(
      Type.String({
        description: 'yyyy-MM-dd HH:mm:ss.SSS (UTC) or RFC 3339, years 1970 to 9999; default now',
        ...documented({ anyOf: [{ pattern: PATTERNS.drTime }, { format: 'date-time' }] }),
      }),
    ),
    network: Type.Optional(
      Type.String({ description: 'MCC+MNC', ...documented({ pattern: PATTERNS.network }) }),
    ),
    price: Type.Optional(Type.Number({ minimum: 0 })),
    counts: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_COUNTS })),
  },
  {
    $id: 'ReceiptItem',
    additionalProperties: false,
    description: 'A delivery receipt, applied under the precedence rules',
  },
);

const messageShape = Compile(MessageItemSchema);
const receiptShape = Compile(ReceiptItemSchema);

type Checked<T> = { ok: true; value: T } | { ok: false; detail: string; param?: string };

const bad = (param: string, detail: string) => ({ ok: false as const, detail, param });

/**
 * Turns schema errors into one sentence; unknown fields are named, since a typo must not pass silently.
 * `param` is the field at fault when exactly one is.
 */
function shapeProblem(errors: ReturnType<typeof messageShape.Errors>): {
  ok: false;
  detail: string;
  param?: string;
} {
  const parts: string[] = [];
  const fields = new Set<string>();
  for (const e of errors) {
    if (e.keyword === 'boolean') continue;
    if (e.keyword === 'additionalProperties') {
      const names = ((e.params as { additionalProperties?: string[] }).additionalProperties ?? []).map((n) =>
        fieldPath(e.instancePath, n),
      );
      for (const name of names) fields.add(name);
      parts.push(`unknown field${names.length > 1 ? 's' : ''} ${names.map((n) => `"${n}"`).join(', ')}`);
    } else if (e.keyword === 'required') {
      const names = ((e.params as { requiredProperties?: string[] }).requiredProperties ?? []).map((n) =>
        fieldPath(e.instancePath, n),
      );
      for (const name of names) fields.add(name);
      parts.push(names.length > 0 ? `missing ${names.join(', ')}` : e.message);
    } else if (e.instancePath === '') {
      parts.push(`item ${schemaMessage(e)}`);
    } else {
      const field = fieldPath(e.instancePath);
      fields.add(field);
      parts.push(`${field} ${schemaMessage(e)}`);
    }
  }
  const detail = [...new Set(parts)].join('; ') || 'item is malformed';
  const [only] = fields;
  return fields.size === 1 && only !== undefined ? { ok: false, detail, param: only } : { ok: false, detail };
}

export function checkMessageItem(item: unknown): Checked<MessageUpsert> {
  if (!messageShape.Check(item)) return shapeProblem(messageShape.Errors(item));
  const channel = parseChannel(item.channel);
  if (!channel) return bad('channel', `channel must be one of ${CHANNELS.join(', ')}`);
  if (!isMessageId(item.id)) return bad('id', 'id must be 1-64 characters of A-Z a-z 0-9 . _ : -');
  if (!isChannelUserId(channel, item.channelUserId)) return bad('channelUserId', channelUserIdRule(channel));
  if (item.contactId !== undefined && !isUuid(item.contactId)) {
    return bad('contactId', 'contactId must be a UUID');
  }
  if (typeof item.campaignId === 'string' && !isCampaignId(item.campaignId)) {
    return bad('campaignId', 'campaignId must be 1-64 characters of A-Z a-z 0-9 . _ : -');
  }
  // PostgreSQL text cannot hold U+0000; refusing it everywhere keeps both engines alike.
  if (typeof item.text === 'string' && item.text.includes('\u0000')) {
    return bad('text', 'text must not contain the NUL character (U+0000)');
  }
  const inbound = item.direction === 'inbound';
  if (item.sms !== undefined && (channel !== 'SMS' || inbound)) {
    return bad('sms', 'sms is only allowed on outbound SMS messages');
  }
  if (item.status !== undefined && channel === 'SMS') {
    return bad(
      'status',
      'status is not allowed on SMS messages; use sms.status (it is derived per recipient)',
    );
  }
  if (item.status !== undefined && inbound) {
    return bad('status', 'status is not allowed on inbound messages (they are always received)');
  }
  if (item.sms?.network !== undefined && !isNetwork(item.sms.network)) {
    return bad('sms.network', 'sms.network must be 5-6 digits (MCC+MNC)');
  }
  const carrier = item.sms?.carrier;
  if (carrier !== undefined && !isRouteName(carrier.route)) {
    return bad('sms.carrier.route', 'sms.carrier.route must be 1-32 characters of a-z 0-9 -');
  }
  if (carrier !== undefined && !isCarrierMessageId(carrier.messageId)) {
    return bad('sms.carrier.messageId', 'sms.carrier.messageId must be 1-64 printable ASCII characters');
  }
  const value: MessageUpsert = { id: item.id, channel, channelUserId: item.channelUserId };
  if (item.createdAt !== undefined) {
    const createdAt = parseRfc3339(item.createdAt);
    if (!createdAt) return bad('createdAt', 'createdAt must be an RFC 3339 date-time');
    if (!storable(createdAt)) return bad('createdAt', 'createdAt must fall in the years 1970 to 9999 (UTC)');
    value.createdAt = createdAt;
  }
  if (item.contactId !== undefined) value.contactId = item.contactId.toLowerCase();
  if (item.direction !== undefined) value.direction = item.direction as MessageUpsert['direction'] & string;
  if (item.campaignId !== undefined) value.campaignId = item.campaignId;
  if (item.text !== undefined) value.text = item.text;
  if (item.content !== undefined && depthOf(item.content) > MAX_CONTENT_DEPTH) {
    return bad('content', `content must not nest deeper than ${MAX_CONTENT_DEPTH} levels`);
  }
  if (item.content !== undefined) value.content = item.content as Record<string, unknown> | null;
  if (item.status !== undefined) value.status = item.status as NonNullable<MessageUpsert['status']>;
  if (item.sms !== undefined) {
    const sms: NonNullable<MessageUpsert['sms']> = {};
    if (item.sms.status !== undefined) sms.status = item.sms.status as NonNullable<typeof sms.status>;
    if (item.sms.network !== undefined) sms.network = item.sms.network;
    if (item.sms.price !== undefined) sms.price = item.sms.price;
    if (item.sms.counts !== undefined) sms.counts = item.sms.counts;
    if (carrier !== undefined) sms.carrier = { route: carrier.route, messageId: carrier.messageId };
    value.sms = sms;
  }
  return { ok: true, value };
}

/** How deep `content` may nest: enough for any real payload, and far from the JSON codec's recursion limit. */
const MAX_CONTENT_DEPTH = 64;

function depthOf(value: unknown): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop() as [unknown, number];
    if (node === null || typeof node !== 'object') continue;
    deepest = Math.max(deepest, depth + 1);
    if (deepest > MAX_CONTENT_DEPTH) return deepest;
    for (const child of Object.values(node)) stack.push([child, depth + 1]);
  }
  return deepest;
}

/** Times every engine stores and prints alike: the years 1970 to 9999, UTC. */
const EARLIEST = Date.UTC(1970, 0, 1);
const LATEST = Date.UTC(9999, 11, 31, 23, 59, 59, 999);
const storable = (d: Date): boolean => d.getTime() >= EARLIEST && d.getTime() <= LATEST;

export function checkReceiptItem(item: unknown, now: Date): Checked<ReceiptInput> {
  if (!receiptShape.Check(item)) return shapeProblem(receiptShape.Errors(item));
  if (!isMessageId(item.messageId)) {
    return bad('messageId', 'messageId must be 1-64 characters of A-Z a-z 0-9 . _ : -');
  }
  if (item.to !== undefined && !isPhoneNumber(item.to)) {
    return bad('to', 'to must be a phone number: country code and number, 6-15 digits, no + or leading 0');
  }
  const errcode = item.drErrcode === undefined ? '0' : String(item.drErrcode);
  if (!Object.hasOwn(DR_ERRCODES, errcode)) {
    return bad('drErrcode', `drErrcode must be one of ${Object.keys(DR_ERRCODES).join(', ')}`);
  }
  let drTime = now;
  if (item.drTime !== undefined) {
    const parsed = parseTimestamp(item.drTime);
    if (!parsed) return bad('drTime', 'drTime must be yyyy-MM-dd HH:mm:ss.SSS (UTC) or RFC 3339');
    if (!storable(parsed)) return bad('drTime', 'drTime must fall in the years 1970 to 9999 (UTC)');
    drTime = parsed;
  }
  if (item.network !== undefined && !isNetwork(item.network)) {
    return bad('network', 'network must be 5-6 digits (MCC+MNC)');
  }
  const value: ReceiptInput = {
    messageId: item.messageId,
    drStatuscode: item.drStatuscode as DrStatuscode,
    drErrcode: errcode as DrErrcode,
    drTime,
  };
  if (item.to !== undefined) value.to = item.to;
  if (item.network !== undefined) value.network = item.network;
  if (item.price !== undefined) value.price = item.price;
  if (item.counts !== undefined) value.counts = item.counts;
  return { ok: true, value };
}
