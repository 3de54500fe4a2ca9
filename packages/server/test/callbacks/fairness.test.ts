import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Relay } from '../../src/callbacks/relay.js';
import { loadConfig } from '../../src/config.js';
import { engines } from '../support/engines.js';
import { type Harness, PEPPER, START, startHarness } from '../support/http.js';
import { type Receiver, startReceiver, waitFor } from './receiver.js';

/**
 * Fairness between accounts (CONTRACT §9: at most WAYBILL_CALLBACK_ENDPOINT_CONCURRENCY attempts per account):
 * an account with a long backlog behind a slow receiver does not hold up another account's deliveries.
 */

const ENV = { WAYBILL_CALLBACK_ALLOW_PRIVATE: 'true', WAYBILL_RATE_PER_SECOND: '0' };
const silent = { debug() {}, info() {}, warn() {}, error() {} };

describe.each(engines())('$name callback relay fairness', (engine) => {
  let h: Harness;
  let slow: Receiver;
  let fast: Receiver;
  let relay: Relay | undefined;
  beforeEach(async () => {
    h = await startHarness(engine, ENV);
    h.advance(Date.now() - START);
    slow = await startReceiver(() => ({ status: 200, delayMs: 200 }));
    fast = await startReceiver();
  });
  afterEach(async () => {
    await relay?.stop(500);
    await slow.close();
    await fast.close();
    await h.close();
  });

  it('delivers a quiet account’s receipt while a busy account works through its backlog', async () => {
    const busy = await h.createAccount({ callbackUrl: slow.url });
    const quiet = await h.createAccount({ callbackUrl: fast.url });
    const n = 2000;
    const to = (i: number) => `4477009${String(i).padStart(5, '0')}`;
    for (let from = 0; from < n; from += 1000) {
      const ids = Array.from({ length: 1000 }, (_, k) => from + k);
      await h.ingest(
        busy.id,
        ids.map((i) => ({ id: `b-${i}`, channel: 'SMS', channelUserId: to(i) })),
      );
      await h.receipts(
        busy.id,
        ids.map((i) => ({ messageId: `b-${i}`, drStatuscode: 'delivered' })),
      );
    }
    relay = new Relay({
      store: h.store,
      config: loadConfig({ DATABASE_URL: 'sqlite::memory:', ...ENV }),
      pepper: PEPPER,
      logger: silent,
    });
    relay.start();
    await waitFor(() => slow.received.length > 0, 3000, 'the busy account’s first deliveries');
    // Queued after the whole backlog of the busy account.
    h.advance(10);
    await h.ingest(quiet.id, [{ id: 'q-1', channel: 'SMS', channelUserId: to(0) }]);
    await h.receipts(quiet.id, [{ messageId: 'q-1', drStatuscode: 'delivered' }]);
    relay.poke();
    await waitFor(() => fast.received.length === 1, 2000, 'the quiet account’s delivery');
    expect(slow.received.length).toBeLessThan(n / 2);
  });
});
