import { Type } from 'typebox';
import {
  CHANNELS,
  DIRECTIONS,
  DR_ERRCODES,
  DR_STATUSCODES,
  MESSAGE_STATUSES,
  SEND_STATUSES,
} from '../domain/vocabulary.js';

/**
 * Wire schemas shared by routes: they drive response serialization (so no field outside them can leak) and
 * the OpenAPI document at /openapi.json.
 */

const enumOf = (values: readonly string[], description?: string) =>
  Type.Unsafe<string>({ type: 'string', enum: [...values], ...(description ? { description } : {}) });

export const Timestamp = Type.String({
  description: 'RFC 3339 UTC with milliseconds',
  example: '2026-11-22T10:00:00.123Z',
});

export const DlrItemSchema = Type.Object(
  {
    type: Type.Literal('dlr'),
    messageid: Type.String(),
    to: Type.String({ description: 'Country code and number, no + or leading 00' }),
    status: enumOf(SEND_STATUSES, '"1" in progress, "0" submitted to carrier, "400" submission failed'),
    price: Type.Number(),
    counts: Type.Integer(),
    network: Type.Optional(Type.String({ description: 'MCC+MNC; omitted when unknown' })),
    drStatus: Type.Optional(Type.Union([Type.Literal(0), Type.Literal(400)])),
    drStatuscode: Type.Optional(enumOf(DR_STATUSCODES)),
    drErrcode: Type.Optional(enumOf(Object.keys(DR_ERRCODES))),
    drTime: Type.Optional(Type.String({ description: 'yyyy-MM-dd HH:mm:ss.SSS, UTC' })),
  },
  {
    description:
      'Receipt fields (drStatus, drStatuscode, drErrcode, drTime) appear once a receipt is recorded',
  },
);

export const DlrFailureSchema = Type.Object({
  code: Type.Integer({ description: '2, 3, 4, 5, 9, 11, 20 (spec §7) or 429' }),
  descr: Type.String(),
});

export const ProblemSchema = Type.Object(
  {
    type: Type.String(),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    code: Type.String({ description: 'Stable slug, see docs/errors.md' }),
    requestId: Type.String(),
  },
  { additionalProperties: true, description: 'RFC 9457 problem details' },
);

export const MessageRecordSchema = Type.Object({
  id: Type.String(),
  channel: enumOf(CHANNELS),
  direction: enumOf(DIRECTIONS),
  contactId: Type.String({ format: 'uuid' }),
  channelUserId: Type.String(),
  conversationId: Type.String({ format: 'uuid' }),
  campaignId: Type.Union([Type.String(), Type.Null()]),
  text: Type.Union([Type.String(), Type.Null()]),
  content: Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()]),
  status: enumOf(MESSAGE_STATUSES),
  createdAt: Timestamp,
});

export const MessagesEnvelopeSchema = Type.Object({
  messages: Type.Array(MessageRecordSchema),
  nextCursor: Type.Union([Type.String(), Type.Null()], {
    description: 'Fetches the page just older; null on the last',
  }),
  hasMore: Type.Boolean(),
});

export const problemResponses = (...statuses: number[]) =>
  Object.fromEntries(statuses.map((s) => [s, { ...ProblemSchema, description: 'Problem details' }]));
