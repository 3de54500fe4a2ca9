import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../domain/errors.js';
import type { Account } from '../domain/records.js';
import { accountOr404 } from '../http/accounts.js';
import { routeDetailWire } from '../http/intake-routes.js';
import {
  createAccount,
  deleteServedAccount,
  rotateServedSecret,
  updateServedAccount,
} from '../operations/accounts.js';
import { patchFromForm } from './account-form.js';
import { rotateAndShowCallbackSecret } from './callback-secret.js';
import { operatorOnly } from './guards.js';
import { type ConsoleDeps, field, page } from './render.js';

/** The fields of the operator's account form. */
const ACCOUNT_FIELDS = [
  'name',
  'ipWhitelist',
  'dlrQueryEnabled',
  'balance',
  'creditLimit',
  'callbackUrl',
  'callbackEnabled',
] as const;

/** The most accounts one search shows: beyond that, search by name. */
const SEARCH_LIMIT = 100;

const idOf = (request: FastifyRequest) => (request.params as { id: string }).id;

/**
 * Page 6, the operator's: accounts (search, create, edit, rotate secrets, delete after typing its name), intake
 * routes with their live status, and health. Every change goes through the same operations as the operator API
 * (operations/accounts.ts), so a rotation or a deletion here ends the account's sessions as one there does.
 */
export async function operatorPages(app: FastifyInstance, { ctx }: ConsoleDeps): Promise<void> {
  const opts = { schema: { hide: true }, preHandler: operatorOnly };

  app.get('/operator/accounts', opts, async (request, reply) => {
    const q = field(request.query, 'q') ?? null;
    const accounts = await ctx.store.searchAccounts(q, SEARCH_LIMIT + 1);
    return page(request, reply, 'operator-accounts', {
      title: 'Accounts',
      q: q ?? '',
      accounts: accounts.slice(0, SEARCH_LIMIT),
      more: accounts.length > SEARCH_LIMIT,
      notice: field(request.query, 'notice'),
    });
  });

  app.post('/operator/accounts', opts, async (request, reply) => {
    const patch = patchFromForm(request.body, ['name', 'ipWhitelist', 'callbackUrl']);
    const created = await createAccount(
      ctx.store,
      ctx.pepper,
      { ...patch, name: patch.name ?? '' },
      ctx.now(),
    );
    ctx.accounts.forget(created.account.key);
    // Shown on this answer only (no redirect, never stored): CONTRACT §13 "a secret is shown once".
    return page(
      request,
      reply,
      'secret',
      {
        title: 'Account created',
        account: created.account,
        back: `/console/operator/accounts/${created.account.id}`,
        shown: [
          ['Key', created.account.key],
          ['Secret', created.secret],
          ['Callback secret', created.callbackSecret],
        ],
      },
      201,
    );
  });

  app.get('/operator/accounts/:id', opts, async (request, reply) => {
    const account = await accountOr404(ctx, idOf(request));
    return page(request, reply, 'operator-account', {
      title: account.name,
      account,
      notice: field(request.query, 'notice'),
    });
  });

  app.post('/operator/accounts/:id', opts, async (request, reply) => {
    const account = await accountOr404(ctx, idOf(request));
    let updated: Account | null;
    try {
      updated = await updateServedAccount(ctx, account, patchFromForm(request.body, ACCOUNT_FIELDS));
    } catch (error) {
      if (!(error instanceof ApiError) || error.problem !== 'invalid_request') throw error;
      return page(
        request,
        reply,
        'operator-account',
        { title: account.name, account, error: error.message },
        400,
      );
    }
    if (!updated) throw new ApiError('not_found', 'This account no longer exists.');
    return reply.redirect(`/console/operator/accounts/${updated.id}?notice=saved`, 303);
  });

  app.post('/operator/accounts/:id/secret', opts, async (request, reply) => {
    const rotated = await rotateServedSecret(ctx, await accountOr404(ctx, idOf(request)));
    if (!rotated) throw new ApiError('not_found', 'This account no longer exists.');
    return page(request, reply, 'secret', {
      title: 'New secret',
      account: rotated.account,
      back: `/console/operator/accounts/${rotated.account.id}`,
      shown: [['Secret', rotated.secret]],
      note: 'The old secret stopped working, and every console session of the account ended.',
    });
  });

  app.post('/operator/accounts/:id/callback-secret', opts, async (request, reply) => {
    const account = await accountOr404(ctx, idOf(request));
    return rotateAndShowCallbackSecret(
      ctx,
      request,
      reply,
      account.id,
      `/console/operator/accounts/${account.id}`,
    );
  });

  app.post('/operator/accounts/:id/delete', opts, async (request, reply) => {
    const account = await accountOr404(ctx, idOf(request));
    if (field(request.body, 'confirm') !== account.name) {
      return page(
        request,
        reply,
        'operator-account',
        { title: account.name, account, error: 'Type the account’s name exactly to delete it.' },
        400,
      );
    }
    await deleteServedAccount(ctx, account);
    return reply.redirect('/console/operator/accounts?notice=deleted', 303);
  });

  app.get('/operator/routes', opts, async (request, reply) => {
    const routes = await Promise.all(
      (await ctx.store.listIntakeRoutes()).map(async (route) =>
        routeDetailWire(
          route,
          ctx.metrics.intakeCounts(route.name),
          route.kind === 'smpp' ? await ctx.bindStatus(route) : null,
        ),
      ),
    );
    return page(request, reply, 'operator-routes', { title: 'Routes', routes });
  });

  app.get('/operator/health', opts, async (request, reply) => {
    const now = ctx.now();
    let database: { ok: boolean; detail: string };
    try {
      await ctx.store.ping();
      database = { ok: true, detail: 'answering' };
    } catch (error) {
      database = { ok: false, detail: error instanceof Error ? error.name : 'unreachable' };
    }
    const [stats, nextDue] = database.ok
      ? await Promise.all([ctx.store.outboxStats(), ctx.store.nextDeliveryDue()])
      : [null, null];
    // The relay's lag: how long the oldest due delivery has been waiting (0 when nothing is overdue).
    const lagSeconds =
      nextDue === null ? 0 : Math.max(0, Math.round((now.getTime() - nextDue.getTime()) / 1000));
    return page(request, reply, 'operator-health', {
      title: 'Health',
      engine: ctx.store.engine,
      database,
      stats,
      lagSeconds,
      relay: ctx.config.callbackRelay,
      replicas: ctx.store.readReplicas?.status() ?? [],
    });
  });
}
