import type { ReviewFigures, ReviewTally } from '../domain/review.js';
import { DR_STATUSCODES } from '../domain/vocabulary.js';
import type { CsvCell } from './csv.js';

/**
 * The review page's four tables, built once from the figures: the page renders them and the CSV downloads write
 * them, so a download always holds what the page showed. Cells are raw values (a rate is a fraction of 1); how a
 * person reads them is the column's kind, which the page formats and the CSV leaves alone.
 */

export const REVIEW_TABLES = ['status', 'errcode', 'network', 'day'] as const;
export type ReviewTableName = (typeof REVIEW_TABLES)[number];

export const isReviewTable = (value: string): value is ReviewTableName =>
  (REVIEW_TABLES as readonly string[]).includes(value);

export type ColumnKind = 'text' | 'code' | 'count' | 'rate';

export interface ReviewTable {
  name: ReviewTableName;
  caption: string;
  columns: { label: string; kind: ColumnKind }[];
  rows: CsvCell[][];
}

/** The `drStatuscode` columns, with recipients that have no receipt yet last. */
const STATES = [...DR_STATUSCODES, 'none'] as const;
const stateLabel = (state: (typeof STATES)[number]) => (state === 'none' ? 'no receipt yet' : state);

/**
 * A group's error codes in one cell, most frequent first, each with the spec's meaning the whole period's table
 * shows (the tally's own, from domain/review.ts): `0 Normal: 2; 3 Number deactivated or invalid: 1`. A meaning
 * may hold commas, hence the semicolons.
 */
const errcodeCell = (tally: ReviewTally) =>
  tally.errcodes.map((e) => `${e.errcode} ${e.meaning}: ${e.n}`).join('; ');

/** The columns a network's or a day's row shares: the same figures as the whole period's. */
const tallyColumns: ReviewTable['columns'] = [
  { label: 'Sent', kind: 'count' },
  ...STATES.map((state) => ({ label: stateLabel(state), kind: 'count' as const })),
  { label: 'Delivery rate', kind: 'rate' },
  { label: 'drErrcode meaning: recipients', kind: 'text' },
];
const tallyCells = (tally: ReviewTally): CsvCell[] => [
  tally.sent,
  ...STATES.map((state) => tally.receipts[state]),
  tally.deliveryRate,
  errcodeCell(tally),
];

export function reviewTables(figures: ReviewFigures): Record<ReviewTableName, ReviewTable> {
  const share = (n: number) => (figures.sent === 0 ? 0 : n / figures.sent);
  return {
    status: {
      name: 'status',
      caption: 'Recipients by drStatuscode',
      columns: [
        { label: 'drStatuscode', kind: 'code' },
        { label: 'Recipients', kind: 'count' },
        { label: 'Share of sent', kind: 'rate' },
      ],
      rows: STATES.map((state) => [
        stateLabel(state),
        figures.receipts[state],
        share(figures.receipts[state]),
      ]),
    },
    errcode: {
      name: 'errcode',
      caption: 'Receipts by drErrcode',
      columns: [
        { label: 'drErrcode', kind: 'code' },
        { label: 'Meaning', kind: 'text' },
        { label: 'Recipients', kind: 'count' },
        { label: 'Share of sent', kind: 'rate' },
      ],
      rows: figures.errcodes.map((e) => [e.errcode, e.meaning, e.n, share(e.n)]),
    },
    network: {
      name: 'network',
      caption: 'By network',
      columns: [
        { label: 'MCC+MNC', kind: 'code' },
        { label: 'Country', kind: 'text' },
        { label: 'Operator', kind: 'text' },
        ...tallyColumns,
      ],
      rows: figures.byNetwork.map((n) => [
        n.network ?? 'none',
        n.network === null ? 'no network given' : (n.name?.country ?? 'unknown'),
        n.network === null ? '' : (n.name?.operator ?? 'unknown'),
        ...tallyCells(n),
      ]),
    },
    day: {
      name: 'day',
      caption: 'By day (UTC, the day of sending)',
      columns: [{ label: 'Day', kind: 'code' }, ...tallyColumns],
      rows: figures.byDay.map((d) => [d.day, ...tallyCells(d)]),
    },
  };
}
