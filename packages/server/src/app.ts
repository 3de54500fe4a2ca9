import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Writable } from 'node:stream';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import Fastify, { type FastifyInstance, LogController } from 'fastify';
import { AccountCache } from './auth/account-cache.js';
import { requireAdminToken } from './auth/admin-token.js';
import type { Limits } from './auth/limits.js';
import { MemoryLimits } from './auth/memory-limits.js';
import type { Config } from './config.js';
import { setConsoleHeaders } from './console/headers.js';
import { registerConsole } from './console/plugin.js';
import type { AppContext } from './context.js';
import { registerAccessLog } from './http/access-log.js';
import { ACCOUNT_SCHEMAS } from './http/accounts.js';
import { registerCors } from './http/cors.js';
import { registerDeprecationHeaders } from './http/deprecation.js';
import { DOCS_BRANDING } from './http/docs-theme.js';
import { isDraining, registerDrainHeaders } from './http/drain.js';
import { registerErrorHandling } from './http/error-handling.js';
import { ROUTE_SCHEMAS } from './http/intake-routes.js';
import { registerJsonBody } from './http/json-body.js';
import { standardOutput } from './http/log-output.js';
import {
  answerUnmetExpectations,
  clientErrorHandler,
  frameworkErrors,
  HTTP_SERVER_OPTIONS,
} from './http/malformed-http.js';
import { Metrics } from './http/metrics.js';
import { DOCUMENTED, finishDocument } from './http/openapi-document.js';
import { preparedDlr } from './http/prepared-dlr.js';
import { acceptAllMethods, methodNotAllowed, registerProtocol, requestIdFrom } from './http/protocol.js';
import { parseQueryString } from './http/query-string.js';
import { registerRequestMetrics } from './http/request-metrics.js';
import { type NamedSchema, SHARED_SCHEMAS } from './http/schemas.js';
import { cachedSerializerFactory } from './http/serializers.js';
import { leasedStatus } from './intake/smpp-binds.js';
import { adminAccountRoutes } from './routes/admin-accounts.js';
import { adminCallbackRoutes, DELIVERY_SCHEMAS } from './routes/admin-callbacks.js';
import { adminIngestRoutes, INGEST_SCHEMAS } from './routes/admin-ingest.js';
import { adminIntakeRoutes } from './routes/admin-intake-routes.js';
import { contactMessagesV1Routes, V1_PATH } from './routes/contact-messages-v1.js';
import { dlrRoutes, queryDlr } from './routes/dlr.js';
import { healthRoutes } from './routes/health.js';
import { intakeRoutes } from './routes/intake.js';
import { messagesRoutes } from './routes/messages.js';
import { metricsRoutes } from './routes/metrics.js';
import { receiptsRoutes } from './routes/receipts.js';
import type { Store } from './store/store.js';

export interface BuildOptions {
  config: Readonly<Config>;
  store: Store;
  /** Server key (see WAYBILL_PEPPER). */
  pepper: Buffer;
  /** Rate-limit and lockout counters. @default in-process counters built from `config` */
  limits?: Limits;
  /** @default Date.now */
  clock?: () => number;
  /** Where pino writes. @default standard output */
  logStream?: Writable;
  /** Told when a write may have queued callback deliveries (the relay's `poke`). @default nothing */
  deliveriesQueued?: () => void;
  /** The metrics registry, shared with the relay of the same process. @default a registry of its own */
  metrics?: Metrics;
  /** The SMPP binds' status (the binds of this process). @default what the bind leases in the store say */
  bindStatus?: AppContext['bindStatus'];
}

/**
 * Fastify 5 silently ignores a numeric `trustProxy` (it trusts no hop at all), so a hop count, which CONTRACT §7
 * promises, becomes proxy-addr's own rule: the first `hops` addresses from our socket inwards are proxies.
 */
function trustProxyOption(
  trust: Config['trustProxy'],
): boolean | string[] | ((address: string, hop: number) => boolean) {
  if (typeof trust !== 'number') return trust;
  return (_address, hop) => hop < trust;
}

/** Fastify's default: an idle keep-alive connection is closed after this. */
const KEEP_ALIVE_TIMEOUT_MS = 72_000;
/** A whole request (head and a body of up to 5 MiB) must arrive within this; the head alone within 10 s. */
const REQUEST_TIMEOUT_MS = 120_000;

/** Bodies are accepted only by the operator API: 5 MiB holds a batch of 1000 generous items. */
const BODY_LIMIT = 5 * 1024 * 1024;

/** The endpoints a browser may call when WAYBILL_CORS_ORIGINS lists its origin: the SDK's read-only ones. */
const CORS_PATHS = ['/dlr', '/messages', V1_PATH, '/receipts'];

