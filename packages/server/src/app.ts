import { randomUUID } from 'node:crypto';
import type { Writable } from 'node:stream';
import swagger from '@fastify/swagger';
import Fastify, { type FastifyInstance, LogController } from 'fastify';
import type { Config } from './config.js';
import type { AppContext } from './context.js';
import type { Limits } from './limits/limits.js';
import { MemoryLimits } from './limits/memory-limits.js';
import { registerAccessLog } from './plugins/access-log.js';
import { registerDeprecationHeaders } from './plugins/deprecation.js';
import { registerErrorHandling } from './plugins/error-handling.js';
import { registerProtocol, requestIdFrom } from './plugins/protocol.js';
import { adminAccountRoutes } from './routes/admin-accounts.js';
import { requireAdminToken } from './routes/admin-auth.js';
import { adminIngestRoutes } from './routes/admin-ingest.js';
import { contactMessagesV1Routes } from './routes/contact-messages-v1.js';
import { dlrRoutes } from './routes/dlr.js';
import { healthRoutes } from './routes/health.js';
import { messagesRoutes } from './routes/messages.js';
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

/** Bodies are accepted only by the operator API: 5 MiB holds a batch of 1000 generous items. */
const BODY_LIMIT = 5 * 1024 * 1024;

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
    pepper: options.pepper,
    limits: options.limits ?? new MemoryLimits(config, clock),
    now: () => new Date(clock()),
  };

  const app = Fastify({
    logger: {
      level: config.logLevel,
      ...(options.logStream ? { stream: options.logStream } : {}),
    },
    // Requests are logged once, by the access log, with credentials removed from the URL.
    logController: new LogController({ disableRequestLogging: true }),
    trustProxy: trustProxyOption(config.trustProxy),
    bodyLimit: BODY_LIMIT,
    requestIdHeader: false,
    genReqId: (req) => requestIdFrom(req.headers['x-request-id']) ?? randomUUID(),
    routerOptions: { ignoreTrailingSlash: false, maxParamLength: 200 },
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, allErrors: true } },
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Waybill',
        version: '0.1.0',
        description: 'Delivery receipts and message history of SMS and chat-channel messages.',
      },
      components: {
        securitySchemes: {
          basic: { type: 'http', scheme: 'basic', description: 'key:secret' },
          adminToken: { type: 'http', scheme: 'bearer', description: 'WAYBILL_ADMIN_TOKEN' },
        },
      },
    },
  });

  registerProtocol(app);
  registerErrorHandling(app);
  registerDeprecationHeaders(app, config.v1Deprecated, config.v1Sunset);
  if (config.accessLog) registerAccessLog(app);

  await app.register(healthRoutes, ctx);
  await app.register(dlrRoutes, ctx);
  await app.register(contactMessagesV1Routes, ctx);
  await app.register(messagesRoutes, ctx);
  const adminToken = config.adminToken;
  if (adminToken) {
    await app.register(
      async (admin) => {
        requireAdminToken(admin, adminToken);
        await admin.register(adminAccountRoutes, ctx);
        await admin.register(adminIngestRoutes, ctx);
      },
      { prefix: '/admin/v1' },
    );
  }

  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  return app;
}
