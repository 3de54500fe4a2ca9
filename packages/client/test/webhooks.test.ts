import { createHmac, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { hasReceipt, verifyWebhook, type WebhookVerificationError } from '../src/index.js';
import { dlrItem } from './helpers.js';

const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const OTHER_SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const NOW = Date.parse('2026-11-22T10:00:00Z');
const TS = String(NOW / 1000);
const BODY = JSON.stringify(dlrItem({ drErrcode: 0, status: 0 }));

function sign(secret: string, id: string, timestamp: string, body: string | Buffer): string {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest('base64')}`;
}

function headers(overrides: Record<string, string> = {}): Record<string, string> {
  return {
    'webhook-id': 'msg_1',
    'webhook-timestamp': TS,
    'webhook-signature': sign(SECRET, 'msg_1', TS, BODY),
    ...overrides,
  };
}

async function reason(promise: Promise<unknown>): Promise<string> {
  const err = (await promise.catch((e: unknown) => e)) as WebhookVerificationError;
  expect(err.name).toBe('WebhookVerificationError');
  return err.reason;
}

describe('verifyWebhook', () => {
  it('accepts a valid delivery and returns the normalized receipt', async () => {
    const item = await verifyWebhook(BODY, headers(), SECRET, { now: NOW });
    expect(item).toMatchObject({ messageid: 'm-1', status: '0', drErrcode: '0', drStatuscode: 'delivered' });
    if (!hasReceipt(item)) throw new Error('expected a receipt');
    expect(item.drTimeDate.toISOString()).toBe('2026-11-22T10:00:05.120Z');
  });

  it('accepts a Uint8Array body, a Headers object and Node-style header records', async () => {
    const bytes = new TextEncoder().encode(BODY);
    await expect(
      verifyWebhook(bytes, new Headers(headers()), SECRET, { now: new Date(NOW) }),
    ).resolves.toBeDefined();
    const node = {
      'Webhook-Id': 'msg_1',
      'webhook-timestamp': [TS],
      'webhook-signature': headers()['webhook-signature'],
    };
    await expect(verifyWebhook(BODY, node, SECRET, { now: NOW })).resolves.toBeDefined();
  });

  it('verifies the exact bytes, not a re-encoding', async () => {
    const body = Buffer.from(`${BODY.slice(0, -1)},"note":"caf\u00e9"}`);
    const h = headers({ 'webhook-signature': sign(SECRET, 'msg_1', TS, body) });
    await expect(verifyWebhook(new Uint8Array(body), h, SECRET, { now: NOW })).resolves.toBeDefined();
  });

  it('refuses a tampered body', async () => {
    expect(
      await reason(verifyWebhook(BODY.replace('delivered', 'rejected'), headers(), SECRET, { now: NOW })),
    ).toBe('invalid_signature');
  });

  it('refuses a signature made with another secret', async () => {
    expect(await reason(verifyWebhook(BODY, headers(), OTHER_SECRET, { now: NOW }))).toBe(
      'invalid_signature',
    );
  });

  it('refuses a changed id or timestamp', async () => {
    expect(await reason(verifyWebhook(BODY, headers({ 'webhook-id': 'msg_2' }), SECRET, { now: NOW }))).toBe(
      'invalid_signature',
    );
    const ts = String(Number(TS) + 1);
    expect(
      await reason(verifyWebhook(BODY, headers({ 'webhook-timestamp': ts }), SECRET, { now: NOW })),
    ).toBe('invalid_signature');
  });

  it('refuses a timestamp older or newer than the tolerance', async () => {
    expect(await reason(verifyWebhook(BODY, headers(), SECRET, { now: NOW + 301_000 }))).toBe(
      'timestamp_too_old',
    );
    expect(await reason(verifyWebhook(BODY, headers(), SECRET, { now: NOW - 301_000 }))).toBe(
      'timestamp_too_new',
    );
    await expect(verifyWebhook(BODY, headers(), SECRET, { now: NOW + 299_000 })).resolves.toBeDefined();
    expect(
      await reason(verifyWebhook(BODY, headers(), SECRET, { now: NOW + 11_000, toleranceSeconds: 10 })),
    ).toBe('timestamp_too_old');
  });

  it('refuses a timestamp that is not Unix seconds', async () => {
    expect(
      await reason(
        verifyWebhook(BODY, headers({ 'webhook-timestamp': '2026-11-22T10:00:00Z' }), SECRET, { now: NOW }),
      ),
    ).toBe('invalid_timestamp');
  });

  it('accepts when any of several signatures matches (secret rotation)', async () => {
    const good = sign(SECRET, 'msg_1', TS, BODY);
    const stale = sign(OTHER_SECRET, 'msg_1', TS, BODY);
    for (const list of [`${stale} ${good}`, `${good} ${stale}`, `v2,abc ${good}`, `v1,!!notbase64 ${good}`]) {
      await expect(
        verifyWebhook(BODY, headers({ 'webhook-signature': list }), SECRET, { now: NOW }),
      ).resolves.toBeDefined();
    }
    expect(
      await reason(
        verifyWebhook(BODY, headers({ 'webhook-signature': `${stale} v1,AAAA` }), SECRET, { now: NOW }),
      ),
    ).toBe('invalid_signature');
    // The right MAC under another version tag is not a v1 signature.
    expect(
      await reason(
        verifyWebhook(BODY, headers({ 'webhook-signature': good.replace('v1,', 'v2,') }), SECRET, {
          now: NOW,
        }),
      ),
    ).toBe('invalid_signature');
  });

  it('refuses a delivery with a header missing', async () => {
    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
      const h = headers();
      delete h[name];
      expect(await reason(verifyWebhook(BODY, h, SECRET, { now: NOW }))).toBe('missing_headers');
    }
  });

  it('refuses a signed body that is not a receipt', async () => {
    const body = 'not json';
    const h = headers({ 'webhook-signature': sign(SECRET, 'msg_1', TS, body) });
    expect(await reason(verifyWebhook(body, h, SECRET, { now: NOW }))).toBe('invalid_payload');
  });

  const signed = (body: string) => headers({ 'webhook-signature': sign(SECRET, 'msg_1', TS, body) });

  it.each<[string, unknown]>([
    ['an object that is no receipt', { hello: 1 }],
    ['an array of receipts', [dlrItem()]],
    ['null', null],
    ['another type', dlrItem({ type: 'message' })],
    ['no type', dlrItem({ type: undefined })],
    ['an empty messageid', dlrItem({ messageid: '' })],
    ['no messageid', dlrItem({ messageid: undefined })],
    ['an empty to', dlrItem({ to: '' })],
    ['a to that is an object', dlrItem({ to: { number: '447700900123' } })],
    ['an unknown send status', dlrItem({ status: '2' })],
    ['no send status', dlrItem({ status: undefined })],
    ['a price that is text', dlrItem({ price: 'cheap' })],
    ['a price that is a numeric string', dlrItem({ price: '0.05' })],
    ['no price', dlrItem({ price: undefined })],
    ['fractional counts', dlrItem({ counts: 1.5 })],
    ['negative counts', dlrItem({ counts: -1 })],
    ['no counts', dlrItem({ counts: undefined })],
    ['an unknown drStatus', dlrItem({ drStatus: 3 })],
    ['an unknown drStatuscode', dlrItem({ drStatuscode: 'lost' })],
    ['receipt fields without drStatus', dlrItem({ drStatus: undefined })],
    ['an unreadable drTime', dlrItem({ drTime: 'yesterday' })],
  ])('refuses a correctly signed body with %s (invalid_payload)', async (_name, value) => {
    const body = JSON.stringify(value);
    const err = (await verifyWebhook(body, signed(body), SECRET, { now: NOW }).catch(
      (e: unknown) => e,
    )) as WebhookVerificationError;
    expect(err.name).toBe('WebhookVerificationError');
    expect(err.reason).toBe('invalid_payload');
    expect(err.message).toMatch(/not a delivery receipt item: /);
  });

  it.each<[string, Record<string, unknown>]>([
    [
      'numbers where the spec allows them',
      dlrItem({ status: 400, drStatus: 400, drStatuscode: 'failed', drErrcode: 2 }),
    ],
    [
      'no receipt yet',
      dlrItem({ drStatus: undefined, drStatuscode: undefined, drErrcode: undefined, drTime: undefined }),
    ],
    ['no network', dlrItem({ network: undefined })],
    ['a field this SDK does not know yet', dlrItem({ carrier: 'Acme' })],
  ])('accepts a receipt with %s', async (_name, value) => {
    const body = JSON.stringify(value);
    const item = await verifyWebhook(body, signed(body), SECRET, { now: NOW });
    expect(item).toMatchObject({ type: 'dlr', messageid: 'm-1', to: '447700900123' });
  });

  it('treats a malformed secret as a programming error, not a bad delivery', async () => {
    await expect(verifyWebhook(BODY, headers(), 'whsec_***', { now: NOW })).rejects.toBeInstanceOf(TypeError);
  });

  it('accepts a secret without the whsec_ prefix', async () => {
    await expect(verifyWebhook(BODY, headers(), SECRET.slice(6), { now: NOW })).resolves.toBeDefined();
  });
});
