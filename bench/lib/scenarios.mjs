// The read scenarios of `npm run bench`: for each, the requests the loader sends (many distinct ones, picked at
// random per request) and what the figures are held against. See docs/benchmarks.md.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { pick, random } from './random.mjs';

const basic = (m) => ({ authorization: `Basic ${Buffer.from(`${m.key}:${m.secret}`).toString('base64')}` });

/** A raw HTTP/1.1 GET, as the loader writes it. */
export function rawGet(path, headers = {}) {
  let text = `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n`;
  for (const [name, value] of Object.entries(headers)) text += `${name}: ${value}\r\n`;
  return `${text}\r\n`;
}

async function getJson(baseUrl, path, headers) {
  const res = await fetch(baseUrl + path, { headers });
  const text = await res.text();
  if (res.status !== 200)
    throw new Error(`GET ${path.replace(/secret=[^&]*/, 'secret=…')}: ${res.status} ${text}`);
  return JSON.parse(text);
}

const dlrPath = (m, id) => `/dlr?key=${m.key}&secret=${m.secret}&messageid=${encodeURIComponent(id)}`;

/**
 * Each scenario: `requests(manifest, baseUrl)` → { paths: [{ path, headers }], note }, and its target. Paths
 * that need a cursor walk the server first (not measured).
 */
export const READ_SCENARIOS = {
  dlr: {
    title: '/dlr, existing ids',
    target: { ratio: 0.45, p99Ms: 10 },
    async requests(m) {
      return m.dlrIds.slice(0, 5000).map((id) => ({ path: dlrPath(m, id) }));
    },
  },
  'dlr-missing': {
    title: '/dlr, unknown ids',
    target: { ratio: 0.45, p99Ms: 10 },
    async requests(m) {
      return m.missingIds.map((id) => ({ path: dlrPath(m, id) }));
    },
  },
  mode1: {
    title: '/messages, mode 1 (20 ids)',
    target: { ratio: 0.25 },
    // The deprecated v1 path answers mode 1 too (a bare array): the lean reference's answers are checked there.
    alsoAt: (path) => path.replace('/messages?', '/api/v1/contacts/messages?'),
    async requests(m) {
      const rand = random(11);
      return Array.from({ length: 1000 }, () => {
        const ids = Array.from({ length: 20 }, () => pick(rand, m.dlrIds));
        return { path: `/messages?messageIds=${ids.map(encodeURIComponent).join(',')}`, headers: basic(m) };
      });
    },
  },
  history: {
    title: '/messages, history page 1 (size 100)',
    async requests(m) {
      const { channel, channelUserId } = m.long;
      const path = `/messages?channel=${channel}&channelUserId=${encodeURIComponent(channelUserId)}&size=100`;
      return [{ path, headers: basic(m) }];
    },
  },
  'history-deep': {
    title: '/messages, history page 1,000 (size 100)',
    target: { costOf: 'history', costRatio: 1.5 },
    async requests(m, baseUrl) {
      const { channel, channelUserId } = m.long;
      const base = `/messages?channel=${channel}&channelUserId=${encodeURIComponent(channelUserId)}&size=100`;
      const pages = Math.min(1000, Math.floor(m.long.messages / 100));
      // Walk to the cursor of the last full pages (pages − 4 … pages): those are the deep ones.
      const cursors = [];
      let cursor = null;
      for (let page = 1; page < pages; page++) {
        const body = await getJson(
          baseUrl,
          cursor ? `${base}&cursor=${encodeURIComponent(cursor)}` : base,
          basic(m),
        );
        cursor = body.nextCursor;
        if (!cursor) throw new Error(`the long history ends at page ${page}`);
        if (page + 1 >= pages - 4) cursors.push(cursor);
      }
      return cursors.map((c) => ({ path: `${base}&cursor=${encodeURIComponent(c)}`, headers: basic(m) }));
    },
  },
  campaign: {
    title: '/messages, campaign page 1 (size 100)',
    async requests(m) {
      return [
        { path: `/messages?campaignId=${encodeURIComponent(m.campaign.id)}&size=100`, headers: basic(m) },
      ];
    },
  },
  conversation: {
    title: '/messages, a conversation page 1 (size 20)',
    async requests(m) {
      return m.conversations.map((c) => ({
        path: `/messages?channel=${c.channel}&channelUserId=${encodeURIComponent(c.channelUserId)}`,
        headers: basic(m),
      }));
    },
  },
  'receipts-feed': {
    title: '/receipts, a page of 100 anywhere in the feed',
    async requests(m, baseUrl) {
      // Cursors spread over the feed: walk it with big pages, keep a cursor every few pages.
      const cursors = [];
      let after = null;
      const step = Math.max(1, Math.floor(m.events / 1000 / 40));
      for (let page = 0; page < 40 * step; page++) {
        const q = after ? `&after=${encodeURIComponent(after)}` : '';
        const body = await getJson(baseUrl, `/receipts?limit=1000${q}`, basic(m));
        if (!body.hasMore) break;
        after = body.nextCursor;
        if (page % step === 0) cursors.push(after);
      }
      return cursors.map((c) => ({
        path: `/receipts?limit=100&after=${encodeURIComponent(c)}`,
        headers: basic(m),
      }));
    },
  },
};

