import { isCampaignId } from './formats.js';
import type { ReviewPeriod } from './review.js';
import { dayLabel, dayOf, dayStart } from './rollup.js';

/**
 * The review page's period (CONTRACT §13 page 4): whole UTC days `from` through `to`, both included, as a person
 * types them (`YYYY-MM-DD`), and optionally one campaign. Default: the last 30 days, today included.
 */

export const DEFAULT_REVIEW_DAYS = 30;
/**
 * The longest period one page covers. The rollup holds a row per key in use per day, so a year is still a few
 * hundred thousand rows at most; beyond that the ≤ 300 ms of the contract would no longer hold for every account.
 */
export const MAX_REVIEW_DAYS = 366;

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** A period as the page shows it and links to it: labels of its days, and the campaign or ''. */
export interface ReviewPeriodForm {
  from: string;
  to: string;
  campaign: string;
}

export type ReviewPeriodResult =
  | { ok: true; period: ReviewPeriod; form: ReviewPeriodForm; days: number }
  | { ok: false; detail: string; form: ReviewPeriodForm };

/** The rollup day of a `YYYY-MM-DD` that names a real calendar day from 1970 on, or null. */
function parseDay(value: string): number | null {
  const m = DATE.exec(value);
  if (!m) return null;
  const at = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  // Date.UTC rolls 2026-02-30 over into March: a real day reads back as written.
  if (Number.isNaN(at) || new Date(at).toISOString().slice(0, 10) !== value || at < 0) return null;
  return dayOf(new Date(at));
}

/**
 * Reads `from`, `to` and `campaign` (each absent or empty for its default). An empty `from` is 29 days before
 * `to`, an empty `to` is today (or `from` + 29 days when only `from` is given, never past today).
 */
export function parseReviewPeriod(
  raw: { from?: string | undefined; to?: string | undefined; campaign?: string | undefined },
  now: Date,
): ReviewPeriodResult {
  const typed: ReviewPeriodForm = { from: raw.from ?? '', to: raw.to ?? '', campaign: raw.campaign ?? '' };
  const bad = (detail: string): ReviewPeriodResult => ({ ok: false, detail, form: typed });
  const today = dayOf(now);
  const span = DEFAULT_REVIEW_DAYS - 1;

  const from = typed.from === '' ? null : parseDay(typed.from);
  if (typed.from !== '' && from === null)
    return bad('“From” must be a date written YYYY-MM-DD, 1970 or later.');
  const to = typed.to === '' ? null : parseDay(typed.to);
  if (typed.to !== '' && to === null) return bad('“To” must be a date written YYYY-MM-DD, 1970 or later.');
  if (typed.campaign !== '' && !isCampaignId(typed.campaign))
    return bad('A campaign is 1-64 characters of A-Z a-z 0-9 . _ : -');

  const last = to ?? (from === null ? today : Math.min(from + span, Math.max(today, from)));
  const first = from ?? Math.max(0, last - span);
  if (first > last) return bad('“From” must not be after “To”.');
  const days = last - first + 1;
  if (days > MAX_REVIEW_DAYS)
    return bad(`A period covers at most ${MAX_REVIEW_DAYS} days; this one covers ${days}.`);

  const form = { from: dayLabel(first), to: dayLabel(last), campaign: typed.campaign };
  const period: ReviewPeriod = { from: dayStart(first), to: dayStart(last) };
  if (typed.campaign !== '') period.campaignId = typed.campaign;
  return { ok: true, period, form, days };
}
