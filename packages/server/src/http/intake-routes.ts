import { Type } from 'typebox';
import { BIND_TYPES, type IntakeRouteRecord, ROUTE_KINDS } from '../domain/intake/route.js';
import { DR_ERRCODES } from '../domain/vocabulary.js';
import type { BindStatus } from '../intake/smpp-binds.js';
import {
  GARBLED_LIST_EXAMPLE,
  ROUTE_DETAIL_EXAMPLE,
  ROUTE_EXAMPLE,
  ROUTE_LIST_EXAMPLE,
  ROUTE_WITH_TOKEN_EXAMPLE,
} from './examples.js';
import type { IntakeCounts } from './metrics.js';
import { documented } from './openapi-document.js';
import { PATTERNS } from './patterns.js';
import { enumOf, type NamedSchema, ref, Timestamp } from './schemas.js';

/** Wire schemas of the operator API's intake routes (CONTRACT §12), and the route as it is shown. */

const name = Type.String({
  pattern: PATTERNS.routeName,
  description: '1–32 of a-z, 0-9 and -',
  examples: ['kannel-eu'],
});
const kind = enumOf(ROUTE_KINDS, 'smpp: an SMPP bind to an SMSC; kannel, jasmin: the gateway’s HTTP DLR');
// The rules below that the handler checks itself (with its own wording and `param`) are document-only: an
// account id must be a UUID of an existing account, a time zone one this server knows, an errorMap key not
// blank and its value one of the spec's drErrcode values.
const accounts = Type.Array(
  Type.String({ maxLength: 64, ...documented({ format: 'uuid', pattern: PATTERNS.uuid }) }),
  {
    maxItems: 1000,
    description: 'Account ids this route may touch (each an existing account); empty = any account',
  },
);
/** Every IANA zone name this runtime knows (its canonical names, and UTC). */
const TIME_ZONES = [...new Set(['UTC', ...Intl.supportedValuesOf('timeZone')])].sort();
const timezone = Type.String({
  maxLength: 64,
  description:
    'IANA name of the zone of the dates inside receipts (aliases such as US/Eastern are taken too)',
  examples: ['Europe/Berlin'],
  ...documented({ enum: TIME_ZONES }),
});
/** The timezone as shown: the name as it was given (possibly an alias). */
const timezoneShown = Type.String({
  minLength: 1,
  maxLength: 64,
  description: 'IANA name of the zone of the dates inside receipts',
  examples: ['Europe/Berlin'],
});
const errorMap = Type.Record(
  Type.String({ maxLength: 64 }),
  Type.String({ maxLength: 4, ...documented({ enum: Object.keys(DR_ERRCODES) }) }),
  {
    maxProperties: 1000,
    description:
      'Carrier error (as the carrier spells it, not blank) → the spec’s drErrcode; consulted before the default table',
    examples: [{ '027': '2', '0x0B': '3' }],
    ...documented({ propertyNames: { maxLength: 64, pattern: PATTERNS.notBlank } }),
  },
);
const enabled = Type.Boolean({ description: 'A disabled route accepts nothing (and binds nothing)' });

/** No control character in the bind's texts (checked by the handler: 400 naming the field). */
const noControl = documented({ pattern: PATTERNS.noControl });
const smppSettings = {
  host: Type.String({ minLength: 1, maxLength: 253, ...noControl }),
  port: Type.Integer({ minimum: 1, maximum: 65535 }),
  systemId: Type.String({
    minLength: 1,
    maxLength: 15,
    description: 'system_id (SMPP 3.4: at most 15)',
    ...noControl,
  }),
  systemType: Type.String({ maxLength: 12, description: 'system_type (SMPP 3.4: at most 12)', ...noControl }),
  bindType: enumOf(BIND_TYPES),
  tls: Type.Boolean(),
  enquireLinkSeconds: Type.Integer({ minimum: 5, maximum: 3600 }),
};
const password = Type.String({
  maxLength: 8,
  description: 'SMPP 3.4: at most 8 characters. Write-only: never returned',
  ...noControl,
});

