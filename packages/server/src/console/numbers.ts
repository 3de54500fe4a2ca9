/** Numbers as the console's people read them: the pages and the charts' labels say the same thing. */

const COUNT = new Intl.NumberFormat('en-US');

/** A count with thousands separators: 1,234,567. */
export const formatCount = (n: number): string => COUNT.format(n);

/** A fraction of 1 as a percentage to one decimal: 0.9523 → 95.2 %. */
export const formatRate = (fraction: number): string => `${(fraction * 100).toFixed(1)} %`;

/** A duration in milliseconds as its largest whole units read: 950 ms, 30 s, 2 min, 1 h 30 min, 2 d. */
export function formatDuration(ms: number): string {
  if (ms < 1_000) return `${ms} ms`;
  if (ms < 60_000) return `${Math.round(ms / 1_000)} s`;
  if (ms < 3_600_000) return `${Math.round(ms / 60_000)} min`;
  if (ms < 86_400_000) {
    const minutes = Math.round(ms / 60_000);
    const h = Math.floor(minutes / 60);
    const m = minutes % 60;
    return m === 0 ? `${h} h` : `${h} h ${m} min`;
  }
  const hours = Math.round(ms / 3_600_000);
  const d = Math.floor(hours / 24);
  const h = hours % 24;
  return h === 0 ? `${d} d` : `${d} d ${h} h`;
}
