import { describe, expect, it } from 'vitest';
import { parseReceiptDate, parseReceiptText } from '../../src/domain/intake/receipt-text.js';
import { isTimeZone, zonedWallClockToInstant } from '../../src/domain/intake/wall-clock.js';

const at = (iso: string) => new Date(iso);

describe('the receipt text', () => {
  it('reads the de-facto format with every field', () => {
    const text =
      'id:0A1B2C3D sub:001 dlvrd:001 submit date:2611221000 done date:2611221001 stat:DELIVRD err:000 text:Hello';
    expect(parseReceiptText(text)).toEqual({
      id: '0A1B2C3D',
      sub: '001',
      dlvrd: '001',
      submitDate: '2611221000',
      doneDate: '2611221001',
      submittedAt: at('2026-11-22T10:00:00Z'),
      doneAt: at('2026-11-22T10:01:00Z'),
      stat: 'DELIVRD',
      err: '000',
      text: 'Hello',
    });
  });

  it('matches keys in any case, and `Text:` as `text:`', () => {
    const r = parseReceiptText(
      'ID:42 SUB:001 DlVrD:001 Submit Date:2611221000 DONE DATE:261122100130 Stat:UNDELIV Err:027 Text:hi',
    );
    expect(r).toMatchObject({ id: '42', sub: '001', dlvrd: '001', stat: 'UNDELIV', err: '027', text: 'hi' });
    expect(r?.doneAt).toEqual(at('2026-11-22T10:01:30Z'));
  });

  it('takes fields in any order, and tolerates missing ones', () => {
    expect(parseReceiptText('stat:EXPIRED err:001 id:99')).toEqual({ stat: 'EXPIRED', err: '001', id: '99' });
    expect(parseReceiptText('done date:2611221001 id:abc')).toEqual({
      doneDate: '2611221001',
      doneAt: at('2026-11-22T10:01:00Z'),
      id: 'abc',
    });
  });

  it('tolerates extra spaces: around the colon, between words, before and after', () => {
    const r = parseReceiptText('   id : 7   sub:  001  submit  date:2611221000   stat :  DELIVRD\terr:000  ');
    expect(r).toEqual({
      id: '7',
      sub: '001',
      submitDate: '2611221000',
      submittedAt: at('2026-11-22T10:00:00Z'),
      stat: 'DELIVRD',
      err: '000',
    });
  });

  it('reads `submit_date` and `submitdate` spellings', () => {
    expect(parseReceiptText('id:1 submit_date:2611221000 done_date:2611221001')).toMatchObject({
      submitDate: '2611221000',
      doneDate: '2611221001',
    });
    expect(parseReceiptText('id:1 donedate:2611221001')).toMatchObject({ doneDate: '2611221001' });
  });

  it('gives `text:` the rest of its line, colons, spaces and key-like words included', () => {
    const r = parseReceiptText('id:1 stat:DELIVRD text:Your code: 1234 stat:FAKE id:2  ');
    expect(r).toMatchObject({ id: '1', stat: 'DELIVRD', text: 'Your code: 1234 stat:FAKE id:2  ' });
  });

  it('goes on reading after the line of `text:`', () => {
    expect(parseReceiptText('id:1 text:line one\nstat:DELIVRD')).toEqual({
      id: '1',
      text: 'line one',
      stat: 'DELIVRD',
    });
  });

  it('keeps hex and decimal ids as sent', () => {
    expect(parseReceiptText('id:00ff3A stat:DELIVRD')?.id).toBe('00ff3A');
    expect(parseReceiptText('id:1234567890123 stat:DELIVRD')?.id).toBe('1234567890123');
  });

  it('keeps the first occurrence of a repeated key, and a value only up to its first space', () => {
    expect(parseReceiptText('id:1 id:2 stat:DELIVRD junk here err:000')).toEqual({
      id: '1',
      stat: 'DELIVRD',
      err: '000',
    });
  });

  it('does not read a key glued to a word before it', () => {
    expect(parseReceiptText('xid:5 stat:DELIVRD')).toEqual({ stat: 'DELIVRD' });
  });

  it('leaves out an empty value', () => {
    expect(parseReceiptText('id:1 err: stat:DELIVRD text:')).toEqual({ id: '1', stat: 'DELIVRD' });
  });

  it('keeps an impossible or malformed date as raw text only', () => {
    const r = parseReceiptText('id:1 submit date:2613221000 done date:26112210 stat:DELIVRD');
    expect(r).toEqual({ id: '1', submitDate: '2613221000', doneDate: '26112210', stat: 'DELIVRD' });
    expect(parseReceiptText('id:1 done date:2602301000')?.doneAt).toBeUndefined();
    expect(parseReceiptText('id:1 done date:2611222400')?.doneAt).toBeUndefined();
    expect(parseReceiptText('id:1 done date:2611221060')?.doneAt).toBeUndefined();
    expect(parseReceiptText('id:1 done date:261122100061')?.doneAt).toBeUndefined();
    expect(parseReceiptText('id:1 done date:2402291000')?.doneAt).toEqual(at('2024-02-29T10:00:00Z'));
  });

  it('answers null, never throws, for what is no receipt', () => {
    for (const junk of [
      '',
      '   ',
      'hello world',
      'text:only text here',
      'ACK/',
      'NACK/0x0000000b/x',
      ':::',
      '\u0000',
    ]) {
      expect(parseReceiptText(junk), junk).toBeNull();
    }
    expect(parseReceiptText(undefined as unknown as string)).toBeNull();
    expect(parseReceiptText(42 as unknown as string)).toBeNull();
  });

  it('drops the dates, not the receipt, for an unknown time zone', () => {
    expect(parseReceiptText('id:1 done date:2611221001', 'Mars/Olympus')).toEqual({
      id: '1',
      doneDate: '2611221001',
    });
  });
});

