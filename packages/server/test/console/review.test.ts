import { describe, expect, it } from 'vitest';
import { engines } from '../support/engines.js';
import { ADMIN_TOKEN, type CreatedAccount, type Harness, START } from '../support/http.js';
import { Browser, type Page, useListening } from './browser.js';

const DAY = 86_400_000;
/** START is 2026-11-22 10:00 UTC: the default period is 2026-10-24 through 2026-11-22. */
const sentAt = (days: number) => new Date(START + days * DAY).toISOString();
const after = (iso: string, ms: number) => new Date(Date.parse(iso) + ms).toISOString();

/** A page's figure (the `data-figure` cells of the summary). */
const figure = (page: Page, name: string) =>
  new RegExp(`data-figure="${name}">([^<]*)<`).exec(page.text)?.[1] ?? null;

const cellText = (html: string) =>
  html
    .replace(/<[^>]+>/g, '')
    .replaceAll('&#39;', "'")
    .replaceAll('&quot;', '"')
    .replaceAll('&lt;', '<')
    .replaceAll('&gt;', '>')
    .replaceAll('&amp;', '&');

/** The body rows of one of the page's tables, as the text of each cell. */
function tableRows(page: Page, name: string): string[][] {
  const table = new RegExp(`<table aria-labelledby="table-${name}">([\\s\\S]*?)</table>`).exec(
    page.text,
  )?.[1];
  if (table === undefined) return [];
  const body = /<tbody>([\s\S]*?)<\/tbody>/.exec(table)?.[1] ?? '';
  return [...body.matchAll(/<tr>([\s\S]*?)<\/tr>/g)].map((row) =>
    [...(row[1] ?? '').matchAll(/<td[^>]*>([\s\S]*?)<\/td>/g)].map((cell) => cellText(cell[1] ?? '')),
  );
}

/**
 * Account A: five recipients in the default period over three days, two campaigns and two networks (and one
 * with neither), final receipts 10 s, 40 s and 3 min after sending, one still `accepted`, one with no receipt;
 * and one recipient long before the period. Account B: one delivered recipient on a third network.
 */
async function seed(h: Harness): Promise<{ a: CreatedAccount; b: CreatedAccount }> {
  const a = await h.createAccount({ name: 'Alpha' });
  const b = await h.createAccount({ name: 'Beta' });
  const sms = (id: string, to: string, days: number, campaignId: string | null, network?: string) => ({
    id,
    channel: 'SMS',
    channelUserId: to,
    campaignId,
    createdAt: sentAt(days),
    sms: { status: '0', ...(network === undefined ? {} : { network }) },
  });
  const ingested = await h.ingest(a.id, [
    sms('m-1', '447700900001', -2, 'spring', '23415'),
    sms('m-2', '447700900002', -2, 'spring', '23415'),
    sms('m-3', '15551230003', -1, 'autumn', '310260'),
    sms('m-4', '15551230004', -1, null),
    sms('m-5', '15551230005', 0, 'autumn', '310260'),
    sms('m-old', '447700900009', -80, 'spring', '23415'),
  ]);
  expect(ingested.statusCode, ingested.body).toBe(200);
  const receipt = (messageId: string, drStatuscode: string, drErrcode: string, days: number, ms: number) => ({
    messageId,
    drStatuscode,
    drErrcode,
    drTime: after(sentAt(days), ms),
  });
  const applied = await h.receipts(a.id, [
    receipt('m-1', 'delivered', '0', -2, 10_000),
    receipt('m-2', 'failed', '3', -2, 40_000),
    receipt('m-3', 'delivered', '0', -1, 180_000),
    receipt('m-4', 'accepted', '0', -1, 5_000),
    receipt('m-old', 'delivered', '0', -80, 1_000),
  ]);
  expect(applied.statusCode, applied.body).toBe(200);
  expect(applied.json()).toMatchObject({ applied: 5 });
  expect((await h.ingest(b.id, [sms('b-1', '33612345678', -1, 'spring', '20801')])).statusCode).toBe(200);
  expect((await h.receipts(b.id, [receipt('b-1', 'delivered', '0', -1, 2_000)])).statusCode).toBe(200);
  return { a, b };
}

