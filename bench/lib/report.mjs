// How `npm run bench` prints figures: numbers with thousands separators, and markdown tables (docs/benchmarks.md
// takes them as they are).

/** `x` with `d` decimals and thousands separators; '–' when it is not a number. */
export const fmt = (x, d = 0) =>
  Number.isFinite(x) ? x.toLocaleString('en', { maximumFractionDigits: d, minimumFractionDigits: d }) : '–';

/** The median of `xs` (the mean of the middle two when their count is even); NaN when there are none. */
export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0
    ? Number.NaN
    : s.length % 2
      ? s[(s.length - 1) / 2]
      : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** A markdown table: `columns` are [heading, ':' for a right-aligned column or ''], `rows` arrays of cells. */
export function markdownTable(columns, rows) {
  const line = (cells) => `| ${cells.join(' | ')} |`;
  return [
    line(columns.map(([heading]) => heading)),
    `|${columns.map(([, align]) => (align === ':' ? '---:' : '---')).join('|')}|`,
    ...rows.map(line),
  ].join('\n');
}

/** Waybill's share of the lean reference in a read scenario's result row, by req/s and by server CPU per request. */
export const leanShare = (r) =>
  `${fmt(r.leanRatio, 2)}× of the lean reference by req/s (lean ${fmt(r.lean.rps)} req/s), ` +
  `${fmt(r.leanCpuRatio, 2)}× by CPU (lean ${fmt(r.lean.cpuUsPerRequest)} µs/req)`;
