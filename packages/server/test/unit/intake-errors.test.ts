import { describe, expect, it } from 'vitest';
import {
  carrierErrorFromCommandStatus,
  carrierErrorFromText,
  carrierErrorFromTlv,
  decodeNetworkErrorCode,
  GSM_MAP_ERRORS,
  mapCarrierError,
  readErrorNumber,
  SMPP_STATUS_ERRORS,
} from '../../src/domain/intake/errors.js';
import { DR_ERRCODES, DR_STATUSCODES } from '../../src/domain/vocabulary.js';

describe('reading carrier error numbers', () => {
  it('reads decimal with leading zeros, and hex when it says so', () => {
    expect(readErrorNumber('000')).toBe(0);
    expect(readErrorNumber('001')).toBe(1);
    expect(readErrorNumber(' 027 ')).toBe(27);
    expect(readErrorNumber('0x1B')).toBe(27);
    expect(readErrorNumber('0x0000000b')).toBe(11);
    expect(readErrorNumber('1b')).toBe(27);
    expect(readErrorNumber('')).toBeNull();
    expect(readErrorNumber('-1')).toBeNull();
    expect(readErrorNumber('ESME_RINVDSTADR')).toBeNull();
    expect(readErrorNumber('1.5')).toBeNull();
  });
});

describe('TLV network_error_code (0x0423)', () => {
  it('decodes the network type and the 2-byte big-endian code', () => {
    expect(decodeNetworkErrorCode(Uint8Array.of(3, 0, 27))).toEqual({ networkType: 3, code: 27 });
    expect(decodeNetworkErrorCode(Uint8Array.of(8, 0x01, 0x02))).toEqual({ networkType: 8, code: 258 });
    expect(decodeNetworkErrorCode('03001b')).toEqual({ networkType: 3, code: 27 });
    expect(decodeNetworkErrorCode('0x07000B')).toEqual({ networkType: 7, code: 11 });
  });

  it('refuses any other length or shape', () => {
    expect(decodeNetworkErrorCode(Uint8Array.of(3, 0))).toBeNull();
    expect(decodeNetworkErrorCode(Uint8Array.of(3, 0, 1, 2))).toBeNull();
    expect(decodeNetworkErrorCode('03001')).toBeNull();
    expect(decodeNetworkErrorCode('zz001b')).toBeNull();
  });

  it('reads GSM codes as MAP causes, SMPP errors as command statuses, others with no default', () => {
    expect(carrierErrorFromTlv(Uint8Array.of(3, 0, 1))).toEqual({ raw: '1', code: 1, family: 'gsm-map' });
    expect(carrierErrorFromTlv(Uint8Array.of(7, 0, 11))).toEqual({
      raw: '11',
      code: 11,
      family: 'smpp-status',
    });
    expect(carrierErrorFromTlv(Uint8Array.of(6, 0, 1))).toEqual({ raw: '1', code: 1, family: 'other' });
    expect(carrierErrorFromTlv(undefined)).toBeNull();
    expect(mapCarrierError(carrierErrorFromTlv(Uint8Array.of(3, 0, 27)), 'failed')).toBe('2');
    expect(mapCarrierError(carrierErrorFromTlv(Uint8Array.of(7, 0, 11)), 'rejected')).toBe('3');
    expect(mapCarrierError(carrierErrorFromTlv(Uint8Array.of(6, 0, 1)), 'failed')).toBe('99');
  });
});