/**
 * The API reference at /docs loads nothing from elsewhere: every asset comes from this server (swagger-ui's
 * bundle ships inside @fastify/swagger-ui), and the policy forbids any other origin outright.
 */
const DOCS_CSP =
  "default-src 'self'; base-uri 'self'; connect-src 'self'; font-src 'self' data:; form-action 'self'; " +
  "frame-ancestors 'self'; img-src 'self' data:; object-src 'none'; script-src 'self'; " +
  "script-src-attr 'none'; style-src 'self' 'unsafe-inline'";

const OPENAPI_TAGS = [
  { name: 'status query', description: 'The delivery result of an SMS request (the spec’s GET /dlr)' },
  { name: 'messages', description: 'Message history: by id, by contact, by campaign' },
  { name: 'receipts', description: 'The receipt feed: every applied receipt, for reconciliation' },
  {
    name: 'operator',
    description:
      'The write side (/admin/v1), enabled by WAYBILL_ADMIN_TOKEN: accounts, ingest, deliveries, intake routes',
  },
  { name: 'intake', description: 'Receipts from the provider’s gateways (Kannel, Jasmin), by intake route' },
  { name: 'operations', description: 'Health, readiness and metrics' },
];

const addSchemas = (app: FastifyInstance, schemas: readonly NamedSchema[]) => {
  for (const schema of schemas) app.addSchema(schema);
};

/** What the app's HTTP server runs for each request: the prepared paths, then Fastify's router. */
export type Dispatch = (request: IncomingMessage, response: ServerResponse) => void;

/** A prepared path: answers the request and returns true, or returns false and leaves it to the router. */
export type PreparedPath = (request: IncomingMessage, response: ServerResponse) => boolean;

const dispatchers = new WeakMap<
  FastifyInstance,
  { dispatch: Dispatch; prepared: PreparedPath | undefined }
>();

function servedBy(app: FastifyInstance) {
  const served = dispatchers.get(app);
  if (served === undefined) throw new Error('not an app of buildApp');
  return served;
}

/**
 * The function the app's server runs for each request. `app.inject()` goes to Fastify's router only; tests that
 * must also take the prepared paths inject through this (light-my-request), as the server's sockets do.
 */
export const dispatchOf = (app: FastifyInstance): Dispatch => servedBy(app).dispatch;

/** The app's prepared paths on their own (undefined when the configuration leaves every request to the router). */
export const preparedPathOf = (app: FastifyInstance): PreparedPath | undefined => servedBy(app).prepared;

/**
 * Builds the service around a store, without listening. Tests drive it with `app.inject()`; `waybill serve`
 * calls `listen()` on it.
 */
