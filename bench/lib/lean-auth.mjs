// What every lean handler (bench/lib/lean.mjs) shares: the pepper as an HMAC key, the credentials of a request
// and the account they name. Key and secret are compared as Waybill compares them (the HMAC of the secret
// under the pepper, once; then the secret that verified), with none of the whitelist, lockout or rate limit.
import { createHmac, createSecretKey, timingSafeEqual } from 'node:crypto';

/** The pepper (WAYBILL_PEPPER), made a key once: the secrets' hashes and the cursors' MACs use it. */
export const pepper = createSecretKey(Buffer.from(process.env.WAYBILL_PEPPER ?? '', 'utf8'));

/** The first 16 bytes of an HMAC under the pepper, base64url: the MAC of a Waybill cursor. */
export function cursorMac(domain, payload, binding) {
  return createHmac('sha256', pepper)
    .update(domain)
    .update(payload)
    .update('\0')
    .update(JSON.stringify(binding))
    .digest()
    .subarray(0, 16)
    .toString('base64url');
}

/** The key and secret of a request: HTTP Basic `key:secret`, else the `key` and `secret` query parameters. */
export function credentials(query, authorization) {
  if (authorization?.startsWith('Basic ')) {
    const decoded = Buffer.from(authorization.slice(6), 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    return colon < 0 ? null : { key: decoded.slice(0, colon), secret: decoded.slice(colon + 1) };
  }
  const key = query.get('key');
  const secret = query.get('secret');
  return key && secret ? { key, secret } : null;
}

/** `authenticate(key, secret)`: the account ({ id, ref }) the credentials name, or null. */
export function authenticator(db) {
  // With the account's integer ref, which its rows are keyed by (store/sqlite/account-ref.ts).
  const accountByKey = db.prepare(
    'SELECT a.id, r.ref, a.secret_hash FROM accounts a JOIN account_refs r ON r.id = a.id WHERE a.key = ?',
  );
  const hashSecret = (secret) =>
    createHmac('sha256', pepper).update('waybill.secret.v1\0').update(secret).digest();
  // Accounts by key, each with the secret that last verified (Waybill's account cache does as much).
  const accounts = new Map();
  return function authenticate(key, secret) {
    let account = accounts.get(key);
    if (account === undefined) {
      const row = accountByKey.get(key);
      if (!row) return null;
      account = { id: row.id, ref: row.ref, hash: row.secret_hash, verified: null };
      accounts.set(key, account);
    }
    const candidate = Buffer.from(secret, 'utf8');
    const known = account.verified;
    if (known !== null && known.length === candidate.length && timingSafeEqual(known, candidate))
      return account;
    const hash = hashSecret(secret);
    if (hash.length !== account.hash.length || !timingSafeEqual(hash, account.hash)) return null;
    account.verified = candidate;
    return account;
  };
}
