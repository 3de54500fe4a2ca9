import type { FastifyInstance, FastifyRequest } from 'fastify';
import { type TSchema, Type } from 'typebox';
import type { AppContext } from '../context.js';
import type { RouteKind } from '../domain/intake/route.js';
import { STAT_TEXTS } from '../domain/intake/states.js';
import { fromJasmin, fromKannel, type Translation } from '../domain/intake/translate.js';
import {
  acceptForms,
  applyIntakeReceipt,
  plain,
  readParams,
  registerIntakeErrors,
  routeOfToken,
} from '../http/intake-adapter.js';
import { intakeGroups } from '../http/intake-groups.js';
import { PATTERNS } from '../http/patterns.js';
import { methodNotAllowed } from '../http/protocol.js';
import { headers, PROTOCOL_STATUSES, problemResponses } from '../http/schemas.js';
import { describedOnly } from '../http/validation.js';

/** A text/plain answer: one line, the reason of a refusal (its example shown in /docs). */
const text = (
  description: string,
  example: string,
  headerNames: Parameters<typeof headers>[0] = [],
  schema: TSchema = Type.String({ minLength: 1 }),
) => ({
  description,
  headers: headers(headerNames),
  content: { 'text/plain': { schema, example } },
});

const refusals = {
  400: text(
    'The receipt cannot be read, or the recipient is not named; the reason in one line',
    'the parameter to is missing',
  ),
  401: text(
    'The token is missing, unknown, or the token of a route of another kind',
    'the token is not the token of a kannel route',
  ),
  403: text('The route is disabled, or may not touch the account named', 'the route kannel-eu is disabled'),
  503: text(
    'The database is unavailable; the gateway retries',
    'the database is unavailable; retry shortly',
    ['Retry-After'],
  ),
};

/** What only the form (POST) operations can be refused for, before any parameter is read. */
const formRefusals = {
  413: text('The body is larger than 64 KiB', 'the body is too large'),
  415: text(
    'The body is not an application/x-www-form-urlencoded form',
    'send parameters in the query string or as application/x-www-form-urlencoded',
  ),
};

const p = (description: string, constraints: Record<string, unknown> = {}) =>
  Type.Optional(Type.String({ description, ...constraints }));
const direct = {
  account: p('The account id, an existing account (the dependable form, with messageid and to)', {
    format: 'uuid',
    pattern: PATTERNS.uuid,
  }),
  messageid: p('The message id the provider ingested', { pattern: PATTERNS.messageId }),
  to: p('The recipient, as ingested', { pattern: PATTERNS.phone }),
};
const token = Type.String({ description: 'The route’s intake token', pattern: PATTERNS.intakeToken });
const KannelParams = Type.Object({
  token,
  type: p(
    '%d: 1 delivered, 2 not delivered, 4 buffered, 8 SMSC accepted, 16 SMSC rejected (a stat: in reply wins; without either the receipt cannot be read)',
    { enum: ['1', '2', '4', '8', '16'] },
  ),
  reply: p('%A: the SMSC’s receipt text, ACK/ or NACK/…'),
  ...direct,
  carrierId: p(
    'The SMSC’s message id of the recipient (sms.carrier.messageId on ingest), when account, messageid and to are not given',
    { pattern: PATTERNS.carrierMessageId },
  ),
});
const JasminParams = Type.Object({
  token,
  id: p(
    'Jasmin’s message id: the carrier id of the recipient on this route (sms.carrier.messageId on ingest), used when account, messageid and to are not given',
    { pattern: PATTERNS.carrierMessageId },
  ),
  message_status: p(
    'ESME_ROK / ESME_R… (level 1 only), DELIVRD, UNDELIV, … (level 2); without it the receipt cannot be read',
    { pattern: `^(?:ESME_R[A-Z0-9_]+|${Object.keys(STAT_TEXTS).join('|')})$` },
  ),
  level: p('1: the SMSC’s answer to the submission; 2 or 3: the receipt', { enum: ['1', '2', '3'] }),
  connector: p('The connector the message left by'),
  subdate: p('YYMMDDhhmm[ss] in the route’s zone'),
  donedate: p('YYMMDDhhmm[ss] in the route’s zone: the drTime'),
  sub: p('sub:'),
  dlvrd: p('dlvrd:'),
  err: p('The carrier error, looked up in the route’s errorMap'),
  text: p('text:'),
  ...direct,
});

