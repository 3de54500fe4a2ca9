import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Relay, type RelayLogger } from '../../src/callbacks/relay.js';
import { loadConfig } from '../../src/config.js';
import { type Receiver, startReceiver, waitFor } from '../callbacks/receiver.js';
import { engines } from '../support/engines.js';
import { type CreatedAccount, type Harness, PEPPER, START, startHarness } from '../support/http.js';
import {
  documentedDlrUrls,
  type Kannel,
  kannelTestsEnabled,
  START_MS,
  startKannel,
} from '../support/kannel.js';
import { Smsc, type Submitted, smppDate } from './smsc.js';

/**
 * CONTRACT §12 "HTTP adapters" with Kannel itself (issue 15): a real bearerbox and smsbox, configured as
 * docs/intake.md shows, bound over SMPP to the SMSC simulator; a message goes out through Kannel's sendsms with a
 * `dlr-url` written as docs/intake.md shows, and Kannel's fetches of it — `type=8` ("ACK/") when the SMSC takes
 * the message, `type=1` with the receipt text when the SMSC's deliver_sm comes — reach a listening Waybill,
 * whose /dlr and callbacks (a real relay, a real receiver) show the recipient accepted, then delivered.
 *
 * Skipped when Kannel is not installed, except under CI=true (test/support/kannel.ts).
 */

const TO = '447700900123';
const ENV = {
  WAYBILL_CALLBACK_ALLOW_PRIVATE: 'true',
  WAYBILL_CALLBACK_RETRY_SCHEDULE: '0.05,0.05,0.05',
  WAYBILL_CALLBACK_TIMEOUT_MS: '2000',
  WAYBILL_RATE_PER_SECOND: '0',
};
/** Kannel takes seconds to fetch, more on a busy machine: generous, never asserted on. */
const WAIT_MS = 30_000;

const quiet = () => {};
const QUIET: RelayLogger = { debug: quiet, info: quiet, warn: quiet, error: quiet };

/**
 * A documented `dlr-url` template with this run's values: the origin is Waybill's, the named parameters get the
 * given values, and Kannel's escapes (%d, %A, %p, %F) stay as documented.
 */
function fillDlrUrl(template: string, origin: string, values: Record<string, string>): string {
  const q = template.indexOf('?');
  const path = new URL(template.slice(0, q)).pathname;
  const pairs = template
    .slice(q + 1)
    .split('&')
    .map((pair) => {
      const name = pair.split('=')[0] ?? '';
      const value = values[name];
      return value === undefined ? pair : `${name}=${encodeURIComponent(value)}`;
    });
  for (const name of Object.keys(values)) {
    if (!pairs.some((pair) => pair.startsWith(`${name}=`))) throw new Error(`the template has no ${name}`);
  }
  return `${origin}${path}?${pairs.join('&')}`;
}