describe('the default error table', () => {
  it('maps the common GSM MAP causes as documented', () => {
    const expected: Record<number, string> = {
      1: '3',
      5: '3',
      6: '2',
      8: '5',
      9: '5',
      11: '5',
      12: '5',
      13: '5',
      21: '5',
      27: '2',
      31: '2',
      32: '2',
      33: '2',
      34: '99',
      35: '99',
      36: '99',
      44: '3',
    };
    for (const [cause, code] of Object.entries(expected)) {
      expect(mapCarrierError(carrierErrorFromText(cause.padStart(3, '0')), 'failed'), `MAP ${cause}`).toBe(
        code,
      );
    }
    expect(Object.keys(GSM_MAP_ERRORS).sort()).toEqual(Object.keys(expected).sort());
  });

  it('names only spec codes', () => {
    for (const table of [GSM_MAP_ERRORS, SMPP_STATUS_ERRORS]) {
      for (const { drErrcode } of Object.values(table)) expect(Object.keys(DR_ERRCODES)).toContain(drErrcode);
    }
  });

  it('maps SMPP command statuses by name or number', () => {
    expect(mapCarrierError(carrierErrorFromCommandStatus('ESME_RINVDSTADR'), 'rejected')).toBe('3');
    expect(mapCarrierError(carrierErrorFromCommandStatus('esme_rinvsrcadr'), 'rejected')).toBe('10');
    expect(mapCarrierError(carrierErrorFromCommandStatus('0x0000000b'), 'rejected')).toBe('3');
    expect(mapCarrierError(carrierErrorFromCommandStatus('ESME_RTHROTTLED'), 'rejected')).toBe('99');
    expect(carrierErrorFromCommandStatus('')).toBeNull();
  });

  it('falls back to "0" for delivered/accepted and "99" for the rest', () => {
    for (const state of DR_STATUSCODES) {
      const fallback = state === 'delivered' || state === 'accepted' ? '0' : '99';
      expect(mapCarrierError(null, state), state).toBe(fallback);
      expect(mapCarrierError(carrierErrorFromText('000'), state), `${state} err 000`).toBe(fallback);
      expect(mapCarrierError(carrierErrorFromText('999'), state), `${state} err 999`).toBe(fallback);
      expect(mapCarrierError(carrierErrorFromText('garbage!'), state), `${state} err garbage`).toBe(fallback);
    }
  });

  it('does not read a failure cause into a delivered or accepted receipt', () => {
    expect(mapCarrierError(carrierErrorFromText('001'), 'delivered')).toBe('0');
    expect(mapCarrierError(carrierErrorFromText('027'), 'accepted')).toBe('0');
  });
});

describe("a route's errorMap", () => {
  it('wins over the default table, for any state', () => {
    const errorMap = { '027': '8', '001': '4' };
    expect(mapCarrierError(carrierErrorFromText('027'), 'failed', errorMap)).toBe('8');
    expect(mapCarrierError(carrierErrorFromText('001'), 'delivered', errorMap)).toBe('4');
    expect(mapCarrierError(carrierErrorFromText('013'), 'failed', errorMap)).toBe('5');
  });

  it('matches the key as sent, then any key naming the same number', () => {
    expect(mapCarrierError(carrierErrorFromText('1'), 'failed', { '001': '4' })).toBe('4');
    expect(mapCarrierError(carrierErrorFromText('0x1b'), 'failed', { '27': '6' })).toBe('6');
    expect(mapCarrierError(carrierErrorFromText('00B'), 'failed', { '00b': '7', '11': '6' })).toBe('7');
    expect(mapCarrierError(carrierErrorFromTlv('030022'), 'failed', { '034': '6' })).toBe('6');
    expect(mapCarrierError(carrierErrorFromText('X12'), 'failed', { x12: '12' })).toBe('12');
    expect(
      mapCarrierError(carrierErrorFromCommandStatus('ESME_RINVDSTADR'), 'rejected', {
        ESME_RINVDSTADR: '12',
      }),
    ).toBe('12');
  });

  it('matches an SMPP command status by its name or a 0x key, never by a bare decimal', () => {
    const status = carrierErrorFromCommandStatus('ESME_RINVDSTADR');
    expect(mapCarrierError(status, 'rejected', { '11': '8' })).toBe('3');
    expect(mapCarrierError(status, 'rejected', { '0x0000000B': '8' })).toBe('8');
    expect(
      mapCarrierError(carrierErrorFromCommandStatus('0x0000000b'), 'rejected', { esme_rinvdstadr: '12' }),
    ).toBe('12');
  });

  it('skips entries whose value is not a spec code', () => {
    expect(mapCarrierError(carrierErrorFromText('027'), 'failed', { '027': '9' })).toBe('2');
    expect(mapCarrierError(carrierErrorFromText('027'), 'failed', { '027': 'absent' })).toBe('2');
    expect(mapCarrierError(carrierErrorFromText('027'), 'failed', { '027': ' 8 ' })).toBe('8');
  });
});
