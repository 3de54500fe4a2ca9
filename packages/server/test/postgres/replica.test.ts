import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Account } from '../../src/domain/records.js';
import type { Store } from '../../src/store/store.js';
import { NOW, newAccount, sms } from '../conformance/fixtures.js';
import { dropSchema, freshSchema, openStore, POSTGRES_URL } from './harness.js';

/** The same database under another URL, or a port where nothing listens. */
function withPort(url: string, port: number): string {
  const parsed = new URL(url);
  parsed.port = String(port);
  return parsed.toString();
}

describe.skipIf(!POSTGRES_URL)('PostgreSQL read replica routing', () => {
  let schema: string;
  let primary: Store;
  let account: Account;

  beforeEach(async () => {
    schema = freshSchema();
    primary = openStore(schema);
    await primary.migrate();
    account = await primary.createAccount(newAccount());
    await primary.ingestMessages(
      account.id,
      [sms('m-1', '447700900001', { campaignId: 'c-1' }), sms('m-1', '447700900002', { campaignId: 'c-1' })],
      NOW,
    );
  });
  afterEach(async () => {
    await primary.close();
    await dropSchema(schema);
  });

  it('serves the query reads from a replica URL', async () => {
    // The primary itself under a replica URL: never in recovery, so never behind.
    const store = openStore(schema, { readUrls: [POSTGRES_URL] });
    try {
      expect(await store.readReplicas?.check()).toEqual([
        { name: new URL(POSTGRES_URL).host, up: true, lagMs: 0 },
      ]);
      expect((await store.getAccountByKey(account.key))?.id).toBe(account.id);
      expect((await store.findDlr(account.id, 'm-1')).map((m) => m.channelUserId)).toEqual([
        '447700900001',
        '447700900002',
      ]);
      expect(await store.findMessagesByIds(account.id, ['m-1'], 'c-1')).toHaveLength(2);
      const contact = await store.resolveContact(account.id, 'SMS', '447700900001');
      expect(contact).not.toBeNull();
      if (!contact) return;
      expect(
        await store.listHistory(account.id, { contactId: contact, channel: 'SMS', limit: 10 }),
      ).toHaveLength(1);
      expect(await store.listHistory(account.id, { campaignId: 'c-1', limit: 10 })).toHaveLength(2);
      await store.ping();
      expect(store.readReplicas?.reads()[new URL(POSTGRES_URL).host]).toBeGreaterThan(0);
    } finally {
      await store.close();
    }
  });

  it('falls back to the primary when a replica cannot be reached, and writes never touch it', async () => {
    const store = openStore(schema, { readUrls: [withPort(POSTGRES_URL, 1)] });
    try {
      expect(await store.readReplicas?.check()).toEqual([
        { name: `${new URL(POSTGRES_URL).hostname}:1`, up: false, lagMs: null },
      ]);
      expect((await store.getAccountByKey(account.key))?.id).toBe(account.id);
      expect(await store.findDlr(account.id, 'm-1')).toHaveLength(2);
      expect(await store.findMessagesByIds(account.id, ['m-1'])).toHaveLength(2);
      expect(await store.resolveContact(account.id, 'SMS', '447700900001')).not.toBeNull();
      expect(await store.listHistory(account.id, { campaignId: 'c-1', limit: 10 })).toHaveLength(2);
      await store.ping();

      expect((await store.getAccount(account.id))?.key).toBe(account.key);
      expect((await store.getCallbackSecrets(account.id))?.current).toMatch(/^whsec_/);
      expect(await store.ingestMessages(account.id, [sms('m-2', '447700900001')], NOW)).toEqual({
        ok: true,
        value: { accepted: 1, events: 0 },
      });
      expect((await primary.findDlr(account.id, 'm-2')).length).toBe(1);
    } finally {
      await store.close();
    }
  });
});