describe.each(engines())('$name console: Review', (engine) => {
  const served = useListening(engine);

  const signedIn = async (account: CreatedAccount) => {
    const browser = new Browser(served().base);
    expect((await browser.signIn(account.key, account.secret)).status).toBe(303);
    return browser;
  };

  it('shows the last 30 days by default: sent, receipts by drStatuscode, rate, errcodes, networks, days, times', async () => {
    const { a } = await seed(served().h);
    const page = await (await signedIn(a)).get('/console/review');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toBe("default-src 'self'; frame-ancestors 'none'");
    expect(page.text).not.toMatch(/<script>|<style|\sstyle=|\son[a-z]+="/i);
    expect(page.text).toMatch(/<a href="\/console\/review" aria-current="page">Review<\/a>/);
    expect(page.text).toContain('value="2026-10-24"');
    expect(page.text).toContain('value="2026-11-22"');

    expect(figure(page, 'sent')).toBe('5');
    expect(figure(page, 'delivered')).toBe('2');
    expect(figure(page, 'rate')).toBe('40.0 %');
    expect(figure(page, 'finals')).toBe('3');
    // 10 s, 40 s, 3 min: the median falls in the band [30 s, 1 min), the 90th percentile in [2 min, 5 min).
    expect(figure(page, 'median')).toBe('under 1 min');
    expect(figure(page, 'p90')).toBe('under 5 min');

    expect(tableRows(page, 'status')).toStrictEqual([
      ['delivered', '2', '40.0 %'],
      ['accepted', '1', '20.0 %'],
      ['rejected', '0', '0.0 %'],
      ['failed', '1', '20.0 %'],
      ['expired', '0', '0.0 %'],
      ['deleted', '0', '0.0 %'],
      ['unknown', '0', '0.0 %'],
      ['no receipt yet', '1', '20.0 %'],
    ]);
    expect(tableRows(page, 'errcode')).toStrictEqual([
      ['0', 'Normal', '3', '60.0 %'],
      ['3', 'Number deactivated or invalid', '1', '20.0 %'],
    ]);
    // Columns: network, country, operator, sent, the seven drStatuscodes, no receipt, rate, errcodes.
    expect(tableRows(page, 'network')).toStrictEqual([
      [
        '23415',
        'United Kingdom',
        'Vodafone',
        '2',
        '1',
        '0',
        '0',
        '1',
        '0',
        '0',
        '0',
        '0',
        '50.0 %',
        '0 Normal: 1; 3 Number deactivated or invalid: 1',
      ],
      [
        '310260',
        'United States of America',
        'T-Mobile US',
        '2',
        '1',
        '0',
        '0',
        '0',
        '0',
        '0',
        '0',
        '1',
        '50.0 %',
        '0 Normal: 1',
      ],
      ['none', 'no network given', '', '1', '0', '1', '0', '0', '0', '0', '0', '0', '0.0 %', '0 Normal: 1'],
    ]);
    expect(tableRows(page, 'day')).toStrictEqual([
      [
        '2026-11-20',
        '2',
        '1',
        '0',
        '0',
        '1',
        '0',
        '0',
        '0',
        '0',
        '50.0 %',
        '0 Normal: 1; 3 Number deactivated or invalid: 1',
      ],
      ['2026-11-21', '2', '1', '1', '0', '0', '0', '0', '0', '0', '50.0 %', '0 Normal: 2'],
      ['2026-11-22', '1', '0', '0', '0', '0', '0', '0', '0', '1', '0.0 %', ''],
    ]);

    // The charts: inline SVG named and described, with no style attribute.
    expect(page.text).toContain('<title id="chart-daily-rate-title">Daily delivery rate</title>');
    expect(page.text).toContain('aria-labelledby="chart-final-states-title chart-final-states-desc"');
    expect(page.text).toContain(
      'Recipients with a final receipt, 3 in all: delivered 2, rejected 0, failed 1, expired 0, deleted 0, unknown 0.',
    );
    expect(page.text).toContain('<title>2026-11-20: 50.0 % of 2 delivered</title>');
  });

  it('narrows to one campaign, and to a period that names its days', async () => {
    const { a } = await seed(served().h);
    const browser = await signedIn(a);
    const spring = await browser.get('/console/review?campaign=spring');
    expect(spring.status).toBe(200);
    expect(figure(spring, 'sent')).toBe('2');
    expect(figure(spring, 'rate')).toBe('50.0 %');
    expect(tableRows(spring, 'day').map((r) => r.slice(0, 2))).toStrictEqual([['2026-11-20', '2']]);

    const longer = await browser.get('/console/review?from=2026-09-01&to=2026-11-21');
    expect(figure(longer, 'sent')).toBe('5');
    expect(tableRows(longer, 'day').map((r) => r.slice(0, 2))).toStrictEqual([
      ['2026-09-03', '1'],
      ['2026-11-20', '2'],
      ['2026-11-21', '2'],
    ]);
    expect(figure(longer, 'median')).toBe('under 20 s');

    const oneDay = await browser.get('/console/review?from=2026-11-21&to=2026-11-21&campaign=autumn');
    expect(figure(oneDay, 'sent')).toBe('1');
    expect(tableRows(oneDay, 'network').map((r) => r.slice(0, 4))).toStrictEqual([
      ['310260', 'United States of America', 'T-Mobile US', '1'],
    ]);

    const empty = await browser.get('/console/review?campaign=winter');
    expect(figure(empty, 'sent')).toBe('0');
    expect(figure(empty, 'median')).toBe('—');
    expect(empty.text).toContain('Nothing was sent in this period for this campaign.');
  });

  it('counts a receipt the moment it is stored: the recipient moves from no receipt to its state', async () => {
    const { h } = served();
    const { a } = await seed(h);
    const browser = await signedIn(a);
    const before = await browser.get('/console/review?campaign=autumn');
    expect(tableRows(before, 'status').find((r) => r[0] === 'no receipt yet')?.[1]).toBe('1');
    expect(figure(before, 'delivered')).toBe('1');
    const applied = await h.receipts(a.id, [
      { messageId: 'm-5', drStatuscode: 'delivered', drErrcode: '0', drTime: after(sentAt(0), 30_000) },
    ]);
    expect(applied.statusCode, applied.body).toBe(200);
    const now = await browser.get('/console/review?campaign=autumn');
    expect(tableRows(now, 'status').find((r) => r[0] === 'no receipt yet')?.[1]).toBe('0');
    expect(figure(now, 'delivered')).toBe('2');
    expect(figure(now, 'rate')).toBe('100.0 %');
    expect(figure(now, 'finals')).toBe('2');
  });

  it('says what is wrong with a bad period or campaign, on the page, with 400', async () => {
    const { a } = await seed(served().h);
    const browser = await signedIn(a);
    const cases: [string, string][] = [
      ['from=2026-02-30', '“From” must be a date written YYYY-MM-DD, 1970 or later.'],
      ['to=yesterday', '“To” must be a date written YYYY-MM-DD, 1970 or later.'],
      ['from=2026-11-22&to=2026-11-01', '“From” must not be after “To”.'],
      ['from=2025-01-01&to=2026-11-22', 'A period covers at most 366 days; this one covers 691.'],
      ['campaign=no%20spaces', 'A campaign is 1-64 characters of A-Z a-z 0-9 . _ : -'],
    ];
    for (const [query, detail] of cases) {
      const page = await browser.get(`/console/review?${query}`);
      expect(page.status, query).toBe(400);
      expect(page.text).toContain(`role="alert">${detail.replaceAll('"', '&quot;')}<`);
      expect(figure(page, 'sent')).toBeNull();
    }
    const csv = await browser.get('/console/review.csv?table=status&from=2026-13-01');
    expect(csv.status).toBe(400);
    expect(csv.headers.get('content-type')).toMatch(/^text\/html/);
    const table = await browser.get('/console/review.csv?table=contacts');
    expect(table.status).toBe(400);
    expect(table.text).toContain('“table” must be one of status, errcode, network, day.');
  });

  it('downloads each table as CSV with a file name, the page’s figures and CRLF lines', async () => {
    const { a } = await seed(served().h);
    const browser = await signedIn(a);
    const page = await browser.get('/console/review?campaign=spring&from=2026-09-01&to=2026-11-22');
    for (const table of ['status', 'errcode', 'network', 'day']) {
      expect(page.text).toContain(
        `href="/console/review.csv?table=${table}&amp;from=2026-09-01&amp;to=2026-11-22&amp;campaign=spring"`,
      );
    }
    const get = (table: string) =>
      browser.get(`/console/review.csv?table=${table}&from=2026-09-01&to=2026-11-22&campaign=spring`);

    const status = await get('status');
    expect(status.status).toBe(200);
    expect(status.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(status.headers.get('content-disposition')).toBe(
      'attachment; filename="review-status-2026-09-01-to-2026-11-22-spring.csv"',
    );
    expect(status.headers.get('cache-control')).toBe('no-store');
    expect(status.text).toBe(
      [
        'drStatuscode,Recipients,Share of sent',
        'delivered,2,0.6666666666666666',
        'accepted,0,0',
        'rejected,0,0',
        'failed,1,0.3333333333333333',
        'expired,0,0',
        'deleted,0,0',
        'unknown,0,0',
        'no receipt yet,0,0',
        '',
      ].join('\r\n'),
    );
    expect((await get('errcode')).text).toBe(
      [
        'drErrcode,Meaning,Recipients,Share of sent',
        '0,Normal,2,0.6666666666666666',
        '3,Number deactivated or invalid,1,0.3333333333333333',
        '',
      ].join('\r\n'),
    );
    const tally =
      'Sent,delivered,accepted,rejected,failed,expired,deleted,unknown,no receipt yet,Delivery rate,drErrcode meaning: recipients';
    expect((await get('network')).text).toBe(
      [
        `MCC+MNC,Country,Operator,${tally}`,
        '23415,United Kingdom,Vodafone,3,2,0,0,1,0,0,0,0,0.6666666666666666,0 Normal: 2; 3 Number deactivated or invalid: 1',
        '',
      ].join('\r\n'),
    );
    expect((await get('day')).text).toBe(
      [
        `Day,${tally}`,
        '2026-09-03,1,1,0,0,0,0,0,0,0,1,0 Normal: 1',
        '2026-11-20,2,1,0,0,1,0,0,0,0,0.5,0 Normal: 1; 3 Number deactivated or invalid: 1',
        '',
      ].join('\r\n'),
    );
  });

  it('shows an account only its own figures, whatever it names; the operator names the account', async () => {
    const { h, base } = served();
    const { a, b } = await seed(h);
    const asB = await signedIn(b);
    const own = await asB.get(`/console/review?account=${a.id}`);
    expect(figure(own, 'sent')).toBe('1');
    expect(tableRows(own, 'network').map((r) => r.slice(0, 3))).toStrictEqual([
      ['20801', 'France', 'Orange S.A.'],
    ]);
    const csv = await asB.get(`/console/review.csv?table=day&account=${a.id}`);
    expect(csv.text).toBe(
      'Day,Sent,delivered,accepted,rejected,failed,expired,deleted,unknown,no receipt yet,Delivery rate,drErrcode meaning: recipients\r\n' +
        '2026-11-21,1,1,0,0,0,0,0,0,0,1,0 Normal: 1\r\n',
    );

    const operator = new Browser(base);
    expect((await operator.signInOperator(ADMIN_TOKEN)).status).toBe(303);
    const none = await operator.get('/console/review');
    expect(none.status).toBe(404);
    const ofA = await operator.get(`/console/review?account=${a.id}`);
    expect(figure(ofA, 'sent')).toBe('5');
    expect(ofA.text).toContain(`<input type="hidden" name="account" value="${a.id}">`);
    expect(ofA.text).toContain(`table=status&amp;from=2026-10-24&amp;to=2026-11-22&amp;account=${a.id}`);
    const ofB = await operator.get(`/console/review.csv?table=status&account=${b.id}`);
    expect(ofB.text.split('\r\n')[1]).toBe('delivered,1,1');
  });

  it('sends a request without a session to sign-in, page and CSV alike', async () => {
    const browser = new Browser(served().base);
    for (const path of ['/console/review', '/console/review.csv?table=status']) {
      const page = await browser.get(path);
      expect(page.status).toBe(303);
      expect(page.location).toBe('/console/sign-in');
    }
  });
});
