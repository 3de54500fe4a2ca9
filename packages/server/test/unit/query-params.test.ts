import { describe, expect, it } from 'vitest';
import { parseDlrQuery, parseMessagesQuery, type RawQuery } from '../../src/domain/query-params.js';

const OK = { key: 'Abcdefgh', secret: 'S3cretAB', messageid: 'm-1' };
const CONTACT = '0190A000-0000-7000-8000-00000000000A';

describe('parseDlrQuery', () => {
  it('returns the three values when all are well-formed', () => {
    expect(parseDlrQuery(OK)).toStrictEqual({
      ok: true,
      key: 'Abcdefgh',
      secret: 'S3cretAB',
      messageId: 'm-1',
    });
  });

  it.each([
    ['nothing', {}],
    ['key absent', { secret: OK.secret, messageid: 'm-1' }],
    ['secret empty', { ...OK, secret: '' }],
    ['messageid empty', { ...OK, messageid: '' }],
    ['one absent, another malformed', { key: 'bad', messageid: 'm-1' }],
    ['one absent, another repeated', { key: ['Abcdefgh', 'Abcdefgh'], messageid: 'm-1' }],
    ['one empty, another malformed', { key: '', secret: 'x', messageid: 'a b' }],
  ] as [string, RawQuery][])('code 2: %s', (_name, query) => {
    expect(parseDlrQuery(query)).toMatchObject({ ok: false, code: 2 });
  });

  it.each([
    ['key of 7', { ...OK, key: 'Abcdefg' }],
    ['key of 9', { ...OK, key: 'Abcdefghi' }],
    ['key with a symbol', { ...OK, key: 'Abcdefg!' }],
    ['secret with a space', { ...OK, secret: 'S3cret A' }],
    ['messageid of 65', { ...OK, messageid: 'a'.repeat(65) }],
    ['messageid with a slash', { ...OK, messageid: 'a/b' }],
    ['key repeated', { ...OK, key: ['Abcdefgh', 'Abcdefgh'] }],
    ['messageid repeated', { ...OK, messageid: ['m-1', 'm-2'] }],
    ['repeated and malformed', { ...OK, key: 'bad', secret: ['a', 'b'] }],
  ] as [string, RawQuery][])('code 3: %s', (_name, query) => {
    expect(parseDlrQuery(query)).toMatchObject({ ok: false, code: 3 });
  });

  it('accepts 1- and 64-character message ids of the whole alphabet', () => {
    expect(parseDlrQuery({ ...OK, messageid: 'a' })).toMatchObject({ ok: true });
    expect(parseDlrQuery({ ...OK, messageid: `AZaz09._:-${'x'.repeat(54)}` })).toMatchObject({ ok: true });
  });
});

describe('parseMessagesQuery, Mode 1', () => {
  it('splits, trims, drops empty elements and removes duplicates, keeping first-seen order', () => {
    expect(parseMessagesQuery({ messageIds: ' b , a,,b ,\tc, ' }, false)).toStrictEqual({
      ok: true,
      value: { mode: 'ids', ids: ['b', 'a', 'c'], campaignId: null },
    });
  });

  it('takes 20 distinct ids, and 21 with a duplicate', () => {
    const twenty = Array.from({ length: 20 }, (_, i) => `id-${i}`);
    expect(parseMessagesQuery({ messageIds: twenty.join(',') }, false)).toMatchObject({ ok: true });
    expect(parseMessagesQuery({ messageIds: [...twenty, 'id-0'].join(',') }, false)).toMatchObject({
      ok: true,
    });
  });

  it.each([
    ['empty', ''],
    ['only commas and spaces', ' , ,'],
    ['21 ids', Array.from({ length: 21 }, (_, i) => `id-${i}`).join(',')],
    ['a malformed id', 'm-1,bad id'],
    ['an id over 64 characters', `m-1,${'a'.repeat(65)}`],
  ])('refuses %s', (_name, messageIds) => {
    expect(parseMessagesQuery({ messageIds }, false)).toMatchObject({ ok: false });
  });

  it('refuses messageIds given twice', () => {
    expect(parseMessagesQuery({ messageIds: ['a', 'b'] }, false)).toMatchObject({ ok: false });
  });

  it('ignores Mode 2 parameters, even malformed or repeated ones', () => {
    const query = {
      messageIds: 'm-1',
      channel: 'PIGEON',
      channelUserId: ['x', 'y'],
      contactId: 'not-a-uuid',
      size: '1000',
      cursor: '',
    };
    expect(parseMessagesQuery(query, false)).toStrictEqual({
      ok: true,
      value: { mode: 'ids', ids: ['m-1'], campaignId: null },
    });
  });

  it('takes campaignId only on /messages', () => {
    expect(parseMessagesQuery({ messageIds: 'm-1', campaignId: 'c-1' }, true)).toMatchObject({
      ok: true,
      value: { campaignId: 'c-1' },
    });
    expect(parseMessagesQuery({ messageIds: 'm-1', campaignId: 'c-1' }, false)).toMatchObject({
      ok: true,
      value: { campaignId: null },
    });
    expect(parseMessagesQuery({ messageIds: 'm-1', campaignId: 'bad id' }, true)).toMatchObject({
      ok: false,
    });
  });
});

