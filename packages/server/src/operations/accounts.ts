import type { AppContext } from '../context.js';
import { generateCallbackSecret, generateCredential, hashSecret } from '../domain/credentials.js';
import { newId } from '../domain/ids.js';
import type { Account, AccountPatch } from '../domain/records.js';
import { isSealed, sealSecret } from '../domain/secret-box.js';
import { type AccountStore, DuplicateKeyError, type SessionStore } from '../store/store.js';

export interface AccountInput {
  name: string;
  ipWhitelist?: string[];
  dlrQueryEnabled?: boolean;
  balance?: number;
  creditLimit?: number;
  callbackUrl?: string | null;
  callbackEnabled?: boolean;
  /** Fixed credentials, for the demo account only; normally both are drawn from the CSPRNG. */
  key?: string;
  secret?: string;
}

export interface CreatedAccount {
  account: Account;
  secret: string;
  callbackSecret: string;
}

/** Creates an account with a fresh key, secret and callback secret (the API and the CLI share this). */
export async function createAccount(
  store: AccountStore,
  pepper: Buffer,
  input: AccountInput,
  now: Date,
): Promise<CreatedAccount> {
  const secret = input.secret ?? generateCredential();
  const callbackSecret = generateCallbackSecret();
  for (let attempt = 0; ; attempt++) {
    try {
      const account = await store.createAccount({
        id: newId(),
        name: input.name,
        key: input.key ?? generateCredential(),
        ipWhitelist: input.ipWhitelist ?? [],
        dlrQueryEnabled: input.dlrQueryEnabled ?? true,
        balance: input.balance ?? 0,
        creditLimit: input.creditLimit ?? 0,
        callbackUrl: input.callbackUrl ?? null,
        callbackEnabled: input.callbackEnabled ?? true,
        createdAt: now,
        secretHash: hashSecret(pepper, secret),
        callbackSecret: sealSecret(pepper, callbackSecret),
      });
      return { account, secret, callbackSecret };
    } catch (error) {
      // 62^8 keys make a collision rare; draw again a few times before calling it a fault.
      if (!(error instanceof DuplicateKeyError) || input.key !== undefined || attempt >= 4) throw error;
    }
  }
}

/**
 * Gives the account a new secret and ends its console sessions (CONTRACT §13: a session signed in with the old
 * secret must not outlive it); returns the new secret with the account, or null for an unknown account.
 */
export async function rotateSecret(
  store: AccountStore & SessionStore,
  pepper: Buffer,
  id: string,
): Promise<{ account: Account; secret: string } | null> {
  const secret = generateCredential();
  const account = await store.setSecretHash(id, hashSecret(pepper, secret));
  if (!account) return null;
  await store.deleteAccountSessions(id);
  return { account, secret };
}

type ServingContext = Pick<AppContext, 'store' | 'pepper' | 'accounts' | 'limits'>;

/**
 * The secret rotation of a serving process (the operator API and the console): the account cache forgets the
 * old secret, and any lockout of the key is cleared. Null for an unknown account.
 */
export async function rotateServedSecret(
  ctx: ServingContext,
  account: Pick<Account, 'id' | 'key'>,
): Promise<{ account: Account; secret: string } | null> {
  const rotated = await ctx.accounts.writing(account.key, () =>
    rotateSecret(ctx.store, ctx.pepper, account.id),
  );
  if (rotated) await ctx.limits.clear(account.id);
  return rotated;
}

/**
 * The account deletion of a serving process (the operator API and the console): everything of the account
 * goes, its console sessions with it (they reference the account), the cache forgets its key and its lockout
 * counters are dropped. False for an unknown account.
 */
export async function deleteServedAccount(
  ctx: ServingContext,
  account: Pick<Account, 'id' | 'key'>,
): Promise<boolean> {
  const deleted = await ctx.accounts.writing(account.key, () => ctx.store.deleteAccount(account.id));
  if (deleted) await ctx.limits.clear(account.id);
  return deleted;
}

/**
 * Gives the account a new callback secret; the current one keeps signing beside it for `graceSeconds`.
 * Returns the new secret with the account, or null for an unknown account.
 */
export async function rotateCallbackSecret(
  store: AccountStore,
  pepper: Buffer,
  id: string,
  now: Date,
  graceSeconds: number,
): Promise<{ account: Account; callbackSecret: string } | null> {
  const callbackSecret = generateCallbackSecret();
  const until = new Date(now.getTime() + graceSeconds * 1000);
  const account = await store.rotateCallbackSecret(id, sealSecret(pepper, callbackSecret), until);
  return account ? { account, callbackSecret } : null;
}

/**
 * Seals callback secrets written in clear before sealing existed (an upgrade). Run at start; a no-op after the
 * first run.
 */
export function sealLegacyCallbackSecrets(store: AccountStore, pepper: Buffer): Promise<number> {
  return store.sealCallbackSecrets((clear) => (isSealed(clear) ? clear : sealSecret(pepper, clear)));
}

/**
 * The account change of a serving process (the operator API and the console), made while the account cache
 * holds no copy of the key. Null for an unknown account.
 */
export async function updateServedAccount(
  ctx: ServingContext,
  account: Pick<Account, 'id' | 'key'>,
  patch: AccountPatch,
): Promise<Account | null> {
  return ctx.accounts.writing(account.key, () => ctx.store.updateAccount(account.id, patch));
}
