import { readFile } from 'node:fs/promises';
import { beforeAll, describe, expect, it } from 'vitest';
import { engines } from '../support/engines.js';
import { type CreatedAccount, START } from '../support/http.js';
import { BROWSER_TEST_TIMEOUT, browserTestsEnabled, useChromium, useConsoleBrowser } from './support.js';

/**
 * Review in Chromium (CONTRACT §13 page 4): an account with SMS recipients on several networks, days and
 * campaigns, in several final states, opens Review for two days; the figures, tables, campaign filter and CSV
 * downloads are checked against what was ingested. The app's clock stands at START (2026-11-22 10:00 UTC).
 */

const FROM = '2026-11-21';
const TO = '2026-11-22';
const minutesBefore = (n: number) => new Date(START - n * 60_000).toISOString();
const secondsAfter = (at: string, n: number) => new Date(Date.parse(at) + n * 1000).toISOString();

/**
 * Five recipients: two delivered (drErrcode 0, which a delivered receipt gets by default), one failed (3), one
 * expired (6) the day before, one still waiting.
 */
const SENT = [
  { id: 'r-1', to: '447700900001', network: '23410', campaignId: 'spring', createdAt: minutesBefore(50) },
  { id: 'r-2', to: '447700900002', network: '23410', campaignId: 'spring', createdAt: minutesBefore(40) },
  { id: 'r-3', to: '447700900003', network: '23415', campaignId: 'autumn', createdAt: minutesBefore(30) },
  {
    id: 'r-4',
    to: '447700900004',
    network: '23415',
    campaignId: 'autumn',
    createdAt: minutesBefore(24 * 60),
  },
  { id: 'r-5', to: '447700900005', network: '20801', campaignId: 'spring', createdAt: minutesBefore(20) },
] as const;
const RECEIPTS: { i: number; drStatuscode: string; drErrcode?: string }[] = [
  { i: 0, drStatuscode: 'delivered' },
  { i: 1, drStatuscode: 'failed', drErrcode: '3' },
  { i: 2, drStatuscode: 'delivered' },
  { i: 3, drStatuscode: 'expired', drErrcode: '6' },
];

const chromium = useChromium();

