import { formatCount, formatRate } from './numbers.js';

/**
 * The review page's charts, drawn on the server as SVG (no script, nothing fetched; CSP `default-src 'self'`
 * allows inline SVG with presentation attributes, never a `style` attribute). Pure functions: figures in, one
 * SVG string out, every text escaped. Each chart is an `img` named by its <title> and described by its <desc>
 * (which says in words what it shows), and each bar carries a <title> of its own; the table next to it holds
 * every figure.
 */

/** The five characters XML reserves, escaped for text and for attribute values alike. */
export function escapeXml(text: string): string {
  return text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string,
  );
}

const INK = '#1d2330';
const MUTED = '#5b6475';
const LINE = '#d8dce4';
const ACCENT = '#1f5fbf';

/** Final states in the colours the console's state badges use (assets/console.css), a shade darker for fills. */
const STATE_FILL: Record<string, string> = {
  delivered: '#1b7a3a',
  rejected: '#b42318',
  failed: '#8f1c13',
  expired: '#8a5a00',
  deleted: '#5b6475',
  unknown: '#3f4656',
};

/** Fixed to 2 decimals, so sizes stay short and the output is the same on every platform. */
const n2 = (n: number) => String(Math.round(n * 100) / 100);

function frame(id: string, width: number, height: number, title: string, desc: string, body: string): string {
  const t = escapeXml(`${id}-title`);
  const d = escapeXml(`${id}-desc`);
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 ${width} ${height}" width="${width}" ` +
    `height="${height}" role="img" aria-labelledby="${t} ${d}" font-family="system-ui, sans-serif" font-size="16">` +
    `<title id="${t}">${escapeXml(title)}</title><desc id="${d}">${escapeXml(desc)}</desc>${body}</svg>`
  );
}

/** One day of the daily chart: `rate` is null on a day with nothing sent (no bar, not a zero). */
export interface DailyRatePoint {
  day: string;
  sent: number;
  rate: number | null;
}

/**
 * The daily delivery rate as bars from 0 to 100 %, one per day of the period (`YYYY-MM-DD`, oldest first), with
 * a label under about eight of them.
 */
export function dailyRateChart(points: readonly DailyRatePoint[], id = 'chart-daily-rate'): string {
  const width = 720;
  const height = 240;
  // Room for the widest tick label, "100 %", at the chart's 16 px.
  const left = 64;
  const right = 8;
  const top = 12;
  const bottom = 30;
  const plotW = width - left - right;
  const plotH = height - top - bottom;
  const parts: string[] = [];
  for (const tick of [0, 0.25, 0.5, 0.75, 1]) {
    const y = top + plotH * (1 - tick);
    parts.push(
      `<line x1="${left}" x2="${width - right}" y1="${n2(y)}" y2="${n2(y)}" stroke="${LINE}" stroke-width="1"/>`,
      `<text x="${left - 6}" y="${n2(y + 4)}" text-anchor="end" fill="${MUTED}">${tick * 100} %</text>`,
    );
  }
  const band = points.length === 0 ? plotW : plotW / points.length;
  const barW = Math.max(1, band * 0.8);
  const labelEvery = Math.max(1, Math.ceil(points.length / 8));
  points.forEach((p, i) => {
    const x = left + band * i + (band - barW) / 2;
    if (p.rate !== null) {
      const h = plotH * Math.min(1, Math.max(0, p.rate));
      const tip = `${p.day}: ${formatRate(p.rate)} of ${formatCount(p.sent)} delivered`;
      parts.push(
        `<rect x="${n2(x)}" y="${n2(top + plotH - h)}" width="${n2(barW)}" height="${n2(h)}" fill="${ACCENT}">` +
          `<title>${escapeXml(tip)}</title></rect>`,
      );
    }
    // Every `labelEvery`-th day and the last, leaving out the regular one that would crowd the last.
    const last = i === points.length - 1;
    if (last || (i % labelEvery === 0 && points.length - 1 - i >= labelEvery / 2)) {
      // The last label ends at the plot's edge rather than running past it.
      const x = last && points.length > 1 ? width - right : left + band * i + band / 2;
      const anchor = last && points.length > 1 ? 'end' : 'middle';
      parts.push(
        `<text x="${n2(x)}" y="${height - bottom + 18}" text-anchor="${anchor}" ` +
          `fill="${MUTED}">${escapeXml(p.day.slice(5))}</text>`,
      );
    }
  });
  parts.push(
    `<line x1="${left}" x2="${width - right}" y1="${top + plotH}" y2="${top + plotH}" stroke="${INK}" stroke-width="1"/>`,
  );
  return frame(id, width, height, 'Daily delivery rate', dailyDesc(points), parts.join(''));
}

function dailyDesc(points: readonly DailyRatePoint[]): string {
  const first = points[0];
  const last = points.at(-1);
  const sentDays = points.filter((p): p is DailyRatePoint & { rate: number } => p.rate !== null);
  if (!first || !last || sentDays.length === 0) return 'Nothing was sent in this period.';
  let low = sentDays[0] as (typeof sentDays)[number];
  let high = low;
  for (const p of sentDays) {
    if (p.rate < low.rate) low = p;
    if (p.rate > high.rate) high = p;
  }
  return (
    `Share of each day's recipients delivered, ${first.day} to ${last.day}, on the ${sentDays.length} ` +
    `day${sentDays.length === 1 ? '' : 's'} with recipients: lowest ${formatRate(low.rate)} on ${low.day}, ` +
    `highest ${formatRate(high.rate)} on ${high.day}. The table "By day" holds every figure.`
  );
}

/** Recipients in each final state (every final `drStatuscode`, in the order given), as horizontal bars. */
export function finalStatesChart(
  states: readonly { state: string; n: number }[],
  id = 'chart-final-states',
): string {
  const width = 720;
  const row = 30;
  const top = 8;
  const labelW = 100;
  const valueW = 130;
  const height = top * 2 + row * Math.max(1, states.length);
  const total = states.reduce((sum, s) => sum + s.n, 0);
  const max = Math.max(1, ...states.map((s) => s.n));
  const plotW = width - labelW - valueW;
  const parts: string[] = [];
  states.forEach((s, i) => {
    const y = top + row * i;
    const w = (plotW * s.n) / max;
    const share = total === 0 ? 0 : s.n / total;
    const label = `${formatCount(s.n)} (${formatRate(share)})`;
    parts.push(
      `<text x="${labelW - 8}" y="${y + 19}" text-anchor="end" fill="${INK}">${escapeXml(s.state)}</text>`,
      `<rect x="${labelW}" y="${y + 5}" width="${n2(w)}" height="${row - 10}" fill="${STATE_FILL[s.state] ?? ACCENT}">` +
        `<title>${escapeXml(`${s.state}: ${label}`)}</title></rect>`,
      `<text x="${n2(labelW + w + 6)}" y="${y + 19}" fill="${INK}">${escapeXml(label)}</text>`,
    );
  });
  const desc =
    total === 0
      ? 'No recipient has a final receipt in this period.'
      : `Recipients with a final receipt, ${formatCount(total)} in all: ${states
          .map((s) => `${s.state} ${formatCount(s.n)}`)
          .join(', ')}.`;
  return frame(id, width, height, 'Final states', desc, parts.join(''));
}
