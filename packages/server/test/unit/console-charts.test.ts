import { describe, expect, it } from 'vitest';
import { dailyRateChart, escapeXml, finalStatesChart } from '../../src/console/charts.js';

/** What CSP `default-src 'self'` would block or a strict page refuses inside an inline SVG. */
const UNSAFE = /<script|<style|\sstyle=|\son[a-z]+=|<foreignObject|href=/i;

describe('console charts', () => {
  it('escapes the five XML characters', () => {
    expect(escapeXml(`<a href="x" title='y'>&</a>`)).toBe(
      '&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;',
    );
  });

  it('draws one bar per day with recipients, at its rate, and none on a day with nothing sent', () => {
    const svg = dailyRateChart([
      { day: '2026-11-20', sent: 4, rate: 0.5 },
      { day: '2026-11-21', sent: 0, rate: null },
      { day: '2026-11-22', sent: 2, rate: 1 },
    ]);
    expect(svg).toMatch(/^<svg xmlns="http:\/\/www.w3.org\/2000\/svg" class="chart" viewBox="0 0 720 240"/);
    expect(svg).toMatch(/<\/svg>$/);
    expect(svg).not.toMatch(UNSAFE);
    expect(svg).toContain('role="img" aria-labelledby="chart-daily-rate-title chart-daily-rate-desc"');
    const bars = [...svg.matchAll(/<rect [^>]*height="([\d.]+)"[^>]*><title>([^<]*)<\/title>/g)];
    expect(bars.map((b) => b[2])).toStrictEqual([
      '2026-11-20: 50.0 % of 4 delivered',
      '2026-11-22: 100.0 % of 2 delivered',
    ]);
    // The plot is 198 high (240 less 12 above and 30 below).
    expect(bars.map((b) => Number(b[1]))).toStrictEqual([99, 198]);
    expect(svg).toContain(
      '<desc id="chart-daily-rate-desc">Share of each day&#39;s recipients delivered, 2026-11-20 to 2026-11-22, ' +
        'on the 2 days with recipients: lowest 50.0 % on 2026-11-20, highest 100.0 % on 2026-11-22. ' +
        'The table &quot;By day&quot; holds every figure.</desc>',
    );
    for (const label of ['11-20', '11-21', '11-22']) expect(svg).toContain(`>${label}</text>`);
  });

  it('labels about eight days of a long period, and says so when nothing was sent', () => {
    const days = Array.from({ length: 30 }, (_, i) => ({
      day: `2026-11-${String(i + 1).padStart(2, '0')}`,
      sent: 0,
      rate: null,
    }));
    const svg = dailyRateChart(days);
    const labels = [...svg.matchAll(/>(11-\d\d)<\/text>/g)].map((m) => m[1]);
    expect(labels).toStrictEqual(['11-01', '11-05', '11-09', '11-13', '11-17', '11-21', '11-25', '11-30']);
    expect(svg).not.toContain('<rect');
    expect(svg).toContain('<desc id="chart-daily-rate-desc">Nothing was sent in this period.</desc>');
  });

  it('draws final states as bars scaled to the largest, with counts and shares, escaping names', () => {
    const svg = finalStatesChart(
      [
        { state: 'delivered', n: 3 },
        { state: 'failed', n: 1 },
        { state: '<odd>', n: 0 },
      ],
      'x"y',
    );
    expect(svg).not.toMatch(UNSAFE);
    expect(svg).toContain('aria-labelledby="x&quot;y-title x&quot;y-desc"');
    expect(svg).toContain('<title id="x&quot;y-title">Final states</title>');
    const widths = [...svg.matchAll(/<rect [^>]*width="([\d.]+)"/g)].map((m) => Number(m[1]));
    expect(widths).toStrictEqual([490, 163.33, 0]);
    expect(svg).toContain('>3 (75.0 %)</text>');
    expect(svg).toContain('>&lt;odd&gt;</text>');
    expect(svg).toContain('fill="#1b7a3a"');
    expect(svg).toContain('Recipients with a final receipt, 4 in all: delivered 3, failed 1, &lt;odd&gt; 0.');
    expect(finalStatesChart([{ state: 'delivered', n: 0 }])).toContain(
      'No recipient has a final receipt in this period.',
    );
  });
});
