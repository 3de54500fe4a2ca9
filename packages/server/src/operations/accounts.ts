import { generateCallbackSecret, generateCredential, hashSecret } from '../domain/credentials.js';
import { newId } from '../domain/ids.js';
import type { Account } from '../domain/records.js';
import { isSealed, sealSecret } from '../domain/secret-box.js';
import { type AccountStore, DuplicateKeyError } from '../store/store.js';

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

/** Gives the account a new secret; returns it with the account, or null for an unknown account. */
export async function rotateSecret(
  store: AccountStore,
  pepper: Buffer,
  id: string,
): Promise<{ account: Account; secret: string } | null> {
  const secret = generateCredential();
  const account = await store.setSecretHash(id, hashSecret(pepper, secret));
  return account ? { account, secret } : null;
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
