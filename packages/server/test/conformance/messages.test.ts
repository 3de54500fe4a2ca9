import { describe, expect, it } from 'vitest';
import { newId } from '../../src/domain/ids.js';
import type { MessageUpsert } from '../../src/domain/ingest/precedence.js';
import { engines } from '../support/engines.js';
import { at, createAccount, ingest, NOW, record, sms, useStore } from './fixtures.js';

const TO = '447700900123';

describe.each(engines())('$name store: message ingest', (engine) => {
  const store = useStore(engine);

  describe('creating records', () => {
    it('stores an outbound SMS with the SMS defaults', async () => {
      const { id: account } = await createAccount(store());
      await ingest(store(), account, [sms('m-1', TO, { text: 'Hi', createdAt: at(1) })]);
      const m = await record(store(), account, 'm-1', TO);
      expect(m).toMatchObject({
        id: 'm-1',
        channel: 'SMS',
        direction: 'outbound',
        channelUserId: TO,
        campaignId: null,
        text: 'Hi',
        content: null,
        status: null,
        sms: { status: '1', network: null, price: 0, counts: 1, receipt: null },
        createdAt: at(1),
      });
      expect(m.contactId).toBe(await store().resolveContact(account, 'SMS', TO));
    });

    it('stores given SMS state and JSON content as they were sent', async () => {
      const { id: account } = await createAccount(store());
      const content = { template: { name: 'otp', params: [1, 'two', null, { deep: true }] }, unicode: 'é😀' };
      await ingest(store(), account, [
        sms('m-1', TO, {
          campaignId: 'spring.sale',
          content,
          sms: { status: '0', network: '23410', price: 0.045, counts: 3 },
        }),
      ]);
      const m = await record(store(), account, 'm-1', TO);
      expect(m.campaignId).toBe('spring.sale');
      expect(m.content).toStrictEqual(content);
      expect(m.sms).toStrictEqual({ status: '0', network: '23410', price: 0.045, counts: 3, receipt: null });
    });

    it('defaults createdAt to the ingest time', async () => {
      const { id: account } = await createAccount(store());
      await ingest(store(), account, [{ id: 'm-1', channel: 'SMS', channelUserId: TO }], at(42));
      expect((await record(store(), account, 'm-1', TO)).createdAt).toStrictEqual(at(42));
    });

    it('keeps millisecond precision', async () => {
      const { id: account } = await createAccount(store());
      const when = new Date('2026-11-22T10:00:00.123Z');
      await ingest(store(), account, [sms('m-1', TO, { createdAt: when })]);
      expect((await record(store(), account, 'm-1', TO)).createdAt.toISOString()).toBe(
        '2026-11-22T10:00:00.123Z',
      );
    });

    it('stores other channels with an operator status and no SMS state', async () => {
      const { id: account } = await createAccount(store());
      await ingest(store(), account, [
        { id: 'w-1', channel: 'WHATSAPP', channelUserId: 'wa:alice', createdAt: NOW },
        { id: 'w-2', channel: 'WHATSAPP', channelUserId: 'wa:alice', createdAt: NOW, status: 'read' },
        { id: 'w-3', channel: 'WHATSAPP', channelUserId: 'wa:alice', createdAt: NOW, direction: 'inbound' },
        { id: 's-1', channel: 'SMS', channelUserId: TO, createdAt: NOW, direction: 'inbound', text: 'STOP' },
      ]);
      expect(await record(store(), account, 'w-1', 'wa:alice')).toMatchObject({ status: 'sent', sms: null });
      expect(await record(store(), account, 'w-2', 'wa:alice')).toMatchObject({ status: 'read', sms: null });
      expect(await record(store(), account, 'w-3', 'wa:alice')).toMatchObject({
        direction: 'inbound',
        status: null,
        sms: null,
      });
      expect(await record(store(), account, 's-1', TO)).toMatchObject({
        direction: 'inbound',
        status: null,
        sms: null,
      });
    });

    it('gives one contact one conversation per channel', async () => {
      const { id: account } = await createAccount(store());
      const contact = newId();
      await ingest(store(), account, [
        sms('m-1', TO, { contactId: contact }),
        sms('m-2', TO),
        { id: 'w-1', channel: 'WHATSAPP', channelUserId: 'wa:bob', contactId: contact, createdAt: NOW },
        sms('m-3', '447700900999'),
      ]);
      const m1 = await record(store(), account, 'm-1', TO);
      const m2 = await record(store(), account, 'm-2', TO);
      const w1 = await record(store(), account, 'w-1', 'wa:bob');
      const m3 = await record(store(), account, 'm-3', '447700900999');
      expect([m1.contactId, m2.contactId, w1.contactId]).toStrictEqual([contact, contact, contact]);
      expect(m2.conversationId).toBe(m1.conversationId);
      expect(w1.conversationId).not.toBe(m1.conversationId);
      expect(m3.contactId).not.toBe(contact);
      expect(m3.conversationId).not.toBe(m1.conversationId);
      expect(await store().resolveContact(account, 'WHATSAPP', 'wa:bob')).toBe(contact);
      expect(await store().resolveContact(account, 'SMS', '447700900999')).toBe(m3.contactId);
    });

    it('resolves identities per channel, exactly', async () => {
      const { id: account } = await createAccount(store());
      await ingest(store(), account, [
        { id: 'v-1', channel: 'VIBER', channelUserId: 'Carol', createdAt: NOW },
      ]);
      expect(await store().resolveContact(account, 'VIBER', 'Carol')).not.toBeNull();
      expect(await store().resolveContact(account, 'VIBER', 'carol')).toBeNull();
      expect(await store().resolveContact(account, 'TELEGRAM', 'Carol')).toBeNull();
    });
  });

  describe('re-sending a record', () => {
    it('replaces given fields, keeps absent ones, and never moves createdAt', async () => {
      const { id: account } = await createAccount(store());
      await ingest(store(), account, [
        sms('m-1', TO, {
          campaignId: 'c-1',
          text: 'first',
          content: { a: 1 },
          createdAt: at(0),
          sms: { network: '23410', price: 0.05, counts: 2 },
        }),
      ]);
      const before = await record(store(), account, 'm-1', TO);
      await ingest(store(), account, [
        { id: 'm-1', channel: 'SMS', channelUserId: TO, text: 'second', createdAt: at(99) },
      ]);
      const after = await record(store(), account, 'm-1', TO);
      expect(after).toStrictEqual({ ...before, text: 'second' });
      expect(after.createdAt).toStrictEqual(at(0));

      await ingest(store(), account, [
        { id: 'm-1', channel: 'SMS', channelUserId: TO, sms: { price: 0.07 }, content: { b: [2] } },
      ]);
      const third = await record(store(), account, 'm-1', TO);
      expect(third.sms).toMatchObject({ network: '23410', price: 0.07, counts: 2 });
      expect(third.content).toStrictEqual({ b: [2] });
      expect(third.text).toBe('second');
    });

    it('clears campaignId, text and content on null', async () => {
      const { id: account } = await createAccount(store());
      await ingest(store(), account, [sms('m-1', TO, { campaignId: 'c-1', text: 'x', content: { a: 1 } })]);
      await ingest(store(), account, [sms('m-1', TO, { campaignId: null, text: null, content: null })]);
      expect(await record(store(), account, 'm-1', TO)).toMatchObject({
        campaignId: null,
        text: null,
        content: null,
      });
    });

    it.each([
      ['0', '1', '0'],
      ['400', '1', '400'],
      ['1', '0', '0'],
      ['1', '400', '400'],
      ['0', '400', '400'],
    ] as const)('moves the send status from %s given %s to %s', async (first, next, expected) => {
      const { id: account } = await createAccount(store());
      await ingest(store(), account, [sms('m-1', TO, { sms: { status: first } })]);
      await ingest(store(), account, [sms('m-1', TO, { sms: { status: next } })]);
      expect((await record(store(), account, 'm-1', TO)).sms?.status).toBe(expected);
    });

    it('lets the later of two copies in one batch win', async () => {
      const { id: account } = await createAccount(store());
      const outcome = await store().ingestMessages(
        account,
        [
          sms('m-1', TO, { text: 'early', createdAt: at(1), sms: { status: '0' } }),
          sms('m-1', TO, { text: 'late', createdAt: at(2), sms: { status: '1', price: 0.1 } }),
        ],
        NOW,
      );
      expect(outcome).toStrictEqual({ ok: true, value: { accepted: 2, events: 0 } });
      const m = await record(store(), account, 'm-1', TO);
      expect(m.text).toBe('late');
      expect(m.createdAt).toStrictEqual(at(1));
      expect(m.sms).toMatchObject({ status: '0', price: 0.1 });
      expect(await store().findMessagesByIds(account, ['m-1'])).toHaveLength(1);
    });

    it('refuses a record that exists on another channel', async () => {
      const { id: account } = await createAccount(store());
      await ingest(store(), account, [{ id: 'x-1', channel: 'VIBER', channelUserId: TO, text: 'viber' }]);
      const outcome = await store().ingestMessages(account, [sms('x-1', TO, { text: 'sms' })], NOW);
      expect(outcome).toMatchObject({ ok: false, errors: [{ index: 0 }] });
      expect(await record(store(), account, 'x-1', TO)).toMatchObject({ channel: 'VIBER', text: 'viber' });
    });
  });

  describe('identity rules', () => {
    it('links a new identity to the given contact, creating the contact', async () => {
      const { id: account } = await createAccount(store());
      const contact = newId();
      await ingest(store(), account, [sms('m-1', TO, { contactId: contact })]);
      expect(await store().resolveContact(account, 'SMS', TO)).toBe(contact);
      expect((await record(store(), account, 'm-1', TO)).contactId).toBe(contact);
      // Naming the owner again is fine.
      await ingest(store(), account, [sms('m-2', TO, { contactId: contact })]);
      expect((await record(store(), account, 'm-2', TO)).contactId).toBe(contact);
    });

    it('refuses an identity that belongs to another contact', async () => {
      const { id: account } = await createAccount(store());
      await ingest(store(), account, [sms('m-1', TO)]);
      const owner = await store().resolveContact(account, 'SMS', TO);
      const outcome = await store().ingestMessages(account, [sms('m-2', TO, { contactId: newId() })], NOW);
      expect(outcome).toMatchObject({ ok: false, errors: [{ index: 0 }] });
      expect(await store().resolveContact(account, 'SMS', TO)).toBe(owner);
      expect(await store().findMessagesByIds(account, ['m-2'])).toStrictEqual([]);
    });

    it('refuses a second identity for a contact on one channel, but not on another channel', async () => {
      const { id: account } = await createAccount(store());
      const contact = newId();
      await ingest(store(), account, [sms('m-1', TO, { contactId: contact })]);
      const outcome = await store().ingestMessages(
        account,
        [sms('m-2', '447700900999', { contactId: contact })],
        NOW,
      );
      expect(outcome).toMatchObject({ ok: false, errors: [{ index: 0 }] });
      expect(await store().resolveContact(account, 'SMS', '447700900999')).toBeNull();
      await ingest(store(), account, [
        { id: 't-1', channel: 'TELEGRAM', channelUserId: '@dave', contactId: contact },
      ]);
      expect(await store().resolveContact(account, 'TELEGRAM', '@dave')).toBe(contact);
    });

    it('judges each item against the items before it in the batch', async () => {
      const { id: account } = await createAccount(store());
      const contact = newId();
      const outcome = await store().ingestMessages(
        account,
        [sms('m-1', TO, { contactId: contact }), sms('m-2', TO, { contactId: newId() })],
        NOW,
      );
      expect(outcome).toMatchObject({ ok: false, errors: [{ index: 1 }] });
    });
  });

  describe('batches', () => {
    it('writes nothing when any item is bad, and reports every bad item', async () => {
      const { id: account } = await createAccount(store());
      const taken = newId();
      await ingest(store(), account, [sms('seed', TO, { contactId: taken, text: 'seed' })]);
      const items: MessageUpsert[] = [
        sms('good-1', '447700900001'),
        sms('bad-1', TO, { contactId: newId() }),
        sms('seed', TO, { text: 'changed' }),
        { id: 'w-1', channel: 'WHATSAPP', channelUserId: 'wa:erin', contactId: taken },
        sms('bad-2', '447700900002', { contactId: taken }),
        { id: 'seed', channel: 'RBM', channelUserId: TO },
      ];
      const outcome = await store().ingestMessages(account, items, NOW);
      expect(outcome.ok).toBe(false);
      if (outcome.ok) return;
      expect(outcome.errors.map((e) => e.index)).toStrictEqual([1, 4, 5]);
      for (const error of outcome.errors) expect(error.detail).toEqual(expect.any(String));

      expect(await store().findMessagesByIds(account, ['good-1', 'bad-1', 'bad-2', 'w-1'])).toStrictEqual([]);
      expect((await record(store(), account, 'seed', TO)).text).toBe('seed');
      expect(await store().resolveContact(account, 'SMS', '447700900001')).toBeNull();
      expect(await store().resolveContact(account, 'WHATSAPP', 'wa:erin')).toBeNull();
      expect(await store().findDlr(account, 'good-1')).toStrictEqual([]);
    });

    it('accepts a clean batch after a refused one', async () => {
      const { id: account } = await createAccount(store());
      await ingest(store(), account, [sms('m-1', TO)]);
      await store().ingestMessages(
        account,
        [sms('m-2', '447700900001'), sms('m-3', TO, { contactId: newId() })],
        NOW,
      );
      await ingest(store(), account, [sms('m-2', '447700900001')]);
      expect((await store().findDlr(account, 'm-2')).map((m) => m.channelUserId)).toStrictEqual([
        '447700900001',
      ]);
    });
  });

  describe('findDlr', () => {
    it('lists the outbound SMS recipients in the order first ingested', async () => {
      const { id: account } = await createAccount(store());
      await ingest(store(), account, [sms('bulk', '447700900300'), sms('bulk', '447700900100')]);
      await ingest(store(), account, [sms('bulk', '447700900200', { createdAt: at(-60) })]);
      // A re-send updates a recipient without moving it.
      await ingest(store(), account, [sms('bulk', '447700900300', { sms: { status: '0' } })]);
      const dlr = await store().findDlr(account, 'bulk');
      expect(dlr.map((m) => m.channelUserId)).toStrictEqual(['447700900300', '447700900100', '447700900200']);
      expect(dlr[0]?.sms?.status).toBe('0');
      // Only what /dlr shows is read: the id, the number and the SMS state.
      expect(dlr.every((m) => m.id === 'bulk' && m.sms !== null && Object.keys(m).length === 3)).toBe(true);
    });

    it('leaves out other channels and inbound SMS', async () => {
      const { id: account } = await createAccount(store());
      await ingest(store(), account, [
        { id: 'mixed', channel: 'WHATSAPP', channelUserId: 'wa:frank' },
        { id: 'mixed', channel: 'SMS', channelUserId: '447700900001', direction: 'inbound' },
        sms('mixed', '447700900002'),
        { id: 'wa-only', channel: 'WHATSAPP', channelUserId: 'wa:frank' },
      ]);
      expect((await store().findDlr(account, 'mixed')).map((m) => m.channelUserId)).toStrictEqual([
        '447700900002',
      ]);
      expect(await store().findDlr(account, 'wa-only')).toStrictEqual([]);
      expect(await store().findDlr(account, 'nope')).toStrictEqual([]);
    });
  });

  describe('account isolation', () => {
    it('keeps records, identities and contacts of one account out of another', async () => {
      const a = (await createAccount(store())).id;
      const b = (await createAccount(store())).id;
      const contact = newId();
      await ingest(store(), a, [
        sms('shared', TO, { contactId: contact, text: 'from a' }),
        sms('only-a', TO),
      ]);
      expect(await store().findDlr(b, 'shared')).toStrictEqual([]);
      expect(await store().findMessagesByIds(b, ['shared', 'only-a'])).toStrictEqual([]);
      expect(await store().resolveContact(b, 'SMS', TO)).toBeNull();
      expect(await store().listHistory(b, { contactId: contact, channel: 'SMS', limit: 10 })).toStrictEqual(
        [],
      );

      // The same id, number and even contact id in B make B's own records and leave A's alone.
      await ingest(store(), b, [sms('shared', TO, { contactId: contact, text: 'from b' })]);
      expect((await record(store(), a, 'shared', TO)).text).toBe('from a');
      expect((await record(store(), b, 'shared', TO)).text).toBe('from b');
      expect(await store().findDlr(b, 'shared')).toHaveLength(1);
      expect(await store().listHistory(b, { contactId: contact, channel: 'SMS', limit: 10 })).toHaveLength(1);
      expect(await store().listHistory(a, { contactId: contact, channel: 'SMS', limit: 10 })).toHaveLength(2);

      // An identity taken in A does not bind B.
      await ingest(store(), b, [sms('b-2', '447700900555', { contactId: newId() })]);
      await ingest(store(), a, [sms('a-2', '447700900555', { contactId: newId() })]);
    });
  });
});
