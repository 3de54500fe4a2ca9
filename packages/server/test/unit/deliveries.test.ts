import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { generateCallbackSecret } from '../../src/domain/credentials.js';
import {
  DEFAULT_RETRY_SCHEDULE,
  nextAttemptDelayMs,
  parseRetryAfter,
} from '../../src/domain/deliveries/schedule.js';
import { signWebhook } from '../../src/domain/deliveries/signing.js';
import { openSecret, sealSecret } from '../../src/domain/secret-box.js';

describe('the retry schedule', () => {
  it('follows the schedule with ±20% jitter and ends after the last delay', () => {
    const schedule = [5, 300, 1800];
    expect(nextAttemptDelayMs(schedule, 1, null, 0)).toBe(4000);
    expect(nextAttemptDelayMs(schedule, 1, null, 0.5)).toBe(5000);
    expect(nextAttemptDelayMs(schedule, 1, null, 0.999999)).toBe(6000);
    expect(nextAttemptDelayMs(schedule, 2, null, 0.5)).toBe(300_000);
    expect(nextAttemptDelayMs(schedule, 3, null, 0.5)).toBe(1_800_000);
    expect(nextAttemptDelayMs(schedule, 4, null, 0.5)).toBeNull();
  });

  it('makes 10 attempts over about 76 hours by default', () => {
    const total = DEFAULT_RETRY_SCHEDULE.reduce((sum, s) => sum + s, 0);
    expect(DEFAULT_RETRY_SCHEDULE).toHaveLength(9);
    expect(total / 3600).toBeCloseTo(75.6, 1);
  });

  it('never retries sooner than Retry-After, capped at the longest delay', () => {
    const schedule = [5, 60];
    expect(nextAttemptDelayMs(schedule, 1, 30, 0.5)).toBe(30_000);
    expect(nextAttemptDelayMs(schedule, 1, 2, 0.5)).toBe(5000);
    expect(nextAttemptDelayMs(schedule, 1, 86_400, 0.5)).toBe(60_000);
    expect(nextAttemptDelayMs(schedule, 3, 30, 0.5)).toBeNull();
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    const now = new Date('2026-11-22T10:00:00Z');
    expect(parseRetryAfter('120', now)).toBe(120);
    expect(parseRetryAfter(' 7 ', now)).toBe(7);
    expect(parseRetryAfter('Sun, 22 Nov 2026 10:01:30 GMT', now)).toBe(90);
    expect(parseRetryAfter('Sun, 22 Nov 2026 09:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter(undefined, now)).toBeNull();
    expect(parseRetryAfter('soon', now)).toBeNull();
    expect(parseRetryAfter('-5', now)).toBeNull();
  });
});

describe('webhook signatures', () => {
  const body = JSON.stringify({ type: 'dlr', messageid: 'm-1', to: '447700900123', status: '0' });

  it('verify with the reference standardwebhooks package', () => {
    const secret = generateCallbackSecret();
    const ts = Math.floor(Date.now() / 1000);
    const headers = {
      'webhook-id': 'evt_01JDB9W4Q4M2T8Y5F0N7XK3R6S',
      'webhook-timestamp': String(ts),
      'webhook-signature': signWebhook([secret], 'evt_01JDB9W4Q4M2T8Y5F0N7XK3R6S', ts, body),
    };
    expect(new Webhook(secret).verify(body, headers)).toStrictEqual(JSON.parse(body));
    expect(() => new Webhook(secret).verify(`${body} `, headers)).toThrow();
    expect(() => new Webhook(generateCallbackSecret()).verify(body, headers)).toThrow();
  });

  it('carry one signature per secret, each verifying on its own', () => {
    const [a, b] = [generateCallbackSecret(), generateCallbackSecret()];
    const ts = Math.floor(Date.now() / 1000);
    const signature = signWebhook([a, b], 'evt_x', ts, body);
    expect(signature.split(' ')).toHaveLength(2);
    const headers = {
      'webhook-id': 'evt_x',
      'webhook-timestamp': String(ts),
      'webhook-signature': signature,
    };
    expect(new Webhook(a).verify(body, headers)).toBeTruthy();
    expect(new Webhook(b).verify(body, headers)).toBeTruthy();
  });
});

describe('sealed callback secrets', () => {
  const pepper = randomBytes(32);

  it('round-trip under the same pepper and show nothing of the secret', () => {
    const secret = generateCallbackSecret();
    const sealed = sealSecret(pepper, secret);
    expect(sealed).toMatch(/^sealed:v1:/);
    expect(sealed).not.toContain(secret.slice(6));
    expect(sealSecret(pepper, secret)).not.toBe(sealed);
    expect(openSecret(pepper, sealed)).toBe(secret);
  });

  it('refuse another pepper or a tampered value, and pass a legacy clear value through', () => {
    const sealed = sealSecret(pepper, generateCallbackSecret());
    expect(() => openSecret(randomBytes(32), sealed)).toThrow();
    const tampered = `${sealed.slice(0, -4)}${sealed.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`;
    expect(() => openSecret(pepper, tampered)).toThrow();
    expect(openSecret(pepper, 'whsec_legacy')).toBe('whsec_legacy');
  });
});
