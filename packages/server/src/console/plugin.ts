import { readFileSync } from 'node:fs';
import cookie from '@fastify/cookie';
import formbody from '@fastify/formbody';
import view from '@fastify/view';
import { Eta } from 'eta';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../context.js';
import { ApiError } from '../domain/errors.js';
import { StoreUnavailableError } from '../store/store.js';
import { contactPages } from './contacts.js';
import { deliveryPages } from './deliveries.js';
import { setConsoleHeaders } from './headers.js';
import { messagePages } from './messages.js';
import { operatorPages } from './operator.js';
import { ASSETS_DIR, type ConsoleDeps, errorPage, page, VIEWS_DIR } from './render.js';
import { reviewPages } from './review.js';
import { ConsoleSessions, CSRF_FIELD, sameOrigin, sameString } from './session.js';
import { settingsPages } from './settings.js';
import { signInPages } from './sign-in.js';

/** Forms are small: a whitelist of a few hundred entries is the largest. */
const CONSOLE_BODY_LIMIT = 64 * 1024;

/** The console's own files, read once: one stylesheet and one small script. */
const ASSETS: Record<string, { type: string; body: Buffer }> = {
  'console.css': { type: 'text/css; charset=utf-8', body: readFileSync(`${ASSETS_DIR}console.css`) },
  'console.js': { type: 'text/javascript; charset=utf-8', body: readFileSync(`${ASSETS_DIR}console.js`) },
};

/** Paths a POST may reach without a session: the sign-in forms, which carry a token of their own. */
const SIGN_IN_PATHS = new Set(['/console/sign-in', '/console/sign-in/operator']);

/**
 * The console (CONTRACT §13): server-rendered pages under /console for an account's staff and the operator.
 * The headers hook is the root's onSend, so that every answer under /console carries them: the root's 404s and
 * the refusals of hooks that run before any of the console's (an overlong request line, a missing Host) included;
 * the router's own refusals (a URL it cannot decode) run no hook and get them in app.ts's frameworkErrors.
 */
export async function registerConsole(app: FastifyInstance, ctx: AppContext): Promise<void> {
  app.addHook('onSend', (request, reply, payload, done) => {
    setConsoleHeaders(request.url, reply);
    done(null, payload);
  });
  await app.register((scope) => consoleScope(scope, ctx), { prefix: '/console' });
}

async function consoleScope(app: FastifyInstance, ctx: AppContext): Promise<void> {
  const sessions = new ConsoleSessions(ctx);
  const deps: ConsoleDeps = { ctx, sessions };

  await app.register(cookie);
  await app.register(formbody, { bodyLimit: CONSOLE_BODY_LIMIT });
  await app.register(view, {
    engine: { eta: new Eta({ views: VIEWS_DIR, cache: true }) },
    templates: VIEWS_DIR,
    production: true,
  });
  app.decorateRequest('signed', null);

  app.addHook('onRequest', async (request) => {
    // Assets are the same for everyone: fetching one neither needs nor extends a session.
    if (!request.url.startsWith('/console/assets/')) request.signed = await sessions.resume(request);
  });
  // Every state change is a POST from this origin carrying the session's token (the sign-in forms: the sign-in
  // cookie's), checked before any handler runs.
  app.addHook('preHandler', async (request) => {
    if (request.method !== 'POST') return;
    if (!sameOrigin(request)) throw new ApiError('ip_not_allowed', 'this form was not sent from this site');
    const presented = (request.body as Record<string, unknown> | undefined)?.[CSRF_FIELD];
    const path = request.url.split('?')[0] ?? '';
    const ok = SIGN_IN_PATHS.has(path)
      ? sessions.signInTokenOk(request, presented)
      : request.signed !== null &&
        typeof presented === 'string' &&
        sameString(request.signed.csrf, presented);
    if (!ok)
      throw new ApiError(
        'ip_not_allowed',
        'the form has expired or did not come from this console; reload it',
      );
  });

  app.setNotFoundHandler((request, reply) =>
    renderError(request, reply, errorPage('not_found', 'There is no such page in the console.')),
  );
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof ApiError)
      return renderError(request, reply, errorPage(error.problem, error.message));
    if (error instanceof StoreUnavailableError) {
      request.log.warn({ err: error }, 'database unavailable');
      return renderError(
        request,
        reply,
        errorPage('unavailable', 'The database is unavailable; retry shortly.'),
      );
    }
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE')
      return renderError(request, reply, errorPage('payload_too_large', 'The form is too large.'));
    if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE')
      return renderError(
        request,
        reply,
        errorPage('unsupported_media_type', 'Send the form as a browser does.'),
      );
    request.log.error({ err: error }, 'console error');
    return renderError(request, reply, errorPage('internal', 'Something went wrong on our side.'));
  });

  app.get('/assets/:name', { schema: { hide: true } }, async (request, reply) => {
    const asset = ASSETS[(request.params as { name: string }).name];
    if (!asset) throw new ApiError('not_found', 'no such file');
    return reply.type(asset.type).send(asset.body);
  });

  await signInPages(app, deps);
  await messagePages(app, deps);
  await contactPages(app, deps);
  await deliveryPages(app, deps);
  await reviewPages(app, deps);
  await settingsPages(app, deps);
  await operatorPages(app, deps);
}

function renderError(
  request: FastifyRequest,
  reply: FastifyReply,
  error: { status: number; title: string; detail: string },
): FastifyReply {
  return page(request, reply, 'error', { title: error.title, detail: error.detail }, error.status);
}
