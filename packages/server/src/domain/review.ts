import { type NetworkName, networkName } from './networks.js';
import { dayLabel, LATENCY_BOUNDS_MS, LATENCY_BUCKETS, NONE } from './rollup.js';
import { DR_ERRCODES, DR_STATUSCODES, type DrErrcode, type DrStatuscode } from './vocabulary.js';

/**
 * The review page's figures (CONTRACT §13 page 4, docs/review.md), from the rollup rows of a period
 * (domain/rollup.ts keeps them; `QueryStore.reviewSummary` reads them).
 */

/** A period of whole UTC days: the day of `from` through the day of `to`, both included. */
export interface ReviewPeriod {
  from: Date;
  to: Date;
  /** Only this campaign's recipients; absent for all. */
  campaignId?: string;
}

/** The rollup rows of a period, as the store reads them: `''` stands for none (no network, no receipt yet). */
export interface ReviewRows {
  /** Recipients per (day, network, drStatuscode, drErrcode), summed over the period's campaigns. */
  counts: { day: number; network: string; state: string; errcode: string; n: number }[];
  /** Recipients with a final receipt per time-to-final-receipt bucket (domain/rollup.ts LATENCY_BOUNDS_MS). */
  latency: { bucket: number; n: number }[];
}

/** Recipients of a group (the period, a network, a day) by state. */
export interface ReviewTally {
  /** Recipients sent (every outbound SMS recipient, with a receipt or not). */
  sent: number;
  /** Recipients by their current `drStatuscode`; `none` for those with no receipt yet. */
  receipts: Record<DrStatuscode | 'none', number>;
  /** delivered ÷ sent, 0 when nothing was sent. */
  deliveryRate: number;
  /** Recipients with a receipt, by its `drErrcode`, most frequent first, with the spec's meaning. */
  errcodes: { errcode: string; meaning: string; n: number }[];
}

export interface ReviewFigures extends ReviewTally {
  /** Per network (MCC+MNC, `null` for recipients sent with no network), most recipients first. */
  byNetwork: (ReviewTally & { network: string | null; name: NetworkName | null })[];
  /** Per UTC day that has recipients, oldest first (`YYYY-MM-DD`). */
  byDay: (ReviewTally & { day: string })[];
  /**
   * Time from sending to the final receipt, in milliseconds, of the recipients that have one: median and 90th
   * percentile as the upper bound of the histogram bucket they fall in (`null` above the last bound, or when no
   * recipient has a final receipt), and the histogram itself.
   */
  timeToFinal: {
    finals: number;
    medianMs: number | null;
    p90Ms: number | null;
    buckets: { upToMs: number | null; n: number }[];
  };
}

const emptyTally = (): { receipts: Record<string, number>; errcodes: Map<string, number> } => ({
  receipts: Object.fromEntries([...DR_STATUSCODES, 'none'].map((s) => [s, 0])),
  errcodes: new Map(),
});

type Tally = ReturnType<typeof emptyTally>;

function addTo(tally: Tally, state: string, errcode: string, n: number): void {
  const key = state === NONE ? 'none' : state;
  tally.receipts[key] = (tally.receipts[key] ?? 0) + n;
  if (errcode !== NONE) tally.errcodes.set(errcode, (tally.errcodes.get(errcode) ?? 0) + n);
}

function finish(tally: Tally): ReviewTally {
  const receipts = tally.receipts as Record<DrStatuscode | 'none', number>;
  const sent = Object.values(receipts).reduce((a, b) => a + b, 0);
  return {
    sent,
    receipts,
    deliveryRate: sent === 0 ? 0 : receipts.delivered / sent,
    errcodes: [...tally.errcodes]
      .filter(([, n]) => n !== 0)
      .sort(([a, x], [b, y]) => y - x || (a < b ? -1 : 1))
      .map(([errcode, n]) => ({
        errcode,
        meaning: Object.hasOwn(DR_ERRCODES, errcode) ? DR_ERRCODES[errcode as DrErrcode] : 'Unlisted code',
        n,
      })),
  };
}

/** The bucket upper bound where the `q` quantile of the histogram falls (null past the last bound or empty). */
function quantile(histogram: readonly number[], finals: number, q: number): number | null {
  if (finals === 0) return null;
  const rank = Math.ceil(q * finals);
  let seen = 0;
  for (let i = 0; i < histogram.length; i++) {
    seen += histogram[i] ?? 0;
    if (seen >= rank) return LATENCY_BOUNDS_MS[i] ?? null;
  }
  return null;
}

/** The review page's figures from a period's rollup rows. */
export function reviewFigures(rows: ReviewRows): ReviewFigures {
  const total = emptyTally();
  const networks = new Map<string, Tally>();
  const days = new Map<number, Tally>();
  for (const r of rows.counts) {
    addTo(total, r.state, r.errcode, r.n);
    const network = networks.get(r.network) ?? emptyTally();
    networks.set(r.network, network);
    addTo(network, r.state, r.errcode, r.n);
    const day = days.get(r.day) ?? emptyTally();
    days.set(r.day, day);
    addTo(day, r.state, r.errcode, r.n);
  }
  const histogram = new Array<number>(LATENCY_BUCKETS).fill(0);
  for (const l of rows.latency) histogram[l.bucket] = (histogram[l.bucket] ?? 0) + l.n;
  const finals = histogram.reduce((a, b) => a + b, 0);
  return {
    ...finish(total),
    byNetwork: [...networks]
      .map(([network, tally]) => ({
        network: network === NONE ? null : network,
        name: network === NONE ? null : networkName(network),
        ...finish(tally),
      }))
      .sort((a, b) => b.sent - a.sent || ((a.network ?? '') < (b.network ?? '') ? -1 : 1)),
    byDay: [...days]
      .sort(([a], [b]) => a - b)
      .map(([day, tally]) => ({ day: dayLabel(day), ...finish(tally) })),
    timeToFinal: {
      finals,
      medianMs: quantile(histogram, finals, 0.5),
      p90Ms: quantile(histogram, finals, 0.9),
      buckets: histogram.map((n, i) => ({ upToMs: LATENCY_BOUNDS_MS[i] ?? null, n })),
    },
  };
}
