import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../context.js';
import { ApiError } from '../domain/errors.js';
import { rotateCallbackSecret } from '../operations/accounts.js';
import { page } from './render.js';

/**
 * Rotates an account's callback secret (the operator API's operation) and answers with the new one: shown on
 * this answer only (CONTRACT §13: once, after its rotation, and never again). Settings and the operator's
 * account page both offer it; `back` is where each sends the person afterwards.
 */
export async function rotateAndShowCallbackSecret(
  ctx: AppContext,
  request: FastifyRequest,
  reply: FastifyReply,
  accountId: string,
  back: string,
) {
  const rotated = await rotateCallbackSecret(
    ctx.store,
    ctx.pepper,
    accountId,
    ctx.now(),
    ctx.config.callbackSecretGraceSeconds,
  );
  if (!rotated) throw new ApiError('not_found', 'This account no longer exists.');
  return page(request, reply, 'secret', {
    title: 'New callback secret',
    account: rotated.account,
    back,
    shown: [['Callback secret', rotated.callbackSecret]],
    note: `The previous one keeps signing beside it for ${ctx.config.callbackSecretGraceSeconds} s.`,
  });
}