const SmppShown = Type.Object(
  {
    host: smppSettings.host,
    port: smppSettings.port,
    systemId: smppSettings.systemId,
    systemType: Type.Optional(smppSettings.systemType),
    bindType: smppSettings.bindType,
    tls: smppSettings.tls,
    enquireLinkSeconds: smppSettings.enquireLinkSeconds,
  },
  { description: 'The bind (the password is never shown)' },
);

const routeFields = {
  name,
  kind,
  accounts,
  timezone: timezoneShown,
  errorMap,
  enabled,
  createdAt: Timestamp,
  smpp: Type.Optional(SmppShown),
};

export const RouteSchema = Type.Object(routeFields, {
  $id: 'IntakeRoute',
  additionalProperties: false,
  description: 'A source of receipts; its password and token are never shown (the token only when made)',
  examples: [ROUTE_EXAMPLE],
});
export const RouteWithTokenSchema = Type.Object(
  {
    ...routeFields,
    token: Type.Optional(
      Type.String({
        description: 'HTTP kinds: wbi_ + 32 base64url characters; shown only now and at rotation',
        pattern: PATTERNS.intakeToken,
        examples: ['wbi_3q2-7wEXAMPLEEXAMPLEEXAMPLEEXAMP'],
      }),
    ),
  },
  {
    $id: 'IntakeRouteWithToken',
    additionalProperties: false,
    description: 'A route with its intake token (HTTP kinds)',
    examples: [ROUTE_WITH_TOKEN_EXAMPLE],
  },
);
const counts = Type.Object(
  {
    matched: Type.Integer({
      minimum: 0,
      description: 'Receipts applied to, or ignored by, a recipient they matched',
    }),
    parked: Type.Integer({ minimum: 0, description: 'Receipts parked: no recipient held them yet' }),
    garbled: Type.Integer({ minimum: 0, description: 'Receipts that could not be read' }),
    ignored: Type.Integer({ minimum: 0, description: 'Messages that were not receipts' }),
  },
  { additionalProperties: false, description: 'Counted by this process since it started' },
);
const status = Type.Object(
  {
    state: enumOf(['bound', 'connecting', 'backoff', 'disabled']),
    since: Type.Union([Timestamp, Type.Null()]),
    lastError: Type.Union([Type.String(), Type.Null()]),
    heldBy: Type.Union([Type.String(), Type.Null()]),
  },
  {
    additionalProperties: false,
    description:
      'SMPP routes: the bind, as the process holding it last published it (heldBy); "connecting" while no process holds it',
  },
);
export const RouteDetailSchema = Type.Object(
  { ...routeFields, counts, status: Type.Optional(status) },
  {
    $id: 'IntakeRouteDetail',
    additionalProperties: false,
    description: 'A route with what it received since start and, for SMPP, its bind',
    examples: [ROUTE_DETAIL_EXAMPLE],
  },
);
export const RouteListSchema = Type.Object(
  { routes: Type.Array(ref(RouteSchema)) },
  {
    $id: 'IntakeRouteList',
    additionalProperties: false,
    description: 'Every route, by name',
    examples: [ROUTE_LIST_EXAMPLE],
  },
);

export const GarbledListSchema = Type.Object(
  {
    garbled: Type.Array(
      Type.Object(
        {
          at: Timestamp,
          text: Type.String({
            description: 'What arrived: an HTTP adapter’s parameters (without the token) as a query string',
          }),
          pdu: Type.Union([Type.String(), Type.Null()], {
            description: 'SMPP: the PDU in hex; null over HTTP',
          }),
        },
        { additionalProperties: false },
      ),
    ),
  },
  {
    $id: 'IntakeGarbledList',
    additionalProperties: false,
    description: 'The last 1,000 unreadable receipts of a route, newest first',
    examples: [GARBLED_LIST_EXAMPLE],
  },
);

