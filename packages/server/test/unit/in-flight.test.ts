import { describe, expect, it } from 'vitest';
import { type MessageBatchState, planMessages } from '../../src/domain/ingest/plan-messages.js';
import type { MessageUpsert } from '../../src/domain/ingest/precedence.js';
import { InFlight, type InFlightBatch } from '../../src/store/postgres/in-flight.js';
import { batchState, NOW, sms } from '../conformance/fixtures.js';

/** What message batches of one process take from each other's creations (store/postgres/in-flight.ts). */

const ACCOUNT = 'acc-1';

/** The state of a batch that found nothing stored. */
const empty = (): MessageBatchState => batchState(ACCOUNT);

/** Begins a batch, takes what it may, plans it and registers what it creates. */
function run(inFlight: InFlight, items: MessageUpsert[], state = empty()) {
  const batch = inFlight.begin(ACCOUNT);
  const adopted = inFlight.adopt(batch, state, items);
  const planned = planMessages(adopted.state, items, NOW);
  if (!planned.ok) throw new Error('unexpected item errors');
  inFlight.register(batch, ACCOUNT, planned.plan);
  return { batch, plan: planned.plan, dependencies: adopted.dependencies };
}

const contactOf = (plan: ReturnType<typeof run>['plan'], to: string) =>
  plan.records.find((r) => r.record.channelUserId === to)?.record.contactId;

describe('message batches in flight in one process', () => {
  it('take the contact and conversation another batch is creating for a new number, and depend on it', () => {
    const inFlight = new InFlight();
    const first = run(inFlight, [sms('a', '447700900001')]);
    const second = run(inFlight, [sms('b', '447700900001'), sms('c', '447700900002')]);
    expect(second.dependencies).toEqual([first.batch]);
    expect(contactOf(second.plan, '447700900001')).toBe(contactOf(first.plan, '447700900001'));
    expect(second.plan.records[0]?.record.conversationId).toBe(first.plan.records[0]?.record.conversationId);
    // It creates only what is new to both.
    expect(second.plan.identities.map((i) => i.channelUserId)).toEqual(['447700900002']);
    expect(second.plan.conversations).toHaveLength(1);
  });

  it('take nothing when the batch names a contact, or creates a record the other creates too', () => {
    const inFlight = new InFlight();
    run(inFlight, [sms('a', '447700900001')]);
    const named = run(inFlight, [
      sms('b', '447700900001', { contactId: '0190a0b0-0000-7000-8000-000000000001' }),
    ]);
    expect(named.dependencies).toEqual([]);
    const same = run(inFlight, [sms('a', '447700900001'), sms('c', '447700900003')]);
    expect(same.dependencies).toEqual([]);
  });

  it('forget what a failed batch was creating', async () => {
    const inFlight = new InFlight();
    const first = run(inFlight, [sms('a', '447700900001')]);
    const waiting = run(inFlight, [sms('b', '447700900001')]);
    first.batch.settle(false);
    expect(await waiting.dependencies[0]?.settled).toBe(false);
    waiting.batch.settle(false);
    const later = run(inFlight, [sms('c', '447700900001')]);
    expect(later.dependencies).toEqual([]);
    expect(later.plan.identities).toHaveLength(1);
  });

  it('keep what a committed batch created while a batch that began before its commit is in flight', async () => {
    const inFlight = new InFlight();
    const first = run(inFlight, [sms('a', '447700900001')]);
    // Begun (and so possibly read) before the first one's commit, planned after it.
    const early: InFlightBatch = inFlight.begin(ACCOUNT);
    first.batch.settle(true);
    const taken = inFlight.adopt(early, empty(), [sms('b', '447700900001')]);
    expect(taken.dependencies).toEqual([first.batch]);
    expect(await first.batch.settled).toBe(true);
    early.settle(true);
    // A batch that begins after the commit reads it from the database: nothing is kept for it.
    const late = inFlight.begin(ACCOUNT);
    expect(inFlight.adopt(late, empty(), [sms('c', '447700900001')]).dependencies).toEqual([]);
  });

  it('keep the creations of the last 64 committed batches only, however long an early batch is stuck', () => {
    const inFlight = new InFlight();
    const stuck = inFlight.begin(ACCOUNT);
    const committed = Array.from({ length: 65 }, (_, n) => {
      const done = run(inFlight, [sms(`m-${n}`, `4477009${String(n).padStart(5, '0')}`)]);
      done.batch.settle(true);
      return done.batch;
    });
    // The oldest went (the stuck batch would meet its contact in the database); the newest is still known.
    expect(inFlight.adopt(stuck, empty(), [sms('x', '447700900000')]).dependencies).toEqual([]);
    expect(inFlight.adopt(stuck, empty(), [sms('y', '447700900064')]).dependencies).toEqual([committed[64]]);
  });
});
