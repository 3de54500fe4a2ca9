import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { engines } from '../support/engines.js';
import { at, createAccount, useStore } from './fixtures.js';

const digest = () => createHash('sha256').update(randomBytes(32)).digest();

describe.each(engines())('$name store: console sessions', (engine) => {
  const store = useStore(engine);

  it('creates, finds, slides, and ends a session; an expired one is gone', async () => {
    const account = await createAccount(store());
    const tokenHash = digest();
    await store().createSession(
      { tokenHash, accountId: account.id, createdAt: at(0), expiresAt: at(60) },
      at(0),
    );
    expect(await store().findSession(tokenHash, at(30))).toStrictEqual({
      tokenHash,
      accountId: account.id,
      createdAt: at(0),
      expiresAt: at(60),
    });
    expect(await store().findSession(tokenHash, at(60))).toBeNull();
    expect(await store().touchSession(tokenHash, at(59), at(119))).toMatchObject({ expiresAt: at(119) });
    expect(await store().findSession(tokenHash, at(100))).toMatchObject({ accountId: account.id });
    // An expired session cannot be revived by touching it.
    expect(await store().touchSession(tokenHash, at(119), at(200))).toBeNull();
    expect(await store().findSession(tokenHash, at(0))).toMatchObject({ expiresAt: at(119) });
    await store().deleteSession(tokenHash);
    expect(await store().findSession(tokenHash, at(0))).toBeNull();
  });

  it('keeps the operator’s sessions (no account) and drops expired ones when a new one starts', async () => {
    const old = digest();
    await store().createSession(
      { tokenHash: old, accountId: null, createdAt: at(0), expiresAt: at(10) },
      at(0),
    );
    expect(await store().findSession(old, at(5))).toMatchObject({ accountId: null });
    const fresh = digest();
    await store().createSession(
      { tokenHash: fresh, accountId: null, createdAt: at(20), expiresAt: at(80) },
      at(20),
    );
    // Gone from the table, not merely expired: even a clock before its expiry no longer finds it.
    expect(await store().findSession(old, at(5))).toBeNull();
    expect(await store().findSession(fresh, at(21))).not.toBeNull();
  });

  it('ends one account’s sessions alone, and every session of an account it deletes', async () => {
    const one = await createAccount(store());
    const other = await createAccount(store());
    const a = digest();
    const b = digest();
    const c = digest();
    const operator = digest();
    for (const [tokenHash, accountId] of [
      [a, one.id],
      [b, one.id],
      [c, other.id],
      [operator, null],
    ] as const) {
      await store().createSession({ tokenHash, accountId, createdAt: at(0), expiresAt: at(600) }, at(0));
    }
    expect(await store().deleteAccountSessions(one.id)).toBe(2);
    expect(await store().findSession(a, at(1))).toBeNull();
    expect(await store().findSession(c, at(1))).not.toBeNull();
    expect(await store().deleteAccount(other.id)).toBe(true);
    expect(await store().findSession(c, at(1))).toBeNull();
    expect(await store().findSession(operator, at(1))).not.toBeNull();
    expect(await store().deleteAccountSessions('not-a-uuid')).toBe(0);
  });
});