/** The body Waybill answers a typical request of the scenario with: the median-sized of up to 25 samples. */
export async function sampleBody(baseUrl, paths) {
  const bodies = [];
  for (const { path, headers } of paths.slice(0, 25)) {
    const res = await fetch(baseUrl + path, { headers });
    const bytes = Buffer.from(await res.arrayBuffer());
    if (res.status !== 200) throw new Error(`sample request answered ${res.status}: ${bytes}`);
    bodies.push(bytes);
  }
  bodies.sort((a, b) => a.length - b.length);
  return bodies[Math.floor(bodies.length / 2)];
}

/**
 * The first request of `paths` (the first `n`, each also at the scenario's `alsoAt` path) that the servers at
 * `baseA` and `baseB` answer with different statuses or bytes, as a sentence; null when they answer alike.
 */
export async function firstDifference(scenario, paths, [a, baseA], [b, baseB], n = 3) {
  const get = async (base, path, headers) => {
    const res = await fetch(base + path, { headers });
    return { status: res.status, bytes: Buffer.from(await res.arrayBuffer()) };
  };
  for (const { path, headers } of paths.slice(0, n)) {
    for (const p of scenario.alsoAt ? [path, scenario.alsoAt(path)] : [path]) {
      const [x, y] = [await get(baseA, p, headers), await get(baseB, p, headers)];
      if (x.status === y.status && x.bytes.equals(y.bytes)) continue;
      let at = 0;
      while (at < Math.min(x.bytes.length, y.bytes.length) && x.bytes[at] === y.bytes[at]) at++;
      const around = (bytes) => JSON.stringify(bytes.subarray(Math.max(0, at - 40), at + 40).toString());
      return (
        `GET ${p.replace(/secret=[^&]*/, 'secret=…').slice(0, 100)}: ${a} ${x.status} (${x.bytes.length} bytes), ` +
        `${b} ${y.status} (${y.bytes.length} bytes), first different byte ${at}: ${a} ${around(x.bytes)}, ` +
        `${b} ${around(y.bytes)}`
      );
    }
  }
  return null;
}

/**
 * The review page's query (CONTRACT §13 page 4: 30 days at 10M recipients in ≤ 300 ms): the store's
 * reviewSummary and the domain's reviewFigures of the build under test, called in this process on the dataset,
 * one call at a time, for the last 30 days of the dataset, over every campaign and over its main campaign.
 * There is no page to request yet, so this times the work behind it, not HTTP. Returns the figures per kind.
 */
export async function runReview({ manifest, dist, databaseUrl, calls, warmup }) {
  const load = (path) => import(pathToFileURL(join(dist, path)).href);
  const [{ loadConfig }, { openStore }, { reviewFigures }] = await Promise.all([
    load('config.js'),
    load('store/open.js'),
    load('domain/review.js'),
  ]);
  const store = openStore(loadConfig({ DATABASE_URL: databaseUrl, WAYBILL_PEPPER: manifest.pepper }));
  try {
    const account = await store.getAccountByKey(manifest.key);
    if (!account) throw new Error(`no bench account ${manifest.key} in ${databaseUrl}`);
    const end = new Date(manifest.end ?? '2026-11-01T00:00:00.000Z');
    const period = { from: new Date(end.getTime() - 30 * 86_400_000), to: new Date(end.getTime() - 1) };
    const kinds = [
      { name: 'review', title: 'review, 30 days, every campaign', period },
      {
        name: 'review-campaign',
        title: 'review, 30 days, one campaign',
        period: { ...period, campaignId: manifest.campaign.id },
      },
    ];
    const results = [];
    for (const kind of kinds) {
      const ms = [];
      let figures;
      for (let i = 0; i < warmup + calls; i++) {
        const started = performance.now();
        figures = reviewFigures(await store.reviewSummary(account.id, kind.period));
        if (i >= warmup) ms.push(performance.now() - started);
      }
      ms.sort((a, b) => a - b);
      const at = (q) => ms[Math.min(ms.length - 1, Math.floor(q * ms.length))];
      results.push({
        scenario: kind.name,
        title: kind.title,
        calls,
        p50Ms: at(0.5),
        p99Ms: at(0.99),
        maxMs: ms[ms.length - 1],
        sent: figures.sent,
        networks: figures.byNetwork.length,
        days: figures.byDay.length,
        target: { maxMs: 300 },
      });
    }
    return results;
  } finally {
    await store.close();
  }
}
