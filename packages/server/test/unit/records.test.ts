import { describe, expect, it } from 'vitest';
import { messageStatus, type SmsState, type StoredMessage } from '../../src/domain/records.js';
import type { DrStatuscode, SendStatus } from '../../src/domain/vocabulary.js';

const message = (over: Partial<StoredMessage>): StoredMessage => ({
  id: 'm-1',
  channel: 'SMS',
  direction: 'outbound',
  contactId: 'c',
  channelUserId: '447700900123',
  conversationId: 'v',
  campaignId: null,
  text: null,
  content: null,
  status: null,
  sms: null,
  createdAt: new Date(0),
  ...over,
});

const sms = (status: SendStatus, code?: DrStatuscode): SmsState => ({
  status,
  network: null,
  price: 0,
  counts: 1,
  receipt: code ? { drStatuscode: code, drErrcode: '0', drTime: new Date(0) } : null,
});

describe('messageStatus', () => {
  it.each([
    ['1', undefined, 'pending'],
    ['400', undefined, 'failed'],
    ['0', undefined, 'sent'],
    ['0', 'accepted', 'sent'],
    ['0', 'delivered', 'delivered'],
    ['0', 'rejected', 'failed'],
    ['0', 'failed', 'failed'],
    ['0', 'expired', 'failed'],
    ['0', 'deleted', 'failed'],
    ['0', 'unknown', 'failed'],
  ] as const)('outbound SMS with send status %s and receipt %s is %s', (status, code, expected) => {
    expect(messageStatus(message({ sms: sms(status, code) }))).toBe(expected);
  });

  it('is received for inbound messages on every channel', () => {
    expect(messageStatus(message({ direction: 'inbound' }))).toBe('received');
    expect(messageStatus(message({ channel: 'VIBER', direction: 'inbound', status: 'read' }))).toBe(
      'received',
    );
  });

  it.each(['pending', 'sent', 'delivered', 'read', 'failed'] as const)(
    'is the operator-set %s for outbound chat messages',
    (status) => {
      expect(messageStatus(message({ channel: 'WHATSAPP', status }))).toBe(status);
    },
  );

  it('defaults an outbound chat message without a status to sent', () => {
    expect(messageStatus(message({ channel: 'RBM', status: null }))).toBe('sent');
  });
});