interface Adapter {
  kind: RouteKind;
  path: string;
  operation: string;
  summary: string;
  params: typeof KannelParams | typeof JasminParams;
  answer: string;
  /** The parameter naming the recipient by the carrier id the route gave it (CONTRACT §12 "Correlation"). */
  carrierParam: string;
  translate(
    params: Record<string, string>,
    arrivedAt: Date,
    route: { timezone: string; errorMap: Record<string, string> },
  ): Translation;
}

const ADAPTERS: Adapter[] = [
  {
    kind: 'kannel',
    path: '/intake/v1/kannel',
    operation: 'intakeKannel',
    summary: 'A receipt from Kannel (what its dlr-url fetches)',
    params: KannelParams,
    answer: 'OK',
    carrierParam: 'carrierId',
    translate: (params, arrivedAt, route) =>
      fromKannel({ type: params.type, reply: params.reply, carrierId: params.carrierId, arrivedAt, route }),
  },
  {
    kind: 'jasmin',
    path: '/intake/v1/jasmin',
    operation: 'intakeJasmin',
    summary: 'A receipt from Jasmin (its HTTP DLR)',
    params: JasminParams,
    // Jasmin redelivers a DLR unless it gets exactly this.
    answer: 'ACK/Jasmin',
    // Jasmin's id is the carrier id on the route.
    carrierParam: 'id',
    translate: (params, arrivedAt, route) =>
      fromJasmin({
        id: params.id,
        message_status: params.message_status,
        level: params.level,
        donedate: params.donedate,
        subdate: params.subdate,
        err: params.err,
        sub: params.sub,
        dlvrd: params.dlvrd,
        text: params.text,
        connector: params.connector,
        id_smsc: params.id_smsc,
        arrivedAt,
        route,
      }),
  },
];

/**
 * `GET|POST /intake/v1/kannel` and `/intake/v1/jasmin` — receipts from the provider's gateway (CONTRACT §12),
 * authenticated by a route's token. The translation is domain/intake's; applying it is http/intake-adapter's.
 */
export async function intakeRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  acceptForms(app);
  registerIntakeErrors(app);
  const groups = intakeGroups(ctx);
  for (const adapter of ADAPTERS) {
    const handler = async (request: FastifyRequest) => {
      const params = readParams(request);
      const route = await routeOfToken(ctx, params.token, adapter.kind);
      // HEAD (which Fastify serves with the GET handler) tells whether the request would be taken, and writes nothing.
      if (request.method === 'HEAD') return adapter.answer;
      const translated = adapter.translate(params, ctx.now(), route);
      await applyIntakeReceipt(ctx, groups, route, translated, params, adapter.carrierParam);
      return adapter.answer;
    };
    for (const method of ['GET', 'POST'] as const) {
      app.route({
        method,
        url: adapter.path,
        bodyLimit: 64 * 1024,
        validatorCompiler: describedOnly,
        schema: {
          operationId: `${adapter.operation}${method === 'GET' ? '' : 'Form'}`,
          summary: `${adapter.summary}${method === 'POST' ? ', parameters as a form' : ''}`,
          description:
            'Authenticated by the route’s token in the `token` query parameter (stripped from logs). Answers are text/plain.',
          tags: ['intake'],
          security: [{ intakeToken: [] }],
          querystring: method === 'GET' ? adapter.params : Type.Object({ token }),
          ...(method === 'POST'
            ? { body: { content: { 'application/x-www-form-urlencoded': { schema: adapter.params } } } }
            : {}),
          response: {
            200: text('Stored or parked', adapter.answer, [], Type.Literal(adapter.answer)),
            ...refusals,
            ...(method === 'POST' ? formRefusals : {}),
            ...problemResponses([...PROTOCOL_STATUSES]),
          },
        },
        handler: async (request, reply) => plain(reply, await handler(request)),
      });
    }
    methodNotAllowed(app, adapter.path, ['GET', 'POST']);
  }
}
