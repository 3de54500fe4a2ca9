import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { newId } from '../../src/domain/ids.js';
import { DuplicateKeyError, UnknownAccountError } from '../../src/store/store.js';
import { engines } from '../support/engines.js';
import {
  at,
  claimRequest,
  ingest,
  ingestReceipts,
  NOW,
  newAccount,
  receipt,
  sms,
  useStore,
} from './fixtures.js';

describe.each(engines())('$name store: accounts', (engine) => {
  const store = useStore(engine);

  it('names its engine, answers ping, and migrates again without harm', async () => {
    expect(store().engine).toBe(engine.name);
    await expect(store().ping()).resolves.toBeUndefined();
    // Each migration is reported by the call that applied it: none is left for these.
    expect(await store().migrate()).toEqual([]);
    expect(await store().migrate()).toEqual([]);
    await expect(store().ping()).resolves.toBeUndefined();
  });

  it('creates an account and reads it back without its secrets', async () => {
    const input = newAccount({
      name: 'Globex',
      ipWhitelist: ['127.0.0.0/8', '::1'],
      dlrQueryEnabled: false,
      balance: 12.5,
      creditLimit: 100,
      callbackUrl: 'https://hooks.example.com/dlr',
      createdAt: new Date('2026-03-04T05:06:07.089Z'),
    });
    const expected = {
      id: input.id,
      name: 'Globex',
      key: input.key,
      ipWhitelist: ['127.0.0.0/8', '::1'],
      dlrQueryEnabled: false,
      balance: 12.5,
      creditLimit: 100,
      callbackUrl: 'https://hooks.example.com/dlr',
      callbackEnabled: true,
      createdAt: new Date('2026-03-04T05:06:07.089Z'),
    };
    expect(await store().createAccount(input)).toStrictEqual(expected);
    expect(await store().getAccount(input.id)).toStrictEqual(expected);
  });

  it('finds an account by key with its secret hash, byte for byte', async () => {
    const input = newAccount({ balance: -3, creditLimit: 5 });
    await store().createAccount(input);
    const found = await store().getAccountByKey(input.key);
    expect(found).not.toBeNull();
    expect(found?.id).toBe(input.id);
    expect(found?.balance).toBe(-3);
    expect(Buffer.from(found?.secretHash ?? []).equals(input.secretHash)).toBe(true);
  });

  it('answers null for unknown ids and keys', async () => {
    await store().createAccount(newAccount({ key: 'AbCd1234' }));
    expect(await store().getAccount(newId())).toBeNull();
    expect(await store().getAccountByKey('ZZZZ9999')).toBeNull();
    // Keys are case-sensitive: another case is another key.
    expect(await store().getAccountByKey('abcd1234')).toBeNull();
    expect(await store().getCallbackSecrets(newId())).toBeNull();
    expect(await store().rotateCallbackSecret(newId(), 'sealed', NOW)).toBeNull();
    expect(await store().updateAccount(newId(), { name: 'x' })).toBeNull();
    expect(await store().setSecretHash(newId(), randomBytes(32))).toBeNull();
  });

  it('refuses a taken key with DuplicateKeyError and leaves the holder untouched', async () => {
    const first = newAccount({ name: 'First' });
    await store().createAccount(first);
    const second = newAccount({ key: first.key, name: 'Second' });
    const refusal = store().createAccount(second);
    await expect(refusal).rejects.toBeInstanceOf(DuplicateKeyError);
    await expect(refusal).rejects.toMatchObject({ name: 'DuplicateKeyError' });
    expect(await store().getAccount(second.id)).toBeNull();
    expect((await store().getAccountByKey(first.key))?.name).toBe('First');
    // The caller draws another key and succeeds.
    await expect(store().createAccount({ ...second, key: 'NewKey42' })).resolves.toMatchObject({
      name: 'Second',
    });
  });

  it('keeps the callback secret as given, with no previous one', async () => {
    const input = newAccount();
    await store().createAccount(input);
    expect(await store().getCallbackSecrets(input.id)).toStrictEqual({
      current: input.callbackSecret,
      previous: null,
      previousUntil: null,
    });
  });

  it('rotates the callback secret, keeping the previous one until its grace period ends', async () => {
    const input = newAccount();
    const created = await store().createAccount(input);
    const until = new Date(NOW.getTime() + 86_400_000);
    expect(await store().rotateCallbackSecret(input.id, 'second', until)).toStrictEqual(created);
    expect(await store().getCallbackSecrets(input.id)).toStrictEqual({
      current: 'second',
      previous: input.callbackSecret,
      previousUntil: until,
    });
    await store().rotateCallbackSecret(input.id, 'third', NOW);
    expect(await store().getCallbackSecrets(input.id)).toStrictEqual({
      current: 'third',
      previous: 'second',
      previousUntil: NOW,
    });
  });

  it('seals callback secrets stored in clear, current and previous, once', async () => {
    const legacy = newAccount({ callbackSecret: 'whsec_one' });
    const rotated = newAccount({ callbackSecret: 'whsec_two' });
    const sealed = newAccount({ callbackSecret: 'sealed:v1:three' });
    for (const a of [legacy, rotated, sealed]) await store().createAccount(a);
    await store().rotateCallbackSecret(rotated.id, 'sealed:v1:four', NOW);
    const seal = (clear: string) => `sealed:v1:${clear.toUpperCase()}`;
    expect(await store().sealCallbackSecrets(seal)).toBe(2);
    expect(await store().getCallbackSecrets(legacy.id)).toMatchObject({
      current: 'sealed:v1:WHSEC_ONE',
      previous: null,
    });
    expect(await store().getCallbackSecrets(rotated.id)).toMatchObject({
      current: 'sealed:v1:four',
      previous: 'sealed:v1:WHSEC_TWO',
    });
    expect((await store().getCallbackSecrets(sealed.id))?.current).toBe('sealed:v1:three');
    expect(await store().sealCallbackSecrets(seal)).toBe(0);
  });

  it('turns callbacks back on when the callback URL changes, unless the patch says otherwise', async () => {
    const input = newAccount({ callbackUrl: 'https://a.example/cb', callbackEnabled: false });
    await store().createAccount(input);
    expect((await store().getAccount(input.id))?.callbackEnabled).toBe(false);
    // The same URL again changes nothing.
    expect(
      (await store().updateAccount(input.id, { callbackUrl: 'https://a.example/cb' }))?.callbackEnabled,
    ).toBe(false);
    expect((await store().updateAccount(input.id, { name: 'x' }))?.callbackEnabled).toBe(false);
    expect(
      (await store().updateAccount(input.id, { callbackUrl: 'https://b.example/cb' }))?.callbackEnabled,
    ).toBe(true);
    expect((await store().updateAccount(input.id, { callbackEnabled: false }))?.callbackEnabled).toBe(false);
    const explicit = await store().updateAccount(input.id, {
      callbackUrl: 'https://c.example/cb',
      callbackEnabled: false,
    });
    expect(explicit).toMatchObject({ callbackUrl: 'https://c.example/cb', callbackEnabled: false });
    expect((await store().updateAccount(input.id, { callbackEnabled: true }))?.callbackEnabled).toBe(true);
  });

  it('changes only the fields a patch gives', async () => {
    const input = newAccount({ callbackUrl: 'https://a.example/cb', ipWhitelist: ['10.0.0.0/8'] });
    await store().createAccount(input);
    const renamed = await store().updateAccount(input.id, { name: 'Renamed', balance: 7.25 });
    expect(renamed).toMatchObject({
      name: 'Renamed',
      balance: 7.25,
      creditLimit: 0,
      dlrQueryEnabled: true,
      ipWhitelist: ['10.0.0.0/8'],
      callbackUrl: 'https://a.example/cb',
      key: input.key,
      createdAt: NOW,
    });
    const changed = await store().updateAccount(input.id, {
      ipWhitelist: [],
      dlrQueryEnabled: false,
      creditLimit: 50,
      callbackUrl: 'https://b.example/cb',
    });
    expect(changed).toMatchObject({
      name: 'Renamed',
      ipWhitelist: [],
      dlrQueryEnabled: false,
      creditLimit: 50,
      callbackUrl: 'https://b.example/cb',
    });
    expect(await store().getAccount(input.id)).toStrictEqual(changed);
  });

  it('clears the callback URL on null and keeps it when absent', async () => {
    const input = newAccount({ callbackUrl: 'https://a.example/cb' });
    await store().createAccount(input);
    expect((await store().updateAccount(input.id, {}))?.callbackUrl).toBe('https://a.example/cb');
    expect((await store().updateAccount(input.id, { callbackUrl: null }))?.callbackUrl).toBeNull();
    expect((await store().getAccount(input.id))?.callbackUrl).toBeNull();
  });

  it('replaces the secret hash, and nothing else', async () => {
    const input = newAccount();
    const created = await store().createAccount(input);
    const next = randomBytes(32);
    expect(await store().setSecretHash(input.id, next)).toStrictEqual(created);
    const found = await store().getAccountByKey(input.key);
    expect(Buffer.from(found?.secretHash ?? []).equals(next)).toBe(true);
    expect((await store().getCallbackSecrets(input.id))?.current).toBe(input.callbackSecret);
  });

  it('keeps accounts apart', async () => {
    const a = newAccount({ name: 'A' });
    const b = newAccount({ name: 'B' });
    await store().createAccount(a);
    await store().createAccount(b);
    await store().updateAccount(a.id, { name: 'A2', callbackUrl: 'https://a.example' });
    await store().setSecretHash(a.id, randomBytes(32));
    const other = await store().getAccountByKey(b.key);
    expect(other?.name).toBe('B');
    expect(other?.callbackUrl).toBeNull();
    expect(Buffer.from(other?.secretHash ?? []).equals(b.secretHash)).toBe(true);
  });

  it('deletes an account with all its data in one go, and leaves the others untouched', async () => {
    const withData = async (name: string) => {
      const account = await store().createAccount(
        newAccount({ name, callbackUrl: 'https://hooks.example/dlr', callbackSecret: 'sealed-secret' }),
      );
      await ingest(store(), account.id, [
        sms('m-1', '447700900001'),
        sms('m-2', '447700900002'),
        { id: 'w-1', channel: 'WHATSAPP', channelUserId: '447700900003', createdAt: NOW, text: 'hi' },
      ]);
      // An event with its delivery, and one parked receipt (its message has not arrived).
      const outcome = await ingestReceipts(store(), account.id, [
        receipt('m-1', 'delivered', at(1)),
        receipt('m-9', 'delivered', at(1), { to: '447700900009' }),
      ]);
      expect(outcome).toMatchObject({ applied: 1, unknown: [{ messageId: 'm-9' }] });
      return account;
    };
    const gone = await withData('Gone');
    const kept = await withData('Kept');
    // One attempt each, so both have delivery_attempts rows.
    const claimed = await store().claimDeliveries(claimRequest({ limit: 10, perAccount: 10 }));
    expect(claimed).toHaveLength(2);
    for (const claim of claimed) {
      await store().finishAttempts([
        {
          claim: claim,
          outcome: {
            attempt: { at: at(11), httpStatus: 500, error: null, durationMs: 3 },
            next: { state: 'pending', at: at(60) },
          },
        },
      ]);
    }
    const snapshot = async (accountId: string) => ({
      account: await store().getAccount(accountId),
      dlr: await store().findDlr(accountId, 'm-1'),
      messages: await store().findMessagesByIds(accountId, ['m-1', 'm-2', 'w-1']),
      contact: await store().resolveContact(accountId, 'WHATSAPP', '447700900003'),
      events: await store().listReceiptEvents(accountId, 0, 10),
      deliveries: await store().listDeliveries(accountId, { limit: 10 }),
    });
    const keptBefore = await snapshot(kept.id);
    expect(keptBefore.deliveries[0]?.attempts).toBe(1);

    expect(await store().deleteAccount(gone.id)).toBe(true);

    expect(await store().getAccount(gone.id)).toBeNull();
    expect(await store().getAccountByKey(gone.key)).toBeNull();
    expect(await store().getCallbackSecrets(gone.id)).toBeNull();
    expect(await snapshot(gone.id)).toStrictEqual({
      account: null,
      dlr: [],
      messages: [],
      contact: null,
      events: [],
      deliveries: [],
    });
    expect(await snapshot(kept.id)).toStrictEqual(keptBefore);
    expect((await store().getAccountByKey(kept.key))?.id).toBe(kept.id);
    // The kept account's parked receipt is still there: its message applies it.
    await ingest(store(), kept.id, [sms('m-9', '447700900009')]);
    expect((await store().findDlr(kept.id, 'm-9'))[0]?.sms?.receipt?.drStatuscode).toBe('delivered');
    // Nothing of the deleted one survives under its id: the same records start afresh, no parked receipt
    // applies, no event or delivery is left.
    await store().createAccount(newAccount({ id: gone.id }));
    await ingest(store(), gone.id, [sms('m-1', '447700900001'), sms('m-9', '447700900009')]);
    expect((await store().findDlr(gone.id, 'm-9'))[0]?.sms?.receipt).toBeNull();
    expect((await store().findDlr(gone.id, 'm-1'))[0]?.sms?.receipt).toBeNull();
    expect(await store().listReceiptEvents(gone.id, 0, 10)).toStrictEqual([]);
    expect(await store().listDeliveries(gone.id, { limit: 10 })).toStrictEqual([]);
  });

  it('answers false when deleting an account that does not exist', async () => {
    const account = await store().createAccount(newAccount());
    expect(await store().deleteAccount(newId())).toBe(false);
    expect(await store().deleteAccount('not-a-uuid')).toBe(false);
    expect(await store().deleteAccount(account.id)).toBe(true);
    expect(await store().deleteAccount(account.id)).toBe(false);
  });

  it('refuses an ingest of an account that is gone with UnknownAccountError, writing nothing', async () => {
    const account = await store().createAccount(newAccount({ callbackUrl: 'https://hooks.example.com/dlr' }));
    expect(await store().deleteAccount(account.id)).toBe(true);
    // The operator API looked the account up first: this is a batch that raced the account's deletion.
    await expect(
      store().ingestMessages(account.id, [sms('m-1', '447700900001')], NOW),
    ).rejects.toBeInstanceOf(UnknownAccountError);
    await expect(
      store().ingestReceipts(account.id, [receipt('m-2', 'delivered', at(1))], NOW),
    ).rejects.toBeInstanceOf(UnknownAccountError);
    await expect(
      store().ingestMessages(newId(), [sms('m-1', '447700900001')], NOW, { dryRun: true }),
    ).rejects.toBeInstanceOf(UnknownAccountError);
    // Nothing was written: a new account under the same id starts empty (no record, no parked receipt).
    await store().createAccount(newAccount({ id: account.id }));
    expect(await store().findDlr(account.id, 'm-1')).toStrictEqual([]);
    expect((await store().outboxStats()).parked).toBe(0);
  });
  it('searches accounts by part of the name in any case, by key or by id, by name', async () => {
    const acme = newAccount({ name: 'Acme Freight' });
    const beta = newAccount({ name: 'Beta acme' });
    const zed = newAccount({ name: 'Zed' });
    for (const account of [zed, beta, acme]) await store().createAccount(account);
    const names = async (text: string | null, limit = 10) =>
      (await store().searchAccounts(text, limit)).map((a) => a.name);
    expect(await names('ACME')).toEqual(['Acme Freight', 'Beta acme']);
    expect(await names(zed.key)).toEqual(['Zed']);
    expect(await names(beta.id)).toEqual(['Beta acme']);
    expect(await names(null, 2)).toEqual(['Acme Freight', 'Beta acme']);
    expect(await names('nothing like it')).toEqual([]);
  });
});
