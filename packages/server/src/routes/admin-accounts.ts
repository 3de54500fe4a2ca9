import type { FastifyInstance } from 'fastify';
import { type Static, Type } from 'typebox';
import type { AppContext } from '../context.js';
import { ApiError } from '../domain/errors.js';
import { isUuid } from '../domain/formats.js';
import { allowlistEntryProblem } from '../domain/ip-allowlist.js';
import type { Account, AccountPatch } from '../domain/records.js';
import { createAccount, rotateSecret } from '../operations/accounts.js';
import { methodNotAllowed } from '../plugins/protocol.js';
import { problemResponses, Timestamp } from './schemas.js';

const AccountSchema = Type.Object({
  id: Type.String({ format: 'uuid' }),
  name: Type.String(),
  key: Type.String(),
  ipWhitelist: Type.Array(Type.String()),
  dlrQueryEnabled: Type.Boolean(),
  balance: Type.Number(),
  creditLimit: Type.Number(),
  callbackUrl: Type.Union([Type.String(), Type.Null()]),
  createdAt: Timestamp,
});
const AccountWithSecretSchema = Type.Object({
  ...AccountSchema.properties,
  secret: Type.String({ description: 'Shown only now and at rotation' }),
});
const CreatedAccountSchema = Type.Object({
  ...AccountWithSecretSchema.properties,
  callbackSecret: Type.String({ description: 'whsec_… key that signs callbacks' }),
});

const settable = {
  name: Type.String({ minLength: 1, maxLength: 200 }),
  ipWhitelist: Type.Array(Type.String({ maxLength: 64 }), {
    maxItems: 1000,
    description: 'IPv4/IPv6 addresses and CIDR ranges; empty allows every caller',
  }),
  dlrQueryEnabled: Type.Boolean(),
  balance: Type.Number(),
  creditLimit: Type.Number(),
  callbackUrl: Type.Union([Type.String({ maxLength: 2048 }), Type.Null()]),
};
const CreateBody = Type.Object(
  {
    name: settable.name,
    ipWhitelist: Type.Optional(settable.ipWhitelist),
    dlrQueryEnabled: Type.Optional(settable.dlrQueryEnabled),
    balance: Type.Optional(settable.balance),
    creditLimit: Type.Optional(settable.creditLimit),
    callbackUrl: Type.Optional(settable.callbackUrl),
  },
  { additionalProperties: false },
);
const PatchBody = Type.Object(
  {
    name: Type.Optional(settable.name),
    ipWhitelist: Type.Optional(settable.ipWhitelist),
    dlrQueryEnabled: Type.Optional(settable.dlrQueryEnabled),
    balance: Type.Optional(settable.balance),
    creditLimit: Type.Optional(settable.creditLimit),
    callbackUrl: Type.Optional(settable.callbackUrl),
  },
  { additionalProperties: false },
);
const IdParams = Type.Object({ id: Type.String({ description: 'Account UUID' }) });

/** Rejects what the schema cannot express: whitelist entries and callback URLs. */
function checkSettable(body: { name?: string; ipWhitelist?: string[]; callbackUrl?: string | null }): void {
  if (body.name !== undefined && /\p{Cc}/u.test(body.name)) {
    throw new ApiError('invalid_request', 'name must not contain control characters');
  }
  for (const entry of body.ipWhitelist ?? []) {
    const problem = allowlistEntryProblem(entry);
    if (problem) throw new ApiError('invalid_request', `ipWhitelist: ${problem}`);
  }
  if (typeof body.callbackUrl === 'string') {
    let url: URL | null = null;
    try {
      url = new URL(body.callbackUrl);
    } catch {
      // reported below
    }
    if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:')) {
      throw new ApiError('invalid_request', 'callbackUrl must be an absolute http or https URL');
    }
  }
}

const wire = (a: Account) => ({ ...a, createdAt: a.createdAt.toISOString() });

/** Loads the account of the path, or answers 404. */
export async function accountOr404(ctx: AppContext, id: string): Promise<Account> {
  const account = isUuid(id) ? await ctx.store.getAccount(id.toLowerCase()) : null;
  if (!account) throw new ApiError('not_found', `no account ${id}`);
  return account;
}

/** `/admin/v1/accounts…` — create, read, change, rotate the secret (CONTRACT §5). */
export async function adminAccountRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  const tags = ['operator'];
  const security = [{ adminToken: [] }];
  app.post(
    '/accounts',
    {
      schema: {
        summary: 'Create an account; its secret and callbackSecret are shown only in this answer',
        tags,
        security,
        body: CreateBody,
        response: { 201: CreatedAccountSchema, ...problemResponses(400, 401) },
      },
    },
    async (request, reply) => {
      const body = request.body as Static<typeof CreateBody>;
      checkSettable(body);
      const created = await createAccount(ctx.store, ctx.pepper, body, ctx.now());
      return reply
        .code(201)
        .send({ ...wire(created.account), secret: created.secret, callbackSecret: created.callbackSecret });
    },
  );
  methodNotAllowed(app, '/accounts', ['POST']);

  app.get(
    '/accounts/:id',
    {
      schema: {
        summary: 'Read an account',
        tags,
        security,
        params: IdParams,
        response: { 200: AccountSchema, ...problemResponses(401, 404) },
      },
    },
    async (request) => wire(await accountOr404(ctx, (request.params as { id: string }).id)),
  );

  app.patch(
    '/accounts/:id',
    {
      schema: {
        summary: 'Change the given fields (callbackUrl: null clears it)',
        tags,
        security,
        params: IdParams,
        body: PatchBody,
        response: { 200: AccountSchema, ...problemResponses(400, 401, 404) },
      },
    },
    async (request) => {
      const { id } = await accountOr404(ctx, (request.params as { id: string }).id);
      const body = request.body as Static<typeof PatchBody>;
      checkSettable(body);
      const patch: AccountPatch = {};
      for (const [field, value] of Object.entries(body)) {
        if (value !== undefined) (patch as Record<string, unknown>)[field] = value;
      }
      const updated = await ctx.store.updateAccount(id, patch);
      if (!updated) throw new ApiError('not_found', `no account ${id}`);
      return wire(updated);
    },
  );
  methodNotAllowed(app, '/accounts/:id', ['GET', 'PATCH']);

  app.post(
    '/accounts/:id/secret',
    {
      schema: {
        summary: 'Rotate the secret: the old one stops working and any lockout of the key is cleared',
        tags,
        security,
        params: IdParams,
        response: { 200: AccountWithSecretSchema, ...problemResponses(401, 404) },
      },
    },
    async (request) => {
      const { id } = await accountOr404(ctx, (request.params as { id: string }).id);
      const rotated = await rotateSecret(ctx.store, ctx.pepper, id);
      if (!rotated) throw new ApiError('not_found', `no account ${id}`);
      await ctx.limits.clear(id);
      return { ...wire(rotated.account), secret: rotated.secret };
    },
  );
  methodNotAllowed(app, '/accounts/:id/secret', ['POST']);
}
