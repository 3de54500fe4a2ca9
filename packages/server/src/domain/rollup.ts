import type { StoredMessage } from './records.js';
import type { DrStatuscode } from './vocabulary.js';

/**
 * The review rollup (CONTRACT §13 page 4, docs/review.md): what each outbound SMS recipient counts for, so the
 * review page sums a few rows per day instead of scanning messages. A recipient counts once in `counts`, under
 * the UTC day it was sent, its campaign, its network, its current `drStatuscode` and `drErrcode`; once its
 * receipt is final it also counts once in `latency`, in the bucket of the time from sending to that receipt.
 *
 * The stores never decide any of this: they hand every record a write changes, before and after, to
 * {@link rollupDelta} and add what it returns, one upsert per changed key, in the transaction of the write.
 * The SQL that backfills and prunes (store/rollup-sql.ts) is generated from the constants here.
 */

/** Stands for "none" in a key column (no campaign, no network, no receipt yet): keys are never NULL. */
export const NONE = '';

/** The one non-final `drStatuscode`: a receipt that says the message is still on its way. */
export const NON_FINAL_STATUSCODES: readonly DrStatuscode[] = ['accepted'];

/**
 * Upper bounds (exclusive, milliseconds) of the time-to-final-receipt buckets, log-scaled 1-2-5 from one second
 * to two days; bucket i holds [bound i-1, bound i), and the last bucket (index `LATENCY_BOUNDS_MS.length`)
 * everything from two days on. Fixed forever: changing them would mix buckets of two scales in stored rows.
 */
export const LATENCY_BOUNDS_MS: readonly number[] = [
  1_000, 2_000, 5_000, 10_000, 20_000, 30_000, 60_000, 120_000, 300_000, 600_000, 1_200_000, 1_800_000,
  3_600_000, 7_200_000, 14_400_000, 28_800_000, 43_200_000, 86_400_000, 172_800_000,
];
export const LATENCY_BUCKETS = LATENCY_BOUNDS_MS.length + 1;

const DAY_MS = 86_400_000;

/** The rollup's day of an instant: whole UTC days since 1970-01-01. */
export const dayOf = (at: Date): number => Math.floor(at.getTime() / DAY_MS);

/** The first instant of a rollup day. */
export const dayStart = (day: number): Date => new Date(day * DAY_MS);

/** A rollup day as `YYYY-MM-DD`. */
export const dayLabel = (day: number): string => dayStart(day).toISOString().slice(0, 10);

/** The bucket of a time from sending to the final receipt; a receipt dated before its sending counts as 0. */
export function latencyBucket(ms: number): number {
  for (let i = 0; i < LATENCY_BOUNDS_MS.length; i++) {
    if (ms < (LATENCY_BOUNDS_MS[i] as number)) return i;
  }
  return LATENCY_BOUNDS_MS.length;
}

export const isFinal = (code: DrStatuscode): boolean => !NON_FINAL_STATUSCODES.includes(code);

/** A key of the counts: the rollup row a recipient counts in. */
export interface CountKey {
  day: number;
  campaignId: string;
  network: string;
  state: string;
  errcode: string;
}

/** A key of the latency histogram. */
export interface LatencyKey {
  day: number;
  campaignId: string;
  bucket: number;
}

/** What a batch adds to the rollup of one account: a signed amount per changed key, none zero. */
export interface RollupDelta {
  counts: (CountKey & { n: number })[];
  latency: (LatencyKey & { n: number })[];
}

/** Where a record counts, or null for a record that is not an outbound SMS recipient. */
export function countKeyOf(m: StoredMessage): CountKey | null {
  if (m.sms === null || m.direction !== 'outbound') return null;
  const receipt = m.sms.receipt;
  return {
    day: dayOf(m.createdAt),
    campaignId: m.campaignId ?? NONE,
    network: m.sms.network ?? NONE,
    state: receipt?.drStatuscode ?? NONE,
    errcode: receipt?.drErrcode ?? NONE,
  };
}

/** Where a record counts in the histogram, or null while it has no final receipt. */
export function latencyKeyOf(m: StoredMessage): LatencyKey | null {
  const receipt = m.sms?.receipt;
  if (m.sms === null || m.direction !== 'outbound' || !receipt || !isFinal(receipt.drStatuscode)) return null;
  return {
    day: dayOf(m.createdAt),
    campaignId: m.campaignId ?? NONE,
    bucket: latencyBucket(receipt.drTime.getTime() - m.createdAt.getTime()),
  };
}

const countId = (k: CountKey) => JSON.stringify([k.day, k.campaignId, k.network, k.state, k.errcode]);
const latencyId = (k: LatencyKey) => JSON.stringify([k.day, k.campaignId, k.bucket]);

/**
 * What the changes of a batch add to the rollup: each change is a record before (null when new or gone) and
 * after (null when gone). A change that leaves a recipient's keys as they were (a replayed or older receipt, a
 * message update that touches nothing counted) adds nothing; the moves of one key in one batch are summed.
 */
export function rollupDelta(
  changes: Iterable<readonly [StoredMessage | null | undefined, StoredMessage | null | undefined]>,
): RollupDelta {
  const counts = new Map<string, CountKey & { n: number }>();
  const latency = new Map<string, LatencyKey & { n: number }>();
  const add = <K>(map: Map<string, K & { n: number }>, id: (k: K) => string, key: K | null, n: number) => {
    if (key === null) return;
    const at = id(key);
    const held = map.get(at);
    if (held) held.n += n;
    else map.set(at, { ...key, n });
  };
  for (const [before, after] of changes) {
    if (before) {
      add(counts, countId, countKeyOf(before), -1);
      add(latency, latencyId, latencyKeyOf(before), -1);
    }
    if (after) {
      add(counts, countId, countKeyOf(after), 1);
      add(latency, latencyId, latencyKeyOf(after), 1);
    }
  }
  return {
    counts: [...counts.values()].filter((k) => k.n !== 0),
    latency: [...latency.values()].filter((k) => k.n !== 0),
  };
}
