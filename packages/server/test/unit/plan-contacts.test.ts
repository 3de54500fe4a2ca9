import { describe, expect, it } from 'vitest';
import { identityKey, type MessageBatchState, planMessages } from '../../src/domain/ingest/plan-messages.js';
import { batchState, NOW, sms } from '../conformance/fixtures.js';

/**
 * The contacts a message batch creates, as the stores write them: minted ones are new for certain (PostgreSQL
 * inserts them plainly), named ones may exist already (kept as they are).
 */

const NAMED = '0190a0b0-0000-7000-8000-000000000001';

const stateOwning = (owners: [string, string][] = []): MessageBatchState =>
  batchState('acc-1', { owners: new Map(owners) });

describe('the contacts a message plan creates', () => {
  it('mints one per new number, and lists a contact an item names apart, once', () => {
    const planned = planMessages(
      stateOwning(),
      [
        sms('a', '447700900001'),
        sms('b', '447700900001'),
        sms('c', '447700900002', { contactId: NAMED }),
        sms('d', '447700900003'),
      ],
      NOW,
    );
    if (!planned.ok) throw new Error('unexpected item errors');
    const { contacts, records } = planned.plan;
    expect(contacts.named).toEqual([NAMED]);
    expect(contacts.minted).toHaveLength(2);
    expect(new Set(records.map((r) => r.record.contactId))).toEqual(new Set([...contacts.minted, NAMED]));
  });

  it('creates none for a number whose contact is stored', () => {
    const planned = planMessages(
      stateOwning([[identityKey('SMS', '447700900001'), NAMED]]),
      [sms('a', '447700900001')],
      NOW,
    );
    if (!planned.ok) throw new Error('unexpected item errors');
    expect(planned.plan.contacts).toEqual({ minted: [], named: [] });
    expect(planned.plan.records[0]?.record.contactId).toBe(NAMED);
  });
});
