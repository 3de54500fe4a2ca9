import { Type } from 'typebox';
import type { AppContext } from '../context.js';
import { ApiError } from '../domain/errors.js';
import { isUuid } from '../domain/formats.js';
import { allowlistEntryProblem } from '../domain/ip-allowlist.js';
import type { Account } from '../domain/records.js';
import {
  ACCOUNT_CREATE_EXAMPLE,
  ACCOUNT_EXAMPLE,
  ACCOUNT_PATCH_EXAMPLE,
  CALLBACK_SECRET_EXAMPLE,
  SECRET_EXAMPLE,
} from './examples.js';
import { documented } from './openapi-document.js';
import { PATTERNS } from './patterns.js';
import { type NamedSchema, Timestamp } from './schemas.js';

/** The longest callbackUrl stored, before and after normalization (CONTRACT §9). */
const MAX_CALLBACK_URL = 2048;

export const AccountSchema = Type.Object(
  {
    id: Type.String({ format: 'uuid', pattern: PATTERNS.uuid }),
    name: Type.String(),
    key: Type.String({
      description: '8 letters and digits',
      pattern: '^[A-Za-z0-9]{8}$',
      examples: ['DEMOKEY1'],
    }),
    ipWhitelist: Type.Array(Type.String(), {
      description: 'Addresses and CIDR ranges; empty allows everyone',
    }),
    dlrQueryEnabled: Type.Boolean(),
    balance: Type.Number(),
    creditLimit: Type.Number(),
    callbackUrl: Type.Union([Type.String({ format: 'uri', pattern: PATTERNS.callbackUrl }), Type.Null()], {
      description: 'Normalized (WHATWG URL serialization)',
    }),
    callbackEnabled: Type.Boolean({
      description: 'Deliveries are queued only while true; a 410 Gone from the callback turns it off',
    }),
    createdAt: Timestamp,
  },
  {
    $id: 'Account',
    additionalProperties: false,
    description: 'An account; its secrets are shown only when created or rotated',
    examples: [ACCOUNT_EXAMPLE],
  },
);
const secret = Type.String({
  description: 'Shown only now and at rotation',
  pattern: '^[A-Za-z0-9]{8}$',
  examples: ['DEMOSECR'],
});
const callbackSecret = Type.String({
  description: 'whsec_ + base64 of 32 bytes: the key that signs callbacks; shown only now and at rotation',
  pattern: '^whsec_[A-Za-z0-9+/]{43}=$',
});
export const AccountWithSecretSchema = Type.Object(
  { ...AccountSchema.properties, secret },
  {
    $id: 'AccountWithSecret',
    additionalProperties: false,
    description: 'An account with its new secret',
    examples: [{ ...ACCOUNT_EXAMPLE, secret: SECRET_EXAMPLE }],
  },
);
export const CreatedAccountSchema = Type.Object(
  { ...AccountSchema.properties, secret, callbackSecret },
  {
    $id: 'CreatedAccount',
    additionalProperties: false,
    description: 'A new account with its secret and callback secret',
    examples: [{ ...ACCOUNT_EXAMPLE, secret: SECRET_EXAMPLE, callbackSecret: CALLBACK_SECRET_EXAMPLE }],
  },
);
export const AccountWithCallbackSecretSchema = Type.Object(
  { ...AccountSchema.properties, callbackSecret },
  {
    $id: 'AccountWithCallbackSecret',
    additionalProperties: false,
    description: 'An account with its new callback secret',
    examples: [{ ...ACCOUNT_EXAMPLE, callbackSecret: CALLBACK_SECRET_EXAMPLE }],
  },
);