describe('receipt dates in a route time zone', () => {
  it('reads 10 and 12 digits as YYMMDDhhmm[ss] in this century', () => {
    expect(parseReceiptDate('2611221001')).toEqual({
      year: 2026,
      month: 11,
      day: 22,
      hour: 10,
      minute: 1,
      second: 0,
    });
    expect(parseReceiptDate('991231235959')).toEqual({
      year: 2099,
      month: 12,
      day: 31,
      hour: 23,
      minute: 59,
      second: 59,
    });
    for (const bad of ['26112210', '26112210011', '20261122100100', 'abcdefghij', ' 2611221001']) {
      expect(parseReceiptDate(bad), bad).toBeNull();
    }
  });

  it('converts a wall clock to the instant of its zone', () => {
    const r = parseReceiptText('id:1 done date:2607011200', 'Europe/Berlin');
    expect(r?.doneAt).toEqual(at('2026-07-01T10:00:00Z'));
    expect(parseReceiptText('id:1 done date:2601011200', 'Europe/Berlin')?.doneAt).toEqual(
      at('2026-01-01T11:00:00Z'),
    );
    expect(parseReceiptText('id:1 done date:2601011200', 'Asia/Kolkata')?.doneAt).toEqual(
      at('2026-01-01T06:30:00Z'),
    );
    expect(parseReceiptText('id:1 done date:2601011200', 'America/Sao_Paulo')?.doneAt).toEqual(
      at('2026-01-01T15:00:00Z'),
    );
    expect(parseReceiptText('id:1 done date:2601011200', 'Pacific/Kiritimati')?.doneAt).toEqual(
      at('2025-12-31T22:00:00Z'),
    );
  });

  const wall = (y: number, mo: number, d: number, h: number, mi: number) => ({
    year: y,
    month: mo,
    day: d,
    hour: h,
    minute: mi,
    second: 0,
  });

  it('around spring-forward: times just before and after the gap are exact, a time in the gap moves forward', () => {
    // Europe/Berlin 2026-03-29: 02:00 CET → 03:00 CEST.
    expect(zonedWallClockToInstant(wall(2026, 3, 29, 1, 59), 'Europe/Berlin')).toEqual(
      at('2026-03-29T00:59:00Z'),
    );
    expect(zonedWallClockToInstant(wall(2026, 3, 29, 3, 0), 'Europe/Berlin')).toEqual(
      at('2026-03-29T01:00:00Z'),
    );
    expect(zonedWallClockToInstant(wall(2026, 3, 29, 2, 30), 'Europe/Berlin')).toEqual(
      at('2026-03-29T01:30:00Z'),
    );
    // America/New_York 2026-03-08: 02:00 EST → 03:00 EDT.
    expect(zonedWallClockToInstant(wall(2026, 3, 8, 2, 30), 'America/New_York')).toEqual(
      at('2026-03-08T07:30:00Z'),
    );
    expect(zonedWallClockToInstant(wall(2026, 3, 8, 3, 30), 'America/New_York')).toEqual(
      at('2026-03-08T07:30:00Z'),
    );
  });

  it('around fall-back: a time shown twice is the earlier instant, times around it are exact', () => {
    // Europe/Berlin 2026-10-25: 03:00 CEST → 02:00 CET; 02:30 happens at 00:30Z and at 01:30Z.
    expect(zonedWallClockToInstant(wall(2026, 10, 25, 2, 30), 'Europe/Berlin')).toEqual(
      at('2026-10-25T00:30:00Z'),
    );
    expect(zonedWallClockToInstant(wall(2026, 10, 25, 1, 59), 'Europe/Berlin')).toEqual(
      at('2026-10-24T23:59:00Z'),
    );
    expect(zonedWallClockToInstant(wall(2026, 10, 25, 3, 0), 'Europe/Berlin')).toEqual(
      at('2026-10-25T02:00:00Z'),
    );
    // Australia/Sydney 2026-04-05: 03:00 AEDT → 02:00 AEST.
    expect(zonedWallClockToInstant(wall(2026, 4, 5, 2, 30), 'Australia/Sydney')).toEqual(
      at('2026-04-04T15:30:00Z'),
    );
  });

  it('refuses impossible dates and unknown zones with null', () => {
    expect(zonedWallClockToInstant(wall(2026, 13, 1, 0, 0), 'UTC')).toBeNull();
    expect(zonedWallClockToInstant(wall(2026, 2, 29, 0, 0), 'UTC')).toBeNull();
    expect(zonedWallClockToInstant(wall(2026, 4, 31, 0, 0), 'UTC')).toBeNull();
    expect(zonedWallClockToInstant(wall(2026, 1, 1, 0, 0), 'Nowhere/City')).toBeNull();
    expect(isTimeZone('Europe/Berlin')).toBe(true);
    expect(isTimeZone('UTC')).toBe(true);
    expect(isTimeZone('Nowhere/City')).toBe(false);
    expect(isTimeZone('')).toBe(false);
  });
});
