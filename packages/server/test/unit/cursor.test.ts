import { describe, expect, it } from 'vitest';
import { type CursorBinding, decodeCursor, encodeCursor } from '../../src/domain/cursor.js';

const KEY = Buffer.from('cursor-test-key-0123456789');
const OTHER_KEY = Buffer.from('cursor-test-key-9876543210');
const BINDING: CursorBinding = {
  accountId: '0190a000-0000-7000-8000-000000000001',
  contactId: '0190a000-0000-7000-8000-000000000002',
  channel: 'SMS',
  campaignId: null,
};
const POSITION = {
  createdAt: new Date('2026-11-22T10:00:00.123Z'),
  id: 'm-1',
  channelUserId: '447700900123',
};

describe('cursor', () => {
  it('round-trips a position under the same key and binding', () => {
    const token = encodeCursor(KEY, POSITION, BINDING);
    expect(token).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(decodeCursor(KEY, token, BINDING)).toStrictEqual(POSITION);
  });

  it('round-trips ids with unusual characters', () => {
    const position = { createdAt: new Date(0), id: 'a.b_c:d-e', channelUserId: 'tg:😀 user' };
    const binding = { ...BINDING, channel: 'TELEGRAM', campaignId: 'camp-1' };
    expect(decodeCursor(KEY, encodeCursor(KEY, position, binding), binding)).toStrictEqual(position);
  });

  it('fails when any single character is altered, to any other character', () => {
    const token = encodeCursor(KEY, POSITION, BINDING);
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/ ';
    const accepted: string[] = [];
    for (let i = 0; i < token.length; i++) {
      for (const c of alphabet) {
        if (c === token[i]) continue;
        const altered = `${token.slice(0, i)}${c}${token.slice(i + 1)}`;
        if (decodeCursor(KEY, altered, BINDING) !== null) accepted.push(altered);
      }
    }
    expect(accepted).toStrictEqual([]);
  });

  it('fails when truncated, extended or emptied', () => {
    const token = encodeCursor(KEY, POSITION, BINDING);
    for (const bad of [
      token.slice(0, -4),
      `${token}AAAA`,
      '',
      '.',
      token.split('.')[0] ?? '',
      `.${token}`,
      'x'.repeat(600),
    ]) {
      expect(decodeCursor(KEY, bad, BINDING)).toBeNull();
    }
  });

  it.each([
    ['account', { accountId: '0190a000-0000-7000-8000-000000000009' }],
    ['contact', { contactId: '0190a000-0000-7000-8000-000000000009' }],
    ['no contact', { contactId: null }],
    ['channel', { channel: 'WHATSAPP' }],
    ['campaign', { campaignId: 'camp-1' }],
  ])('fails under another binding: %s', (_name, change) => {
    const token = encodeCursor(KEY, POSITION, BINDING);
    expect(decodeCursor(KEY, token, { ...BINDING, ...change })).toBeNull();
  });

  it('fails under another key', () => {
    expect(decodeCursor(OTHER_KEY, encodeCursor(KEY, POSITION, BINDING), BINDING)).toBeNull();
  });

  it('refuses a forged payload signed with another key', () => {
    const forged = encodeCursor(OTHER_KEY, { ...POSITION, id: 'other' }, BINDING);
    const real = encodeCursor(KEY, POSITION, BINDING);
    const spliced = `${forged.split('.')[0]}.${real.split('.')[1]}`;
    expect(decodeCursor(KEY, spliced, BINDING)).toBeNull();
  });
});
