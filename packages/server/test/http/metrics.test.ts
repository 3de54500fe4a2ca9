import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { describe, expect, it } from 'vitest';
import { engines } from '../support/engines.js';
import { ADMIN_TOKEN, basic, START, useHarness } from '../support/http.js';

interface Family {
  name: string;
  type: string;
  metrics: { labels?: Record<string, string>; value?: string; buckets?: Record<string, string> }[];
}

const TO = '447700900123';

describe.each(engines())('$name GET /metrics', (engine) => {
  const h = useHarness(engine);
  const scrape = async (): Promise<Map<string, Family>> => {
    const res = await h().inject({ url: '/metrics', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    const families = parsePrometheusTextFormat(res.body) as Family[];
    return new Map(families.map((f) => [f.name, f]));
  };
  const value = (f: Family | undefined, labels: Record<string, string> = {}) =>
    Number(
      f?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v))?.value ??
        Number.NaN,
    );

  it('requires the admin token when one is set', async () => {
    expect((await h().inject('/metrics')).statusCode).toBe(401);
    expect(
      (await h().inject({ url: '/metrics', headers: { authorization: 'Bearer wrong' } })).statusCode,
    ).toBe(401);
  });

  it("counts every account's pending callback deliveries, one per recipient", async () => {
    const pending = async () => value((await scrape()).get('waybill_callback_queue'), { state: 'pending' });
    const before = await pending();
    const a = await h().createAccount({ callbackUrl: 'https://hooks.example/a' });
    const b = await h().createAccount({ callbackUrl: 'https://hooks.example/b' });
    await h().ingest(a.id, [
      { id: 'a-1', channel: 'SMS', channelUserId: TO },
      { id: 'a-2', channel: 'SMS', channelUserId: TO },
    ]);
    await h().ingest(b.id, [{ id: 'b-1', channel: 'SMS', channelUserId: TO }]);
    await h().receipts(a.id, [
      { messageId: 'a-1', drStatuscode: 'accepted' },
      { messageId: 'a-2', drStatuscode: 'delivered' },
    ]);
    await h().receipts(b.id, [{ messageId: 'b-1', drStatuscode: 'accepted' }]);
    expect(await pending()).toBe(before + 3);
    // A later receipt of a-1 supersedes its recipient's pending delivery with its own.
    await h().receipts(a.id, [{ messageId: 'a-1', drStatuscode: 'delivered' }]);
    expect(await pending()).toBe(before + 3);
  });

  it('exposes the contract metrics in the Prometheus text format, labelled by route pattern', async () => {
    const acct = await h().createAccount({ callbackUrl: 'https://hooks.example/dlr' });
    await h().ingest(acct.id, [{ id: 'm-1', channel: 'SMS', channelUserId: TO }]);
    await h().receipts(acct.id, [
      { messageId: 'm-1', drStatuscode: 'delivered', drTime: new Date(START).toISOString() },
      { messageId: 'm-1', drStatuscode: 'accepted', drTime: new Date(START).toISOString() },
      { messageId: 'early', drStatuscode: 'delivered' },
    ]);
    await h().inject(`/dlr?key=${acct.key}&secret=${acct.secret}&messageid=m-1`);
    await h().inject({
      url: '/messages?messageIds=m-1',
      headers: { authorization: basic(acct.key, acct.secret) },
    });
    await h().inject('/no/such/path');
    const m = await scrape();
    for (const name of [
      'waybill_http_requests_total',
      'waybill_http_request_duration_seconds',
      'waybill_ingest_items_total',
      'waybill_receipt_events_total',
      'waybill_callback_attempts_total',
      'waybill_callback_queue',
      'waybill_parked_receipts',
      'process_cpu_seconds_total',
      'nodejs_eventloop_lag_seconds',
    ]) {
      expect(m.has(name), name).toBe(true);
    }
    const requests = m.get('waybill_http_requests_total');
    expect(value(requests, { route: '/dlr', method: 'GET', status: '200' })).toBe(1);
    expect(value(requests, { route: '/admin/v1/accounts/:id/receipts', method: 'POST', status: '200' })).toBe(
      1,
    );
    expect(value(requests, { route: 'unmatched', status: '404' })).toBe(1);
    expect(m.get('waybill_http_request_duration_seconds')?.type).toBe('HISTOGRAM');
    const ingest = m.get('waybill_ingest_items_total');
    expect(value(ingest, { kind: 'messages', outcome: 'accepted' })).toBe(1);
    expect(value(ingest, { kind: 'receipts', outcome: 'applied' })).toBe(1);
    expect(value(ingest, { kind: 'receipts', outcome: 'ignored' })).toBe(1);
    expect(value(ingest, { kind: 'receipts', outcome: 'unknown' })).toBe(1);
    expect(value(m.get('waybill_receipt_events_total'))).toBe(1);
    expect(value(m.get('waybill_callback_queue'), { state: 'pending' })).toBe(1);
    expect(value(m.get('waybill_callback_queue'), { state: 'dead' })).toBe(0);
    expect(value(m.get('waybill_parked_receipts'))).toBe(1);

    // The parked receipt applies when its message arrives: one more event, counted.
    await h().ingest(acct.id, [{ id: 'early', channel: 'SMS', channelUserId: TO }]);
    const after = await scrape();
    expect(value(after.get('waybill_receipt_events_total'))).toBe(2);
    expect(value(after.get('waybill_parked_receipts'))).toBe(0);

    // No label carries an id, a key or a secret.
    const text = (await h().inject({ url: '/metrics', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }))
      .body;
    for (const secret of [acct.id, acct.key, acct.secret, ADMIN_TOKEN, 'm-1'])
      expect(text).not.toContain(secret);
  });

  it('counts the items of a refused batch as rejected', async () => {
    const acct = await h().createAccount();
    const res = await h().ingest(acct.id, [{ id: 'ok', channel: 'SMS', channelUserId: TO }, { id: 'bad' }]);
    expect(res.statusCode).toBe(400);
    expect(
      value((await scrape()).get('waybill_ingest_items_total'), { kind: 'messages', outcome: 'rejected' }),
    ).toBe(2);
  });
});

describe.each(engines().slice(0, 1))('$name GET /metrics without an admin token', (engine) => {
  const h = useHarness(engine, { WAYBILL_ADMIN_TOKEN: '' });
  it('is open', async () => {
    const res = await h().inject('/metrics');
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('waybill_http_requests_total');
  });
});