export const CreateRouteBody = Type.Object(
  {
    name,
    kind,
    accounts: Type.Optional(accounts),
    timezone: Type.Optional(timezone),
    errorMap: Type.Optional(errorMap),
    enabled: Type.Optional(enabled),
    smpp: Type.Optional(
      Type.Object(
        {
          host: smppSettings.host,
          port: smppSettings.port,
          systemId: smppSettings.systemId,
          password,
          systemType: Type.Optional(smppSettings.systemType),
          bindType: Type.Optional(smppSettings.bindType),
          tls: Type.Optional(smppSettings.tls),
          enquireLinkSeconds: Type.Optional(smppSettings.enquireLinkSeconds),
        },
        { additionalProperties: false, description: 'Required for smpp, refused for the other kinds' },
      ),
    ),
  },
  {
    $id: 'IntakeRouteCreate',
    additionalProperties: false,
    description: 'A new route; unknown fields are refused',
  },
);
export const PatchRouteBody = Type.Object(
  {
    accounts: Type.Optional(accounts),
    timezone: Type.Optional(timezone),
    errorMap: Type.Optional(errorMap),
    enabled: Type.Optional(enabled),
    smpp: Type.Optional(
      Type.Object(
        {
          host: Type.Optional(smppSettings.host),
          port: Type.Optional(smppSettings.port),
          systemId: Type.Optional(smppSettings.systemId),
          password: Type.Optional(password),
          systemType: Type.Optional(Type.Union([smppSettings.systemType, Type.Null()])),
          bindType: Type.Optional(smppSettings.bindType),
          tls: Type.Optional(smppSettings.tls),
          enquireLinkSeconds: Type.Optional(smppSettings.enquireLinkSeconds),
        },
        {
          additionalProperties: false,
          description: 'smpp routes: the settings to change (systemType null clears it)',
        },
      ),
    ),
  },
  {
    $id: 'IntakeRoutePatch',
    additionalProperties: false,
    description: 'The fields to change; name and kind never change',
  },
);
// A name no route can have is a route that does not exist (404), so its pattern is the document's only.
export const RouteNameParams = Type.Object({
  name: Type.String({
    description: 'The route name (1–32 of a-z, 0-9 and -)',
    examples: ['kannel-eu'],
    ...documented({ pattern: PATTERNS.routeName }),
  }),
});

/** The named schemas of the route endpoints, registered in the operator API's scope. */
export const ROUTE_SCHEMAS: readonly NamedSchema[] = [
  RouteSchema,
  RouteWithTokenSchema,
  RouteDetailSchema,
  RouteListSchema,
  GarbledListSchema,
  CreateRouteBody,
  PatchRouteBody,
];

/** The route as the operator API shows it: never a password, a sealed value or a digest. */
export function routeWire(route: IntakeRouteRecord) {
  const { smpp } = route;
  return {
    name: route.name,
    kind: route.kind,
    accounts: route.accounts,
    timezone: route.timezone,
    errorMap: route.errorMap,
    enabled: route.enabled,
    createdAt: route.createdAt.toISOString(),
    ...(smpp === null
      ? {}
      : {
          smpp: {
            host: smpp.host,
            port: smpp.port,
            systemId: smpp.systemId,
            ...(smpp.systemType === null ? {} : { systemType: smpp.systemType }),
            bindType: smpp.bindType,
            tls: smpp.tls,
            enquireLinkSeconds: smpp.enquireLinkSeconds,
          },
        }),
  };
}

/** `GET /admin/v1/routes/{name}`: the route with its counts and, for SMPP, the state of its bind. */
export function routeDetailWire(route: IntakeRouteRecord, counted: IntakeCounts, status: BindStatus | null) {
  return {
    ...routeWire(route),
    counts: counted,
    ...(route.kind === 'smpp' && status !== null ? { status } : {}),
  };
}
