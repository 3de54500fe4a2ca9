import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../domain/errors.js';
import type { Account } from '../domain/records.js';
import { rotateCallbackSecret, updateServedAccount } from '../operations/accounts.js';
import { sendTestDelivery } from '../operations/test-delivery.js';
import { patchFromForm } from './account-form.js';
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
  const settingsUrl = (request: FastifyRequest, account: Account, notice: string) => {
    const query = new URLSearchParams({ notice });
    if (request.signed?.kind === 'operator') query.set('account', account.id);
    return `/console/settings?${query}`;
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
    const rotated = await rotateCallbackSecret(
      ctx.store,
      ctx.pepper,
      account.id,
      ctx.now(),
      ctx.config.callbackSecretGraceSeconds,
    );
    if (!rotated) throw new ApiError('not_found', 'This account no longer exists.');
    // Shown on this answer only (CONTRACT §13: once, after its rotation, and never again).
    return page(request, reply, 'secret', {
      title: 'New callback secret',
      account: rotated.account,
      shown: [['Callback secret', rotated.callbackSecret]],
      note: `The previous one keeps signing beside it for ${ctx.config.callbackSecretGraceSeconds} s.`,
      back: settingsUrl(request, rotated.account, 'rotated').replace(/notice=rotated&?/, ''),
    });
  });

  app.post('/settings/test-delivery', opts, async (request, reply) => {
    const account = await pageAccount(ctx, request);
    const result = await sendTestDelivery(ctx, account);
    return page(request, reply, 'settings', { title: 'Settings', account, test: result });
  });
}
