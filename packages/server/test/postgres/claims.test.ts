import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ReceiptInput } from '../../src/domain/ingest/precedence.js';
import type { ClaimedDelivery, ClaimRequest, Store } from '../../src/store/store.js';
import { NOW, newAccount, sms } from '../conformance/fixtures.js';
import { dropSchema, freshSchema, openStore, POSTGRES_URL } from './harness.js';

/**
 * Two relays (stores with pools of their own: two instances) claiming from one delivery queue at once
 * (CONTRACT §9): a delivery is never leased to both at the same time, and a recipient never has two attempts in
 * flight, even while new receipts keep superseding deliveries that are in flight.
 */

const TO = '447700900123';
const URL = 'https://hooks.example/cb';
const CODES = ['failed', 'expired'] as const;

const request = (limit: number): ClaimRequest => ({
  now: new Date(),
  limit,
  perAccount: 1000,
  inFlight: new Map(),
  leaseUntil: new Date(Date.now() + 120_000),
  lease: randomUUID(),
});

/** An attempt as the test's relays saw it: from the claim's answer to the moment the finish was sent. */
interface Hold {
  relay: number;
  id: string;
  recipient: string;
  claimedAt: number;
  releasedAt: number;
}

/**
 * Holds that certainly overlapped: each was claimed (the claim had committed) before the other's finish was
 * even sent. Lease intervals lie within these bounds, so this never reports a false overlap.
 */
function overlaps(holds: readonly Hold[], keyOf: (h: Hold) => string): string[] {
  const byKey = new Map<string, Hold[]>();
  for (const h of holds) byKey.set(keyOf(h), [...(byKey.get(keyOf(h)) ?? []), h]);
  const found: string[] = [];
  for (const [key, list] of byKey) {
    for (let i = 0; i < list.length; i++) {
      for (let j = i + 1; j < list.length; j++) {
        const a = list[i] as Hold;
        const b = list[j] as Hold;
        if (a.claimedAt < b.releasedAt && b.claimedAt < a.releasedAt) {
          found.push(`${key}: relay ${a.relay} ${a.id} and relay ${b.relay} ${b.id}`);
        }
      }
    }
  }
  return found;
}