describe.runIf(browserTestsEnabled()).each(engines())(
  '$name console in a browser: the Review page',
  (engine) => {
    const served = useConsoleBrowser(chromium, engine, { WAYBILL_RATE_PER_SECOND: '0' });
    let account: CreatedAccount;

    beforeAll(async () => {
      const { h, console: c } = served();
      account = await h.createAccount({ name: 'Review Ltd' });
      const ingested = await h.ingest(
        account.id,
        SENT.map((m) => ({
          id: m.id,
          channel: 'SMS',
          channelUserId: m.to,
          campaignId: m.campaignId,
          createdAt: m.createdAt,
          sms: { status: '0', network: m.network },
        })),
      );
      expect(ingested.statusCode, ingested.body).toBe(200);
      const receipts = await h.receipts(
        account.id,
        RECEIPTS.map(({ i, ...r }) => {
          const m = SENT[i];
          if (m === undefined) throw new Error(`no message ${i}`);
          return { messageId: m.id, to: m.to, drTime: secondsAfter(m.createdAt, 25), ...r };
        }),
      );
      expect(receipts.statusCode, receipts.body).toBe(200);
      await c.signIn(account.key, account.secret);
    });

    const figure = async (name: string) =>
      ((await served().console.page.locator(`dd[data-figure="${name}"]`).textContent()) ?? '').trim();
    /** A table's body rows, each as its trimmed cell texts. */
    const rows = async (table: string) =>
      served().console.page.evaluate<string[][]>(
        `[...document.querySelectorAll('section.review-table:has(#table-${table}) tbody tr')]
          .map((tr) => [...tr.cells].map((td) => td.textContent.trim()))`,
      );
    /** Clicks a table's Download CSV link and returns the file's suggested name and contents. */
    const download = async (table: string) => {
      const { page } = served().console;
      const [file] = await Promise.all([
        page.waitForEvent('download'),
        page.click(`section.review-table:has(#table-${table}) a.download`),
      ]);
      const path = await file.path();
      return { name: file.suggestedFilename(), body: await readFile(path, 'utf8') };
    };

    it('shows the period’s figures and tables as ingested, and passes every page check', async () => {
      const { console: c } = served();
      await c.goto(`/console/review?from=${FROM}&to=${TO}`);
      expect(c.path()).toBe(`/console/review?from=${FROM}&to=${TO}`);
      expect(await figure('sent')).toBe('5');
      expect(await figure('delivered')).toBe('2');
      expect(await figure('rate')).toBe('40.0 %');
      expect(await figure('finals')).toBe('4');
      // Every final receipt came 25 s after sending: the band "under 30 s" holds them all.
      expect(await figure('median')).toBe('under 30 s');
      expect(await figure('p90')).toBe('under 30 s');

      const status = Object.fromEntries((await rows('status')).map(([state, n]) => [state, n]));
      expect(status).toEqual({
        delivered: '2',
        accepted: '0',
        rejected: '0',
        failed: '1',
        expired: '1',
        deleted: '0',
        unknown: '0',
        'no receipt yet': '1',
      });
      const errcodes = (await rows('errcode')).map(([code, , n]) => [code, n]);
      expect(errcodes.sort()).toEqual([
        ['0', '2'],
        ['3', '1'],
        ['6', '1'],
      ]);
      const networks = (await rows('network')).map(([code, , , sent]) => [code, sent]);
      expect(networks.sort()).toEqual([
        ['20801', '1'],
        ['23410', '2'],
        ['23415', '2'],
      ]);
      const days = (await rows('day')).map(([day, sent]) => [day, sent]);
      expect(days).toEqual([
        [FROM, '1'],
        [TO, '4'],
      ]);
      await c.check('review');
      await c.docsShot('review');
    });

    it('narrows everything to one campaign with the filter', async () => {
      const { console: c } = served();
      await c.goto(`/console/review?from=${FROM}&to=${TO}`);
      await c.page.fill('input[name="campaign"]', 'spring');
      await c.click('form[action="/console/review"] button[type="submit"]');
      expect(c.path()).toBe(`/console/review?from=${FROM}&to=${TO}&campaign=spring`);
      expect(await figure('sent')).toBe('3');
      expect(await figure('delivered')).toBe('1');
      expect(await figure('rate')).toBe('33.3 %');
      expect(await figure('finals')).toBe('2');
      expect((await rows('network')).map(([code]) => code).sort()).toEqual(['20801', '23410']);
      expect((await rows('errcode')).map(([code]) => code)).toEqual(['0', '3']);
      expect((await rows('day')).map(([day]) => day)).toEqual([TO]);
      await c.check('review-campaign');
    });

    it('downloads the tables as CSV: the file name names the period and campaign, the rows are the page’s', async () => {
      const { console: c } = served();
      await c.goto(`/console/review?from=${FROM}&to=${TO}`);
      const all = await download('status');
      expect(all.name).toBe(`review-status-${FROM}-to-${TO}.csv`);
      expect(all.body).toBe(
        [
          'drStatuscode,Recipients,Share of sent',
          'delivered,2,0.4',
          'accepted,0,0',
          'rejected,0,0',
          'failed,1,0.2',
          'expired,1,0.2',
          'deleted,0,0',
          'unknown,0,0',
          'no receipt yet,1,0.2',
          '',
        ].join('\r\n'),
      );
      const networks = await download('network');
      expect(networks.name).toBe(`review-network-${FROM}-to-${TO}.csv`);
      const lines = networks.body.split('\r\n');
      expect(lines[0]).toBe(
        'MCC+MNC,Country,Operator,Sent,delivered,accepted,rejected,failed,expired,deleted,unknown,no receipt yet,Delivery rate,drErrcode meaning: recipients',
      );
      expect(lines.find((line) => line.startsWith('23415,'))).toBe(
        '23415,United Kingdom,Vodafone,2,1,0,0,0,1,0,0,0,0.5,0 Normal: 1; 6 Operator timeout: 1',
      );

      await c.goto(`/console/review?from=${FROM}&to=${TO}&campaign=spring`);
      const spring = await download('status');
      expect(spring.name).toBe(`review-status-${FROM}-to-${TO}-spring.csv`);
      const third = String(1 / 3);
      expect(spring.body.split('\r\n')).toEqual([
        'drStatuscode,Recipients,Share of sent',
        `delivered,1,${third}`,
        'accepted,0,0',
        'rejected,0,0',
        `failed,1,${third}`,
        'expired,0,0',
        'deleted,0,0',
        'unknown,0,0',
        `no receipt yet,1,${third}`,
        '',
      ]);
      c.expectClean('review-download');
    });
  },
  BROWSER_TEST_TIMEOUT,
);