const settable = {
  // No control characters (checkSettable says so in words): a name is shown on one line in logs and the CLI.
  name: Type.String({ minLength: 1, maxLength: 200, ...documented({ pattern: PATTERNS.noControl }) }),
  // An address or a range; that a range has no host bits set is checked in code (checkSettable) and said in words.
  ipWhitelist: Type.Array(
    Type.String({
      maxLength: 64,
      ...documented({
        anyOf: [
          { format: 'ipv4' },
          { format: 'ipv6' },
          { pattern: PATTERNS.ipv4Range },
          { pattern: PATTERNS.ipv6Range },
        ],
      }),
    }),
    {
      maxItems: 1000,
      description:
        'IPv4/IPv6 addresses and CIDR ranges in standard notation (a range with host bits set is refused); empty allows every caller',
    },
  ),
  dlrQueryEnabled: Type.Boolean(),
  balance: Type.Number(),
  creditLimit: Type.Number(),
  // The URL parser judges it (checkSettable): it also takes spellings no pattern describes (`https:\\host`),
  // and stores them normalized, so the pattern is the document's only.
  callbackUrl: Type.Union(
    [
      Type.String({
        maxLength: MAX_CALLBACK_URL,
        ...documented({ format: 'uri', pattern: PATTERNS.callbackUrl }),
      }),
      Type.Null(),
    ],
    { description: 'http or https, at most 2048 characters, no credentials in it; stored normalized' },
  ),
  callbackEnabled: Type.Boolean(),
};
export const CreateBody = Type.Object(
  {
    name: settable.name,
    ipWhitelist: Type.Optional(settable.ipWhitelist),
    dlrQueryEnabled: Type.Optional(settable.dlrQueryEnabled),
    balance: Type.Optional(settable.balance),
    creditLimit: Type.Optional(settable.creditLimit),
    callbackUrl: Type.Optional(settable.callbackUrl),
    callbackEnabled: Type.Optional(settable.callbackEnabled),
  },
  {
    $id: 'AccountCreate',
    additionalProperties: false,
    description: 'A new account; unknown fields are refused',
    examples: [ACCOUNT_CREATE_EXAMPLE],
  },
);
export const PatchBody = Type.Object(
  {
    name: Type.Optional(settable.name),
    ipWhitelist: Type.Optional(settable.ipWhitelist),
    dlrQueryEnabled: Type.Optional(settable.dlrQueryEnabled),
    balance: Type.Optional(settable.balance),
    creditLimit: Type.Optional(settable.creditLimit),
    callbackUrl: Type.Optional(settable.callbackUrl),
    callbackEnabled: Type.Optional(settable.callbackEnabled),
  },
  {
    $id: 'AccountPatch',
    additionalProperties: false,
    description: 'The fields to change; callbackUrl null clears it, null elsewhere is refused',
    examples: [ACCOUNT_PATCH_EXAMPLE],
  },
);
/**
 * The account of the path. A malformed id is an account that does not exist: the contract answers 404 (the
 * same as for an unknown UUID), not 400, so the UUID format is stated in the document only and every operation
 * documents its 404. A client generating ids from the document sends UUIDs, which are accepted (or are unknown:
 * 404); one sending anything else is told 404 — documented either way.
 */
export const IdParams = Type.Object({
  id: Type.String({
    description: 'Account UUID (any case); a malformed one names no account: 404',
    ...documented({ format: 'uuid', pattern: PATTERNS.uuid }),
  }),
});

/** The named schemas of the account routes, registered in the operator API's scope. */
export const ACCOUNT_SCHEMAS: readonly NamedSchema[] = [
  AccountSchema,
  AccountWithSecretSchema,
  CreatedAccountSchema,
  AccountWithCallbackSecretSchema,
  CreateBody,
  PatchBody,
];

/**
 * Rejects what the schema cannot express (whitelist entries and callback URLs) and returns the body with its
 * callbackUrl normalized: the WHATWG serialization (`new URL(x).href`) is what the relay will connect to, so it
 * is what is stored and shown, never a spelling of it (`HTTP://Example.com\\hook` is `http://example.com/hook`).
 */
export function checkSettable<
  T extends { name?: string; ipWhitelist?: string[]; callbackUrl?: string | null },
>(body: T): T {
  if (body.name !== undefined && /\p{Cc}/u.test(body.name)) {
    throw new ApiError('invalid_request', 'name must not contain control characters', { param: 'name' });
  }
  for (const [i, entry] of (body.ipWhitelist ?? []).entries()) {
    const problem = allowlistEntryProblem(entry);
    if (problem) {
      throw new ApiError('invalid_request', `ipWhitelist[${i}]: ${problem}`, { param: `ipWhitelist[${i}]` });
    }
  }
  if (typeof body.callbackUrl !== 'string') return body;
  return { ...body, callbackUrl: normalizedCallbackUrl(body.callbackUrl) };
}

function normalizedCallbackUrl(typed: string): string {
  const refuse = (detail: string) => new ApiError('invalid_request', detail, { param: 'callbackUrl' });
  // Checked on the text as typed: the URL parser silently drops tabs and line breaks.
  if (/\p{Cc}/u.test(typed)) throw refuse('callbackUrl must not contain control characters');
  let url: URL;
  try {
    url = new URL(typed);
  } catch {
    throw refuse('callbackUrl must be an absolute http or https URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw refuse('callbackUrl must be an absolute http or https URL');
  }
  // Credentials in it would be stored and logged. An empty user and password (`http://:@host`) serialize away,
  // so there are none left to refuse: the URL is accepted as its normalized form.
  if (url.username !== '' || url.password !== '') {
    throw refuse('callbackUrl must not contain credentials (user:password@)');
  }
  if (url.href.length > MAX_CALLBACK_URL) {
    throw refuse(`callbackUrl must be at most ${MAX_CALLBACK_URL} characters once normalized`);
  }
  return url.href;
}

export const accountWire = (a: Account) => ({ ...a, createdAt: a.createdAt.toISOString() });

/** Loads the account of the path, or answers 404. */
export async function accountOr404(ctx: AppContext, id: string): Promise<Account> {
  const account = isUuid(id) ? await ctx.store.getAccount(id.toLowerCase()) : null;
  if (!account) throw new ApiError('not_found', `no account ${id}`);
  return account;
}