describe.skipIf(!POSTGRES_URL)('PostgreSQL delivery claims from two instances', () => {
  let schema: string;
  let relays: Store[];
  let writer: Store;
  let account: string;

  beforeEach(async () => {
    schema = freshSchema();
    writer = openStore(schema);
    await writer.migrate();
    relays = [openStore(schema), openStore(schema)];
    ({ id: account } = await writer.createAccount(newAccount({ callbackUrl: URL })));
  });
  afterEach(async () => {
    await Promise.all([writer, ...relays].map((s) => s.close()));
    await dropSchema(schema);
  });

  /** Messages m-0…m-(n-1), one recipient each, and a first receipt for each: n pending deliveries. */
  async function queue(n: number): Promise<string[]> {
    const ids = Array.from({ length: n }, (_, i) => `m-${i}`);
    const past = new Date(Date.now() - 60_000);
    expect(
      (
        await writer.ingestMessages(
          account,
          ids.map((id) => sms(id, TO)),
          NOW,
        )
      ).ok,
    ).toBe(true);
    const receipts = ids.map(
      (id): ReceiptInput => ({ messageId: id, drStatuscode: 'accepted', drErrcode: '0', drTime: NOW }),
    );
    const outcome = await writer.ingestReceipts(account, receipts, past);
    expect(outcome.ok && outcome.value.applied).toBe(n);
    return ids;
  }

  it('never leases one delivery to both', { timeout: 60_000 }, async () => {
    await queue(120);
    const claimed = await Promise.all(
      relays.map(async (relay) => {
        const mine: ClaimedDelivery[] = [];
        // An empty claim may only mean the other relay won every candidate of this round.
        for (let empty = 0; empty < 3; ) {
          const batch = await relay.claimDeliveries(request(7));
          empty = batch.length === 0 ? empty + 1 : 0;
          mine.push(...batch);
        }
        return mine;
      }),
    );
    const all = claimed.flat().map((c) => c.id);
    expect(claimed.every((mine) => mine.length > 0)).toBe(true);
    expect(all).toHaveLength(120);
    expect(new Set(all).size).toBe(120);
  });

  it('keeps one attempt per recipient in flight while new receipts supersede deliveries', {
    timeout: 120_000,
  }, async () => {
    const ids = await queue(12);
    const holds: Hold[] = [];
    let writing = true;
    let inFlight = 0;

    // New receipts for random recipients: each supersedes the recipient's pending (maybe in-flight) delivery.
    const written = (async () => {
      const visits = new Map<string, number>();
      for (let round = 0; round < 40; round++) {
        const chosen = [
          ...new Set(Array.from({ length: 4 }, () => ids[Math.floor(Math.random() * ids.length)])),
        ];
        const receipts = chosen.map((id): ReceiptInput => {
          const visit = (visits.get(id as string) ?? 0) + 1;
          visits.set(id as string, visit);
          return {
            messageId: id as string,
            drStatuscode: CODES[visit % 2] as (typeof CODES)[number],
            drErrcode: '0',
            drTime: new Date(NOW.getTime() + visit * 1000),
          };
        });
        const outcome = await writer.ingestReceipts(account, receipts, new Date(Date.now() - 1000));
        if (!outcome.ok || outcome.value.applied !== receipts.length) {
          throw new Error(`round ${round}: ${JSON.stringify(outcome)}`);
        }
        await sleep(Math.random() * 4);
      }
    })().then(
      () => null,
      (error: unknown) => error,
    );
    void written.finally(() => {
      writing = false;
    });

    const attempt = async (relay: Store, r: number, claim: ClaimedDelivery) => {
      const hold: Hold = {
        relay: r,
        id: claim.id,
        recipient: JSON.parse(claim.body).messageid,
        claimedAt: performance.now(),
        releasedAt: 0,
      };
      await sleep(Math.random() * 20);
      hold.releasedAt = performance.now();
      holds.push(hold);
      // While receipts keep coming, most attempts fail and are due again at once.
      const delivered = !writing || Math.random() < 0.3;
      await relay.finishAttempts([
        {
          claim: claim,
          outcome: {
            attempt: { at: new Date(), httpStatus: delivered ? 204 : 503, error: null, durationMs: 1 },
            next: delivered ? { state: 'delivered' } : { state: 'pending', at: new Date(Date.now() - 1) },
          },
        },
      ]);
    };

    // Each relay keeps up to four attempts going, claiming more as soon as one ends, as the real relay does.
    const relayed = relays.map(async (relay, r) => {
      const attempts = new Set<Promise<void>>();
      for (let idle = 0; idle < 40; ) {
        const batch = await relay.claimDeliveries(request(4 - attempts.size));
        inFlight += batch.length;
        for (const claim of batch) {
          const running: Promise<void> = attempt(relay, r, claim).finally(() => {
            attempts.delete(running);
            inFlight--;
          });
          attempts.add(running);
        }
        if (batch.length > 0 || writing || inFlight > 0) idle = 0;
        else idle++;
        await (attempts.size >= 4 ? Promise.race(attempts) : sleep(1));
      }
      await Promise.all(attempts);
    });
    await Promise.all(relayed);
    const failure = await written;
    if (failure) throw failure;

    expect(holds.length).toBeGreaterThan(ids.length);
    expect(new Set(holds.map((h) => h.relay)).size).toBe(2);
    expect(overlaps(holds, (h) => h.id)).toStrictEqual([]);
    expect(overlaps(holds, (h) => h.recipient)).toStrictEqual([]);

    const deliveries = [];
    for (let before: number | undefined; ; ) {
      const page = await writer.listDeliveries(account, {
        limit: 100,
        ...(before ? { beforeSeq: before } : {}),
      });
      deliveries.push(...page);
      if (page.length < 100) break;
      before = page.at(-1)?.seq;
    }
    // Nothing left behind, and each recipient's newest state reached the receiver.
    expect(deliveries.filter((d) => d.state === 'pending' || d.state === 'dead')).toStrictEqual([]);
    for (const id of ids) {
      const newest = deliveries.find((d) => d.messageId === id);
      expect(newest?.state).toBe('delivered');
    }
    // Attempts of a recipient follow its events' order: once a newer delivery was tried, an older one never is.
    const seqOf = new Map(deliveries.map((d) => [d.id, d.seq]));
    for (const id of ids) {
      const tried = holds
        .filter((h) => h.recipient === id)
        .sort((a, b) => a.claimedAt - b.claimedAt)
        .map((h) => seqOf.get(h.id) ?? -1);
      expect(tried).toStrictEqual([...tried].sort((a, b) => a - b));
    }
    expect(await writer.nextDeliveryDue()).toBeNull();
  });
});