export async function buildApp(options: BuildOptions): Promise<FastifyInstance> {
  const { config, store } = options;
  const clock = options.clock ?? Date.now;
  const ctx: AppContext = {
    config,
    store,
    accounts: new AccountCache(store, { ttlMs: config.accountCacheMs }),
    pepper: options.pepper,
    limits: options.limits ?? new MemoryLimits(config, clock),
    now: () => new Date(clock()),
    deliveriesQueued: options.deliveriesQueued ?? (() => {}),
    metrics: options.metrics ?? new Metrics(),
    bindStatus: options.bindStatus ?? ((route) => leasedStatus(store, route)),
  };

  // The prepared paths, answered before Fastify's router (http/prepared-dlr.ts); set once the app exists.
  let prepared: PreparedPath | undefined;
  let routing: Dispatch | undefined;
  const dispatch: Dispatch = (request, response) => {
    if (prepared?.(request, response) !== true) routing?.(request, response);
  };
  const app = Fastify({
    // Fastify's own server, as it would build it, with the prepared paths in front of its router.
    serverFactory: (handler) => {
      routing = handler;
      const server = createServer(HTTP_SERVER_OPTIONS, dispatch);
      server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
      server.requestTimeout = REQUEST_TIMEOUT_MS;
      return server;
    },
    logger: {
      level: config.logLevel,
      stream: options.logStream ?? standardOutput(),
    },
    // Requests are logged once, by the access log, with credentials removed from the URL.
    logController: new LogController({ disableRequestLogging: true }),
    trustProxy: trustProxyOption(config.trustProxy),
    bodyLimit: BODY_LIMIT,
    requestIdHeader: false,
    genReqId: (req) => requestIdFrom(req.headers['x-request-id']) ?? randomUUID(),
    routerOptions: { ignoreTrailingSlash: false, maxParamLength: 200, querystringParser: parseQueryString },
    // No hook runs for the router's own refusals: the console's headers (CONTRACT §13) are added here.
    frameworkErrors: (error, request, reply) => {
      setConsoleHeaders(request.url, reply);
      frameworkErrors(error, request, reply);
    },
    clientErrorHandler,
    keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    requestTimeout: REQUEST_TIMEOUT_MS,
    // A request that arrives while the server drains is served (http/drain.ts), never refused with 503.
    return503OnClosing: false,
    // DOCUMENTED holds constraints for the OpenAPI document only (http/openapi-document.ts).
    ajv: {
      customOptions: { coerceTypes: false, removeAdditional: false, allErrors: true, keywords: [DOCUMENTED] },
    },
    schemaController: { compilersFactory: { buildSerializer: cachedSerializerFactory() } },
  });

  acceptAllMethods(app);
  answerUnmetExpectations(app);

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Waybill',
        version: '0.1.0',
        description:
          'Delivery receipts and message history of SMS and chat-channel messages. Every response carries ' +
          'X-Request-Id and Cache-Control: no-store; errors are RFC 9457 problem details (application/problem+json), ' +
          'except the failures of GET /dlr, which keep the spec’s {code, descr}.',
        license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
      },
      servers: [{ url: '/', description: 'The server that serves this document' }],
      tags: OPENAPI_TAGS.filter((tag) => tag.name !== 'operator' || config.adminToken),
      components: {
        securitySchemes: {
          basic: { type: 'http', scheme: 'basic', description: 'The account key and secret as key:secret' },
          queryKey: {
            type: 'apiKey',
            in: 'query',
            name: 'key',
            description: 'The account key (8 letters and digits); used together with `secret`',
          },
          querySecret: {
            type: 'apiKey',
            in: 'query',
            name: 'secret',
            description: 'The account secret (8 letters and digits); used together with `key`',
          },
          intakeToken: {
            type: 'apiKey',
            in: 'query',
            name: 'token',
            description: 'An intake route’s token (wbi_ + 32 base64url characters)',
          },
          ...(config.adminToken
            ? { adminToken: { type: 'http', scheme: 'bearer', description: 'WAYBILL_ADMIN_TOKEN' } }
            : {}),
        },
      },
    },
    transformObject: (generated) =>
      finishDocument('openapiObject' in generated ? generated.openapiObject : generated.swaggerObject),
    // Named schemas (an `$id`) become components.schemas under that name, referenced wherever they are used.
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) =>
        typeof json.$id === 'string' ? json.$id : `def-${i}`,
    },
  });
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    staticCSP: DOCS_CSP,
    ...DOCS_BRANDING,
    uiConfig: { deepLinking: true, defaultModelsExpandDepth: 0, tryItOutEnabled: false },
  });
  addSchemas(app, SHARED_SCHEMAS);
  // Only the operator API takes bodies, and only JSON: anything else is a 415 naming what was sent, not a
  // string handed to a JSON schema.
  app.removeContentTypeParser('text/plain');
  registerJsonBody(app);

  registerProtocol(app);
  registerDrainHeaders(app);
  registerCors(app, config.corsOrigins, CORS_PATHS);
  registerErrorHandling(app);
  registerDeprecationHeaders(app, config.v1Deprecated, config.v1Sunset);
  if (config.accessLog) registerAccessLog(app);
  registerRequestMetrics(app, ctx.metrics);

  await app.register(healthRoutes, ctx);
  await app.register(metricsRoutes, ctx);
  await app.register(dlrRoutes, ctx);
  await app.register(contactMessagesV1Routes, ctx);
  await app.register(messagesRoutes, ctx);
  await app.register(receiptsRoutes, ctx);
  await app.register(intakeRoutes, ctx);
  const adminToken = config.adminToken;
  if (adminToken) {
    await app.register(
      async (admin) => {
        requireAdminToken(admin, adminToken);
        addSchemas(admin, [...ACCOUNT_SCHEMAS, ...INGEST_SCHEMAS, ...DELIVERY_SCHEMAS, ...ROUTE_SCHEMAS]);
        await admin.register(adminAccountRoutes, ctx);
        await admin.register(adminIngestRoutes, ctx);
        await admin.register(adminCallbackRoutes, ctx);
        await admin.register(adminIntakeRoutes, ctx);
      },
      { prefix: '/admin/v1' },
    );
  }

  // The pages for people (CONTRACT §13); not part of the API document.
  await registerConsole(app, ctx);

  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  methodNotAllowed(app, '/openapi.json', ['GET']);

  // With CORS on, /dlr's answers carry its headers: the route pipeline writes those.
  if (config.corsOrigins.length === 0) {
    prepared = preparedDlr({
      ctx,
      query: queryDlr,
      log: app.log,
      accessLog: config.accessLog,
      trustProxy: trustProxyOption(config.trustProxy),
      draining: () => isDraining(app),
    });
  }
  dispatchers.set(app, { dispatch, prepared });
  return app;
}
