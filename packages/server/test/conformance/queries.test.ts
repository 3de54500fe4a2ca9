import { describe, expect, it } from 'vitest';
import { newId } from '../../src/domain/ids.js';
import type { MessageUpsert } from '../../src/domain/ingest/precedence.js';
import {
  comparePositions,
  type ListedMessage,
  listedMessage,
  positionOf,
  type StoredMessage,
} from '../../src/domain/records.js';
import { engines } from '../support/engines.js';
import {
  allPages,
  at,
  createAccount,
  ingest,
  ingestReceipts,
  key,
  NOW,
  receipt,
  sms,
  useStore,
} from './fixtures.js';

const newestFirst = (records: StoredMessage[]): string[] =>
  [...records].sort((a, b) => comparePositions(positionOf(b), positionOf(a))).map(key);

describe.each(engines())('$name store: queries', (engine) => {
  const store = useStore(engine);

  describe('findMessagesByIds', () => {
    it('returns every recipient of each id, oldest first in the total order', async () => {
      const { id: account } = await createAccount(store());
      await ingest(store(), account, [
        sms('b', '447700900002', { createdAt: at(5) }),
        sms('b', '447700900001', { createdAt: at(5) }),
        sms('a', '447700900009', { createdAt: at(5) }),
        sms('z', '447700900001', { createdAt: at(1) }),
        { id: 'w', channel: 'WHATSAPP', channelUserId: 'wa:alice', createdAt: at(3) },
        sms('other', '447700900001', { createdAt: at(2) }),
      ]);
      const found = await store().findMessagesByIds(account, ['b', 'w', 'z', 'a', 'missing']);
      expect(found.map((m) => `${m.id}/${m.channelUserId}`)).toStrictEqual([
        'z/447700900001',
        'w/wa:alice',
        'a/447700900009',
        'b/447700900001',
        'b/447700900002',
      ]);
    });

    it('filters by campaign', async () => {
      const { id: account } = await createAccount(store());
      await ingest(store(), account, [
        sms('m-1', '447700900001', { campaignId: 'c-1', createdAt: at(1) }),
        sms('m-1', '447700900002', { campaignId: 'c-2', createdAt: at(1) }),
        sms('m-2', '447700900001', { campaignId: 'c-1', createdAt: at(2) }),
        sms('m-3', '447700900001', { createdAt: at(3) }),
      ]);
      const found = await store().findMessagesByIds(account, ['m-1', 'm-2', 'm-3'], 'c-1');
      expect(found.map((m) => `${m.id}/${m.channelUserId}`)).toStrictEqual([
        'm-1/447700900001',
        'm-2/447700900001',
      ]);
      expect(await store().findMessagesByIds(account, ['m-3'], 'c-1')).toStrictEqual([]);
    });

    it('answers an empty list with nothing', async () => {
      const { id: account } = await createAccount(store());
      await ingest(store(), account, [sms('m-1', '447700900001')]);
      expect(await store().findMessagesByIds(account, [])).toStrictEqual([]);
    });
  });

  describe('listHistory, each record as listed', () => {
    it('lists what the stored record shows, its status derived as the contract derives it', async () => {
      const { id: account } = await createAccount(store());
      const contact = newId();
      const campaign = { campaignId: 'c-listed' };
      await ingest(store(), account, [
        sms('pending', '447700900001', { contactId: contact, createdAt: at(1), ...campaign }),
        sms('refused', '447700900001', { createdAt: at(2), sms: { status: '400' }, ...campaign }),
        sms('accepted', '447700900001', { createdAt: at(3), ...campaign }),
        sms('delivered', '447700900001', { createdAt: at(4), sms: { network: '26201', price: 0.04 } }),
        sms('undelivered', '447700900001', { createdAt: at(5), ...campaign }),
        sms('inbound', '447700900001', { createdAt: at(6), direction: 'inbound', text: 'hi' }),
        {
          id: 'wa-read',
          channel: 'WHATSAPP',
          channelUserId: 'wa:listed',
          contactId: contact,
          createdAt: at(7),
          status: 'read',
          content: { type: 'text', body: 'hello' },
          ...campaign,
        },
        { id: 'wa-sent', channel: 'WHATSAPP', channelUserId: 'wa:listed', createdAt: at(8) },
      ]);
      for (const sent of ['accepted', 'delivered', 'undelivered']) {
        await ingest(store(), account, [sms(sent, '447700900001', { sms: { status: '0' } })]);
      }
      await ingestReceipts(store(), account, [
        receipt('accepted', 'accepted', at(10)),
        receipt('delivered', 'delivered', at(11)),
        receipt('undelivered', 'failed', at(12), { drErrcode: '5' }),
      ]);
      const ids = [
        'pending',
        'refused',
        'accepted',
        'delivered',
        'undelivered',
        'inbound',
        'wa-read',
        'wa-sent',
      ];
      const stored = await store().findMessagesByIds(account, ids);
      const listedAs = (records: StoredMessage[]) =>
        [...records].sort((a, b) => comparePositions(positionOf(b), positionOf(a))).map(listedMessage);

      const page = await store().listHistory(account, { contactId: contact, channel: 'SMS', limit: 100 });
      expect(page).toStrictEqual(listedAs(stored.filter((m) => m.channel === 'SMS')));
      expect(page.map((m) => `${m.id}:${m.status}`)).toStrictEqual([
        'inbound:received',
        'undelivered:failed',
        'delivered:delivered',
        'accepted:sent',
        'refused:failed',
        'pending:pending',
      ]);
      const whatsapp = await store().listHistory(account, {
        contactId: contact,
        channel: 'WHATSAPP',
        limit: 100,
      });
      expect(whatsapp).toStrictEqual(listedAs(stored.filter((m) => m.channel === 'WHATSAPP')));
      expect(whatsapp.map((m) => `${m.id}:${m.status}`)).toStrictEqual(['wa-sent:sent', 'wa-read:read']);
      // A campaign's page reads the contact and conversation ids from each record's conversation.
      const inCampaign = await store().listHistory(account, { campaignId: 'c-listed', limit: 100 });
      expect(inCampaign).toStrictEqual(listedAs(stored.filter((m) => m.campaignId === 'c-listed')));
      const inCampaignOnWhatsapp = await store().listHistory(account, {
        campaignId: 'c-listed',
        channel: 'WHATSAPP',
        limit: 100,
      });
      expect(inCampaignOnWhatsapp).toStrictEqual(
        listedAs(stored.filter((m) => m.campaignId === 'c-listed' && m.channel === 'WHATSAPP')),
      );
      // And a contact's page in a campaign knows them from the conversation it read first.
      const contactInCampaign = await store().listHistory(account, {
        contactId: contact,
        channel: 'SMS',
        campaignId: 'c-listed',
        limit: 100,
      });
      expect(contactInCampaign).toStrictEqual(
        listedAs(stored.filter((m) => m.campaignId === 'c-listed' && m.channel === 'SMS')),
      );
      expect(contactInCampaign.map((m) => m.id)).toStrictEqual([
        'undelivered',
        'accepted',
        'refused',
        'pending',
      ]);
    });
  });

  describe('listHistory of a contact', () => {
    it('lists one contact on one channel, newest first, up to the limit', async () => {
      const { id: account } = await createAccount(store());
      const contact = newId();
      await ingest(store(), account, [
        sms('m-1', '447700900001', { contactId: contact, createdAt: at(1) }),
        sms('m-3', '447700900001', { createdAt: at(3) }),
        sms('m-2', '447700900001', { createdAt: at(2), direction: 'inbound' }),
        { id: 'w-1', channel: 'WHATSAPP', channelUserId: 'wa:x', contactId: contact, createdAt: at(4) },
        sms('o-1', '447700900002', { createdAt: at(5) }),
      ]);
      const page = await store().listHistory(account, { contactId: contact, channel: 'SMS', limit: 2 });
      expect(page.map((m) => m.id)).toStrictEqual(['m-3', 'm-2']);
      const all = await store().listHistory(account, { contactId: contact, channel: 'SMS', limit: 100 });
      expect(all.map((m) => m.id)).toStrictEqual(['m-3', 'm-2', 'm-1']);
      expect(new Set(all.map((m) => m.contactId))).toStrictEqual(new Set([contact]));
      const whatsapp = await store().listHistory(account, {
        contactId: contact,
        channel: 'WHATSAPP',
        limit: 100,
      });
      expect(whatsapp.map((m) => m.id)).toStrictEqual(['w-1']);
    });

    it('answers an unknown contact, or a contact without that channel, with nothing', async () => {
      const { id: account } = await createAccount(store());
      const contact = newId();
      await ingest(store(), account, [sms('m-1', '447700900001', { contactId: contact })]);
      expect(
        await store().listHistory(account, { contactId: newId(), channel: 'SMS', limit: 10 }),
      ).toStrictEqual([]);
      expect(
        await store().listHistory(account, { contactId: contact, channel: 'VIBER', limit: 10 }),
      ).toStrictEqual([]);
    });

    it('continues strictly before the given position', async () => {
      const { id: account } = await createAccount(store());
      const contact = newId();
      await ingest(store(), account, [
        sms('a', '447700900001', { contactId: contact, createdAt: at(1) }),
        sms('b', '447700900001', { createdAt: at(1) }),
        sms('c', '447700900001', { createdAt: at(2) }),
      ]);
      const before = { createdAt: at(1), id: 'b', channelUserId: '447700900001' };
      const older = await store().listHistory(account, {
        contactId: contact,
        channel: 'SMS',
        before,
        limit: 10,
      });
      expect(older.map((m) => m.id)).toStrictEqual(['a']);
    });

    it('pages through records sharing one createdAt, each exactly once', async () => {
      const { id: account } = await createAccount(store());
      const contact = newId();
      const items: MessageUpsert[] = [];
      for (let i = 0; i < 53; i++) {
        // Ids whose text order differs from their number order, and mostly one instant.
        items.push(
          sms(`m-${(i * 37) % 53}`, '447700900001', {
            contactId: contact,
            createdAt: at(i % 7 === 0 ? i : 0),
          }),
        );
      }
      await ingest(store(), account, items);
      const expected = newestFirst(
        await store().findMessagesByIds(
          account,
          items.map((m) => m.id),
        ),
      );
      expect(expected).toHaveLength(53);
      for (const size of [1, 5, 10, 53, 100]) {
        const pages = await allPages(store(), account, { contactId: contact, channel: 'SMS' }, size);
        expect(pages.flat().map(key)).toStrictEqual(expected);
        expect(pages.every((p) => p.length <= size)).toBe(true);
      }
    });

    it('never shifts or repeats older pages when new records arrive between pages', async () => {
      const { id: account } = await createAccount(store());
      const contact = newId();
      const first: MessageUpsert[] = [];
      for (let i = 0; i < 30; i++) {
        first.push(
          sms(`old-${String(i).padStart(2, '0')}`, '447700900001', {
            contactId: contact,
            createdAt: at(i % 3),
          }),
        );
      }
      await ingest(store(), account, first);
      const query = { contactId: contact, channel: 'SMS' as const };
      const expected = newestFirst(
        await store().findMessagesByIds(
          account,
          first.map((m) => m.id),
        ),
      );

      const seen: ListedMessage[] = [];
      let page = await store().listHistory(account, { ...query, limit: 7 });
      for (let round = 0; page.length > 0; round++) {
        seen.push(...page);
        // Newer records (and one at the very same instant with a larger id) land between pages.
        await ingest(store(), account, [
          sms(`new-${round}`, '447700900001', { createdAt: at(100 + round) }),
          sms(`zzz-${round}`, '447700900001', { createdAt: at(2) }),
        ]);
        const last = page.at(-1);
        if (!last) break;
        page = await store().listHistory(account, { ...query, before: positionOf(last), limit: 7 });
      }
      expect(seen.map(key)).toStrictEqual(expected);
    });
  });

  describe('listHistory of a campaign', () => {
    async function campaignAccount() {
      const { id: account } = await createAccount(store());
      const alice = newId();
      await ingest(store(), account, [
        sms('c1-a', '447700900001', { contactId: alice, campaignId: 'c-1', createdAt: at(1) }),
        sms('c1-b', '447700900002', { campaignId: 'c-1', createdAt: at(2) }),
        {
          id: 'c1-w',
          channel: 'WHATSAPP',
          channelUserId: 'wa:alice',
          contactId: alice,
          campaignId: 'c-1',
          createdAt: at(3),
        },
        sms('c1-c', '447700900001', { campaignId: 'c-1', createdAt: at(4) }),
        sms('c2-a', '447700900001', { campaignId: 'c-2', createdAt: at(5) }),
        sms('none', '447700900001', { createdAt: at(6) }),
      ]);
      return { account, alice };
    }

    it('lists a campaign across contacts and channels, newest first', async () => {
      const { account } = await campaignAccount();
      const page = await store().listHistory(account, { campaignId: 'c-1', limit: 10 });
      expect(page.map((m) => m.id)).toStrictEqual(['c1-c', 'c1-w', 'c1-b', 'c1-a']);
    });

    it('filters a campaign by channel', async () => {
      const { account } = await campaignAccount();
      const sms = await store().listHistory(account, { campaignId: 'c-1', channel: 'SMS', limit: 10 });
      expect(sms.map((m) => m.id)).toStrictEqual(['c1-c', 'c1-b', 'c1-a']);
      const whatsapp = await store().listHistory(account, {
        campaignId: 'c-1',
        channel: 'WHATSAPP',
        limit: 10,
      });
      expect(whatsapp.map((m) => m.id)).toStrictEqual(['c1-w']);
      expect(
        await store().listHistory(account, { campaignId: 'c-1', channel: 'RBM', limit: 10 }),
      ).toStrictEqual([]);
    });

    it("narrows a contact's history to a campaign", async () => {
      const { account, alice } = await campaignAccount();
      const page = await store().listHistory(account, {
        contactId: alice,
        channel: 'SMS',
        campaignId: 'c-1',
        limit: 10,
      });
      expect(page.map((m) => m.id)).toStrictEqual(['c1-c', 'c1-a']);
      const paged = await allPages(
        store(),
        account,
        { contactId: alice, channel: 'SMS', campaignId: 'c-1' },
        1,
      );
      expect(paged.flat().map((m) => m.id)).toStrictEqual(['c1-c', 'c1-a']);
      expect(
        await store().listHistory(account, {
          contactId: alice,
          channel: 'SMS',
          campaignId: 'c-9',
          limit: 10,
        }),
      ).toStrictEqual([]);
    });

    it('pages through recipients sharing createdAt and id, ordered by channelUserId', async () => {
      const { id: account } = await createAccount(store());
      const items: MessageUpsert[] = [];
      for (let m = 0; m < 6; m++) {
        for (let r = 0; r < 9; r++) {
          items.push(sms(`bulk-${m}`, `4477009000${(r * 4) % 9}${m}`, { campaignId: 'big', createdAt: NOW }));
        }
      }
      await ingest(store(), account, items);
      const expected = newestFirst(
        await store().findMessagesByIds(account, [...new Set(items.map((i) => i.id))]),
      );
      expect(expected).toHaveLength(54);
      for (const size of [1, 4, 9, 54]) {
        const pages = await allPages(store(), account, { campaignId: 'big' }, size);
        expect(pages.flat().map(key)).toStrictEqual(expected);
        const withChannel = await allPages(store(), account, { campaignId: 'big', channel: 'SMS' }, size);
        expect(withChannel.flat().map(key)).toStrictEqual(expected);
      }
    });

    it("never shows another account's campaign", async () => {
      const { account } = await campaignAccount();
      const { id: other } = await createAccount(store());
      await ingest(store(), other, [sms('x', '447700900001', { campaignId: 'c-1', createdAt: at(10) })]);
      const page = await store().listHistory(account, { campaignId: 'c-1', limit: 10 });
      expect(page.map((m) => m.id)).not.toContain('x');
      expect(
        (await store().listHistory(other, { campaignId: 'c-1', limit: 10 })).map((m) => m.id),
      ).toStrictEqual(['x']);
    });
  });

  describe('prune', () => {
    it('deletes the records created before the cutoff and reports how many', async () => {
      // Far in the past, so no other test's records fall before this cutoff.
      const old = (day: number) => new Date(Date.UTC(1990, 0, day));
      const { id: account } = await createAccount(store());
      const { id: other } = await createAccount(store());
      await ingest(store(), account, [
        sms('gone-1', '447700900001', { createdAt: old(1) }),
        sms('gone-1', '447700900002', { createdAt: old(1) }),
        { id: 'gone-2', channel: 'WHATSAPP', channelUserId: 'wa:a', createdAt: old(2) },
        sms('kept-1', '447700900001', { createdAt: old(10) }),
        sms('kept-2', '447700900001', { createdAt: NOW }),
      ]);
      await ingest(store(), other, [sms('gone-3', '447700900001', { createdAt: old(3) })]);
      expect(await store().prune(old(10))).toBe(4);
      expect(await store().findMessagesByIds(account, ['gone-1', 'gone-2', 'kept-1', 'kept-2'])).toHaveLength(
        2,
      );
      expect(await store().findDlr(account, 'gone-1')).toStrictEqual([]);
      expect(await store().findMessagesByIds(other, ['gone-3'])).toStrictEqual([]);
      expect(await store().prune(old(10))).toBe(0);
      // Contacts outlive their records: the next message to that number joins the same contact.
      const contact = await store().resolveContact(account, 'SMS', '447700900002');
      expect(contact).not.toBeNull();
      await ingest(store(), account, [sms('again', '447700900002')]);
      expect((await store().findMessagesByIds(account, ['again']))[0]?.contactId).toBe(contact);
    });
  });
});
