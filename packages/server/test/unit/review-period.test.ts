import { describe, expect, it } from 'vitest';
import { parseReviewPeriod } from '../../src/domain/review-period.js';

const NOW = new Date('2026-11-22T10:00:00Z');
const ok = (raw: Parameters<typeof parseReviewPeriod>[0]) => {
  const result = parseReviewPeriod(raw, NOW);
  if (!result.ok) throw new Error(result.detail);
  return result;
};
const refused = (raw: Parameters<typeof parseReviewPeriod>[0]) => {
  const result = parseReviewPeriod(raw, NOW);
  if (result.ok) throw new Error('accepted');
  return result.detail;
};

describe('review period', () => {
  it('defaults to the last 30 days, today included, every campaign', () => {
    const r = ok({});
    expect(r.form).toStrictEqual({ from: '2026-10-24', to: '2026-11-22', campaign: '' });
    expect(r.days).toBe(30);
    expect(r.period).toStrictEqual({
      from: new Date('2026-10-24T00:00:00Z'),
      to: new Date('2026-11-22T00:00:00Z'),
    });
  });

  it('fills the missing end: 30 days before `to`, or 30 days from `from` but never past today', () => {
    expect(ok({ to: '2026-02-10' }).form).toMatchObject({ from: '2026-01-12', to: '2026-02-10' });
    expect(ok({ from: '2026-01-01' }).form).toMatchObject({ from: '2026-01-01', to: '2026-01-30' });
    expect(ok({ from: '2026-11-10' }).form).toMatchObject({ from: '2026-11-10', to: '2026-11-22' });
    expect(ok({ from: '2026-12-05' }).form).toMatchObject({ from: '2026-12-05', to: '2026-12-05' });
    expect(ok({ to: '1970-01-10' }).form).toMatchObject({ from: '1970-01-01', to: '1970-01-10' });
  });

  it('takes one day, a year of 366 days, and a campaign', () => {
    expect(ok({ from: '2026-11-01', to: '2026-11-01' }).days).toBe(1);
    expect(ok({ from: '2024-01-01', to: '2024-12-31' }).days).toBe(366);
    const r = ok({ campaign: 'spring:2026' });
    expect(r.period.campaignId).toBe('spring:2026');
    expect(r.form.campaign).toBe('spring:2026');
  });

  it('refuses what is not a real day from 1970 on, a reversed or too long period, a bad campaign', () => {
    expect(refused({ from: '2026-02-29' })).toBe('“From” must be a date written YYYY-MM-DD, 1970 or later.');
    expect(refused({ from: '2026-1-01' })).toContain('“From”');
    expect(refused({ to: '1969-12-31' })).toBe('“To” must be a date written YYYY-MM-DD, 1970 or later.');
    expect(refused({ to: '2026-11-22T00:00' })).toContain('“To”');
    expect(refused({ from: '2026-11-02', to: '2026-11-01' })).toBe('“From” must not be after “To”.');
    expect(refused({ from: '2024-01-01', to: '2025-01-01' })).toBe(
      'A period covers at most 366 days; this one covers 367.',
    );
    expect(refused({ campaign: 'a b' })).toBe('A campaign is 1-64 characters of A-Z a-z 0-9 . _ : -');
    expect(refused({ campaign: 'x'.repeat(65) })).toContain('campaign');
  });

  it('hands back what was typed when it refuses, so the form shows it again', () => {
    const result = parseReviewPeriod({ from: 'soon', campaign: 'c' }, NOW);
    expect(result).toMatchObject({ ok: false, form: { from: 'soon', to: '', campaign: 'c' } });
  });
});