describe.skipIf(!kannelTestsEnabled())('Kannel 1.4.5 fetching its dlr-url from Waybill', () => {
  let smsc: Smsc;
  let kannel: Kannel | undefined;

  beforeAll(async () => {
    smsc = new Smsc();
    const port = await smsc.listen();
    kannel = await startKannel(port);
  }, START_MS);

  afterAll(async () => {
    await kannel?.stop();
    await smsc?.close();
  }, 30_000);

  /** The next submit_sm the SMSC takes after `before` of them. */
  const nextSubmit = async (before: number): Promise<Submitted> => {
    await waitFor(() => smsc.submitted.length > before, WAIT_MS, 'Kannel’s submit_sm');
    const submitted = smsc.submitted[before];
    if (!submitted) throw new Error('no submit_sm');
    return submitted;
  };

  describe.each(engines())('$name', (engine) => {
    let h: Harness;
    let origin: string;
    let receiver: Receiver;
    let relay: Relay | undefined;
    let acct: CreatedAccount;
    let token: string;
    const cleanups: (() => Promise<void>)[] = [];

    beforeAll(async () => {
      h = await startHarness(engine, ENV);
      cleanups.push(() => h.close());
      // The app's clock stands still at START; move it to today, which Kannel's receipt dates and the callback
      // signatures run on.
      h.advance(Date.now() - START);
      await h.app.listen({ host: '127.0.0.1', port: 0 });
      origin = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
      receiver = await startReceiver();
      cleanups.push(() => receiver.close());
      relay = new Relay({
        store: h.store,
        config: loadConfig({ DATABASE_URL: 'sqlite::memory:', ...ENV }),
        pepper: PEPPER,
        logger: QUIET,
      });
      relay.start();
      cleanups.push(async () => relay?.stop(1000));
      acct = await h.createAccount({ callbackUrl: receiver.url });
      const res = await h.admin('POST', '/admin/v1/routes', { name: 'kannel', kind: 'kannel' });
      expect(res.statusCode, res.body).toBe(201);
      token = (res.json() as { token: string }).token;
    }, 60_000);

    afterAll(async () => {
      for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    }, 30_000);

    const dlr = async (messageId: string) => {
      const res = await h.inject(`/dlr?key=${acct.key}&secret=${acct.secret}&messageid=${messageId}`);
      expect(res.statusCode, res.body).toBe(200);
      return (res.json() as Record<string, unknown>[])[0] ?? {};
    };
    const counts = async () =>
      ((await h.admin('GET', '/admin/v1/routes/kannel')).json() as { counts: Record<string, number> }).counts;
    /** The callbacks the receiver got for one message, their bodies in order. */
    const callbacks = (messageId: string) =>
      receiver.received
        .map((r) => JSON.parse(r.body) as Record<string, unknown>)
        .filter((body) => body.messageid === messageId);
    /** Waybill's access-log lines of Kannel's fetches: method, url (token redacted), status. */
    const fetches = () =>
      h.logs
        .map((line) => JSON.parse(line) as { msg?: string; method?: string; url?: string; status?: number })
        .filter((l) => l.msg === 'request' && l.url?.startsWith('/intake/v1/kannel'));

    /**
     * Sends one message through Kannel's sendsms with the given dlr-url, then walks it through both of Kannel's
     * fetches: type=8 when the SMSC answers the submit_sm, type=1 when the SMSC sends its receipt.
     */
    async function throughKannel(messageId: string, dlrUrl: string, carrierId?: string) {
      const before = smsc.submitted.length;
      const fetchedBefore = fetches().length;
      const counted = await counts();
      if (carrierId !== undefined) smsc.nextMessageIds.push(carrierId);
      const sent = await (kannel as Kannel).sendsms({
        from: 'WAYBILL',
        to: TO,
        text: 'Hello',
        'dlr-mask': '31',
        'dlr-url': dlrUrl,
      });
      expect(sent).toStrictEqual({ status: 202, body: '0: Accepted for delivery' });
      const submitted = await nextSubmit(before);
      expect(submitted.pdu.destination_addr).toBe(TO);
      if (carrierId !== undefined) expect(submitted.messageId).toBe(carrierId);

      // The first fetch: type=8, reply ACK/ — the recipient is accepted, and its callback says so.
      await waitFor(async () => (await dlr(messageId)).drStatuscode === 'accepted', WAIT_MS, 'accepted');
      await waitFor(() => callbacks(messageId).length === 1, WAIT_MS, 'the accepted callback');
      expect(callbacks(messageId)[0]).toStrictEqual(await dlr(messageId));
      expect(await dlr(messageId)).toMatchObject({ to: TO, drStatuscode: 'accepted', drErrcode: '0' });

      // The second: the SMSC's receipt (Kannel answers its deliver_sm ESME_ROK), fetched as type=1 with the text.
      const doneAt = new Date();
      expect(await smsc.sendReceipt(submitted, doneAt)).toBe(0);
      await waitFor(async () => (await dlr(messageId)).drStatuscode === 'delivered', WAIT_MS, 'delivered');
      await waitFor(() => callbacks(messageId).length === 2, WAIT_MS, 'the delivered callback');
      const item = await dlr(messageId);
      // The receipt text's done date (UTC, to the minute: the route's timezone is UTC) is the drTime.
      const done = smppDate(doneAt);
      const drTime = `20${done.slice(0, 2)}-${done.slice(2, 4)}-${done.slice(4, 6)} ${done.slice(6, 8)}:${done.slice(8, 10)}:00.000`;
      expect(item).toMatchObject({ to: TO, drStatuscode: 'delivered', drErrcode: '0', drStatus: 0, drTime });
      expect(callbacks(messageId)[1]).toStrictEqual(item);

      // Exactly two fetches, type=8 with ACK/ then type=1 with the receipt, each answered 200 (`OK`); both
      // matched the recipient, nothing parked or garbled.
      const got = fetches().slice(fetchedBefore);
      expect(got.map((l) => [l.method, l.status])).toStrictEqual([
        ['GET', 200],
        ['GET', 200],
      ]);
      const params = got.map((l) => new URL(l.url ?? '', origin).searchParams);
      expect(params.map((p) => [p.get('type'), p.get('reply')])).toStrictEqual([
        ['8', 'ACK/'],
        [
          '1',
          `id:${submitted.messageId} sub:001 dlvrd:001 submit date:2611221000 done date:${done} stat:DELIVRD err:000 text:Hello`,
        ],
      ]);
      expect(await counts()).toStrictEqual({ ...counted, matched: (counted.matched ?? 0) + 2 });
      return params;
    }

    it('the direct form (account, messageid, to=%p): accepted on type=8, delivered on type=1, both called back', async () => {
      const template = documentedDlrUrls().find((url) => url.includes('messageid='));
      if (!template) throw new Error('docs/intake.md shows no dlr-url with messageid');
      const ingested = await h.ingest(acct.id, [{ id: 'kannel-direct', channel: 'SMS', channelUserId: TO }]);
      expect(ingested.statusCode, ingested.body).toBe(200);
      const url = fillDlrUrl(template, origin, { token, account: acct.id, messageid: 'kannel-direct' });
      const params = await throughKannel('kannel-direct', url);
      // %p: the recipient as given to sendsms, in both fetches.
      expect(params.map((p) => p.get('to'))).toStrictEqual([TO, TO]);
    });

    it('the carrier id form (carrierId=%F): %F is the SMSC’s message id in both fetches', async () => {
      const template = documentedDlrUrls().find((url) => url.includes('carrierId='));
      if (!template) throw new Error('docs/intake.md shows no dlr-url with carrierId');
      // Hex, as many SMSCs write it: Kannel passes it through as the SMSC wrote it.
      const carrierId = `0a1b${engine.name === 'sqlite' ? '2c3d' : '4e5f'}`;
      const ingested = await h.ingest(acct.id, [
        {
          id: 'kannel-carrier',
          channel: 'SMS',
          channelUserId: TO,
          sms: { carrier: { route: 'kannel', messageId: carrierId } },
        },
      ]);
      expect(ingested.statusCode, ingested.body).toBe(200);
      const params = await throughKannel(
        'kannel-carrier',
        fillDlrUrl(template, origin, { token }),
        carrierId,
      );
      expect(params.map((p) => p.get('carrierId'))).toStrictEqual([carrierId, carrierId]);
    });

    it('never writes the route’s token to the log', () => {
      expect(fetches().length).toBeGreaterThan(0);
      expect(h.logs.join('\n')).not.toContain(token);
    });
  });
});