describe('parseMessagesQuery, Mode 2', () => {
  it('takes channel with channelUserId, upper-casing the channel and defaulting size to 20', () => {
    expect(parseMessagesQuery({ channel: 'sms', channelUserId: '447700900123' }, false)).toStrictEqual({
      ok: true,
      value: {
        mode: 'history',
        channel: 'SMS',
        channelUserId: '447700900123',
        contactId: null,
        campaignId: null,
        size: 20,
        cursor: null,
      },
    });
  });

  it('takes channel with contactId, lower-casing the UUID', () => {
    expect(
      parseMessagesQuery({ channel: 'WhatsApp', contactId: CONTACT, size: '7', cursor: 'abc.def' }, false),
    ).toMatchObject({
      ok: true,
      value: { channel: 'WHATSAPP', contactId: CONTACT.toLowerCase(), size: 7, cursor: 'abc.def' },
    });
  });

  it.each([
    ['neither channelUserId nor contactId', { channel: 'SMS' }],
    ['both', { channel: 'SMS', channelUserId: '447700900123', contactId: CONTACT }],
    ['no channel', { channelUserId: '447700900123' }],
    ['an unknown channel', { channel: 'PIGEON', channelUserId: '447700900123' }],
    ['an SMS number with +', { channel: 'SMS', channelUserId: '+447700900123' }],
    ['an SMS number with a leading 0', { channel: 'SMS', channelUserId: '07700900123' }],
    ['a chat id with a space', { channel: 'VIBER', channelUserId: 'a b' }],
    ['a chat id of 129 characters', { channel: 'VIBER', channelUserId: 'x'.repeat(129) }],
    ['a malformed contactId', { channel: 'SMS', contactId: 'abc' }],
    ['size 0', { channel: 'SMS', contactId: CONTACT, size: '0' }],
    ['size 101', { channel: 'SMS', contactId: CONTACT, size: '101' }],
    ['size 1.5', { channel: 'SMS', contactId: CONTACT, size: '1.5' }],
    ['size -1', { channel: 'SMS', contactId: CONTACT, size: '-1' }],
    ['size empty', { channel: 'SMS', contactId: CONTACT, size: '' }],
    ['size 1e1', { channel: 'SMS', contactId: CONTACT, size: '1e1' }],
    ['an empty cursor', { channel: 'SMS', contactId: CONTACT, cursor: '' }],
    ['channel twice', { channel: ['SMS', 'SMS'], contactId: CONTACT }],
    ['size twice', { channel: 'SMS', contactId: CONTACT, size: ['5', '5'] }],
    ['campaignId alone on v1', { campaignId: 'c-1' }],
  ] as [string, RawQuery][])('refuses %s', (_name, query) => {
    expect(parseMessagesQuery(query, false)).toMatchObject({ ok: false, detail: expect.any(String) });
  });

  it.each([
    ['1', 1],
    ['100', 100],
    ['007', 7],
  ])('takes size %s', (size, expected) => {
    expect(parseMessagesQuery({ channel: 'SMS', contactId: CONTACT, size }, false)).toMatchObject({
      ok: true,
      value: { size: expected },
    });
  });

  it('takes a 128-character chat id', () => {
    expect(parseMessagesQuery({ channel: 'TELEGRAM', channelUserId: 'é'.repeat(128) }, false)).toMatchObject({
      ok: true,
    });
  });

  it('lists a campaign alone on /messages, channel then optional', () => {
    expect(parseMessagesQuery({ campaignId: 'c-1' }, true)).toMatchObject({
      ok: true,
      value: { mode: 'history', campaignId: 'c-1', channel: null, contactId: null, channelUserId: null },
    });
    expect(parseMessagesQuery({ campaignId: 'c-1', channel: 'viber' }, true)).toMatchObject({
      ok: true,
      value: { channel: 'VIBER' },
    });
    expect(parseMessagesQuery({ campaignId: 'c-1', channel: 'nope' }, true)).toMatchObject({ ok: false });
    expect(parseMessagesQuery({ campaignId: ['c-1', 'c-1'] }, true)).toMatchObject({ ok: false });
  });

  it('ignores campaignId on the v1 endpoint when a contact is given', () => {
    expect(
      parseMessagesQuery({ channel: 'SMS', contactId: CONTACT, campaignId: 'bad id' }, false),
    ).toMatchObject({
      ok: true,
      value: { campaignId: null },
    });
  });
});
