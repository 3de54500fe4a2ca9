import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../domain/errors.js';
import type { Account } from '../domain/records.js';
import { updateServedAccount } from '../operations/accounts.js';
import { sendTestDelivery } from '../operations/test-delivery.js';
import { patchFromForm } from './account-form.js';
import { rotateAndShowCallbackSecret } from './callback-secret.js';
import { pageAccount, signedOnly } from './guards.js';
import { type ConsoleDeps, field, page } from './render.js';

/** What an account's staff may change about it themselves. */
const SETTINGS_FIELDS = ['callbackUrl', 'callbackEnabled', 'ipWhitelist'] as const;

/**
 * Page 5: the callback URL and its enabled flag, the callback secret's rotation, a test delivery, the IP
 * whitelist; through the operator API's own checks and operations.
 */
export async function settingsPages(app: FastifyInstance, { ctx }: ConsoleDeps): Promise<void> {
  const opts = { schema: { hide: true }, preHandler: signedOnly };
  const settingsUrl = (request: FastifyRequest, account: Account, notice?: string) => {
    const query = new URLSearchParams(notice === undefined ? {} : { notice });
    if (request.signed?.kind === 'operator') query.set('account', account.id);
    return query.size === 0 ? '/console/settings' : `/console/settings?${query}`;
  };

  app.get('/settings', opts, async (request, reply) => {
    const account = await pageAccount(ctx, request);
    return page(request, reply, 'settings', {
      title: 'Settings',
      account,
      notice: field(request.query, 'notice'),
    });
  });

  app.post('/settings', opts, async (request, reply) => {
    const account = await pageAccount(ctx, request);
    let updated: Account | null;
    try {
      updated = await updateServedAccount(ctx, account, patchFromForm(request.body, SETTINGS_FIELDS));
    } catch (error) {
      if (!(error instanceof ApiError) || error.problem !== 'invalid_request') throw error;
      return page(request, reply, 'settings', { title: 'Settings', account, error: error.message }, 400);
    }
    if (!updated) throw new ApiError('not_found', 'This account no longer exists.');
    return reply.redirect(settingsUrl(request, updated, 'saved'), 303);
  });

  app.post('/settings/callback-secret', opts, async (request, reply) => {
    const account = await pageAccount(ctx, request);
    return rotateAndShowCallbackSecret(ctx, request, reply, account.id, settingsUrl(request, account));
  });

  app.post('/settings/test-delivery', opts, async (request, reply) => {
    const account = await pageAccount(ctx, request);
    const result = await sendTestDelivery(ctx, account);
    return page(request, reply, 'settings', { title: 'Settings', account, test: result });
  });
}
