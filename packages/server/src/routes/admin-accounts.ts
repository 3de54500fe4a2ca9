import type { FastifyInstance } from 'fastify';
import type { Static } from 'typebox';
import type { AppContext } from '../context.js';
import { ApiError } from '../domain/errors.js';
import type { AccountPatch } from '../domain/records.js';
import {
  AccountSchema,
  AccountWithSecretSchema,
  accountOr404,
  accountWire,
  CreateBody,
  CreatedAccountSchema,
  checkSettable,
  IdParams,
  PatchBody,
} from '../http/accounts.js';
import { methodNotAllowed } from '../http/protocol.js';
import { adminProblems, BODY_STATUSES, headers, ref, response, SECURITY } from '../http/schemas.js';
import {
  createAccount,
  deleteServedAccount,
  rotateServedSecret,
  updateServedAccount,
} from '../operations/accounts.js';

/** `/admin/v1/accounts…` — create, read, change, delete, rotate the secret (CONTRACT §5). */
export async function adminAccountRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  const tags = ['operator'];
  const security = SECURITY.admin;
  app.post(
    '/accounts',
    {
      schema: {
        operationId: 'createAccount',
        summary: 'Create an account; its secret and callbackSecret are shown only in this answer',
        tags,
        security,
        body: ref(CreateBody),
        response: {
          201: response('The account, with its secret and callback secret', ref(CreatedAccountSchema)),
          ...adminProblems(BODY_STATUSES),
        },
      },
    },
    async (request, reply) => {
      const body = checkSettable(request.body as Static<typeof CreateBody>);
      const created = await createAccount(ctx.store, ctx.pepper, body, ctx.now());
      // Unknown keys are never cached, but a lookup of this key under way may have found none: no later request
      // may share its answer.
      ctx.accounts.forget(created.account.key);
      return reply.code(201).send({
        ...accountWire(created.account),
        secret: created.secret,
        callbackSecret: created.callbackSecret,
      });
    },
  );
  methodNotAllowed(app, '/accounts', ['POST']);

  app.get(
    '/accounts/:id',
    {
      schema: {
        operationId: 'getAccount',
        summary: 'Read an account',
        tags,
        security,
        params: IdParams,
        response: { 200: response('The account', ref(AccountSchema)), ...adminProblems([404]) },
      },
    },
    async (request) => accountWire(await accountOr404(ctx, (request.params as { id: string }).id)),
  );

  app.patch(
    '/accounts/:id',
    {
      schema: {
        operationId: 'updateAccount',
        summary: 'Change the given fields (callbackUrl: null clears it)',
        tags,
        security,
        params: IdParams,
        body: ref(PatchBody),
        response: {
          200: response('The account as changed', ref(AccountSchema)),
          ...adminProblems([...BODY_STATUSES, 404]),
        },
      },
    },
    async (request) => {
      const { id, key } = await accountOr404(ctx, (request.params as { id: string }).id);
      const body = checkSettable(request.body as Static<typeof PatchBody>);
      const patch: AccountPatch = {};
      for (const [field, value] of Object.entries(body)) {
        if (value !== undefined) (patch as Record<string, unknown>)[field] = value;
      }
      const updated = await updateServedAccount(ctx, { id, key }, patch);
      if (!updated) throw new ApiError('not_found', `no account ${id}`);
      return accountWire(updated);
    },
  );
  app.delete(
    '/accounts/:id',
    {
      schema: {
        operationId: 'deleteAccount',
        summary:
          'Delete the account and all its data (messages, contacts, receipt events, deliveries, parked receipts); its key stops working at once',
        tags,
        security,
        params: IdParams,
        response: {
          204: { description: 'Deleted', type: 'null', headers: headers([]) },
          ...adminProblems([404]),
        },
      },
    },
    async (request, reply) => {
      const account = await accountOr404(ctx, (request.params as { id: string }).id);
      if (!(await deleteServedAccount(ctx, account)))
        throw new ApiError('not_found', `no account ${account.id}`);
      return reply.code(204).send();
    },
  );
  methodNotAllowed(app, '/accounts/:id', ['GET', 'PATCH', 'DELETE']);

  app.post(
    '/accounts/:id/secret',
    {
      schema: {
        operationId: 'rotateAccountSecret',
        summary: 'Rotate the secret: the old one stops working and any lockout of the key is cleared',
        tags,
        security,
        params: IdParams,
        response: {
          200: response('The account with its new secret', ref(AccountWithSecretSchema)),
          ...adminProblems([404, 413, 415]),
        },
      },
    },
    async (request) => {
      const account = await accountOr404(ctx, (request.params as { id: string }).id);
      const rotated = await rotateServedSecret(ctx, account);
      if (!rotated) throw new ApiError('not_found', `no account ${account.id}`);
      return { ...accountWire(rotated.account), secret: rotated.secret };
    },
  );
  methodNotAllowed(app, '/accounts/:id/secret', ['POST']);
}
