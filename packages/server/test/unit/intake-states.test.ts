import { describe, expect, it } from 'vitest';
import {
  firstMapped,
  stateFromJasmin,
  stateFromKannelType,
  stateFromMessageState,
  stateFromStat,
  UNMAPPED,
} from '../../src/domain/intake/states.js';
import type { DrStatuscode } from '../../src/domain/vocabulary.js';

/** CONTRACT §12's table, one row per drStatuscode, each column as the contract writes it. */
const TABLE: {
  drStatuscode: DrStatuscode;
  messageState: number[];
  stat: string[];
  kannel: number[];
  jasmin: [status: string, level: string][];
}[] = [
  {
    drStatuscode: 'accepted',
    messageState: [1, 6],
    stat: ['ENROUTE', 'ACCEPTD'],
    kannel: [4, 8],
    jasmin: [['ESME_ROK', '1']],
  },
  {
    drStatuscode: 'delivered',
    messageState: [2],
    stat: ['DELIVRD'],
    kannel: [1],
    jasmin: [['DELIVRD', '2']],
  },
  { drStatuscode: 'expired', messageState: [3], stat: ['EXPIRED'], kannel: [], jasmin: [['EXPIRED', '2']] },
  { drStatuscode: 'deleted', messageState: [4], stat: ['DELETED'], kannel: [], jasmin: [['DELETED', '2']] },
  { drStatuscode: 'failed', messageState: [5], stat: ['UNDELIV'], kannel: [2], jasmin: [['UNDELIV', '2']] },
  {
    drStatuscode: 'rejected',
    messageState: [8],
    stat: ['REJECTD'],
    kannel: [16],
    jasmin: [
      ['REJECTD', '2'],
      ['ESME_RINVDSTADR', '1'],
      ['ESME_RTHROTTLED', '1'],
    ],
  },
  { drStatuscode: 'unknown', messageState: [7], stat: ['UNKNOWN'], kannel: [], jasmin: [['UNKNOWN', '2']] },
];

describe('the §12 state table', () => {
  for (const row of TABLE) {
    it(`maps every source's spelling of ${row.drStatuscode}`, () => {
      for (const n of row.messageState) {
        expect(stateFromMessageState(n), `message_state ${n}`).toBe(row.drStatuscode);
        expect(stateFromMessageState(String(n)), `message_state "${n}"`).toBe(row.drStatuscode);
      }
      for (const s of row.stat) {
        expect(stateFromStat(s), `stat ${s}`).toBe(row.drStatuscode);
        expect(stateFromStat(` ${s.toLowerCase()} `), `stat ${s} lower-case`).toBe(row.drStatuscode);
      }
      for (const t of row.kannel) {
        expect(stateFromKannelType(t), `type ${t}`).toBe(row.drStatuscode);
        expect(stateFromKannelType(String(t)), `type "${t}"`).toBe(row.drStatuscode);
      }
      for (const [status, level] of row.jasmin) {
        expect(stateFromJasmin(status, level), `jasmin ${status} level ${level}`).toBe(row.drStatuscode);
        expect(stateFromJasmin(status, Number(level)), `jasmin ${status} level ${level} as a number`).toBe(
          row.drStatuscode,
        );
      }
    });
  }

  it('reads the long message_state names in stat: too', () => {
    expect(stateFromStat('DELIVERED')).toBe('delivered');
    expect(stateFromStat('UNDELIVERABLE')).toBe('failed');
    expect(stateFromStat('ACCEPTED')).toBe('accepted');
    expect(stateFromStat('REJECTED')).toBe('rejected');
  });

  it('answers unmapped for what the table does not know', () => {
    for (const v of [0, 9, -1, 2.5, '', 'two', '0x02', undefined, null, Number.NaN]) {
      expect(stateFromMessageState(v), String(v)).toBe(UNMAPPED);
    }
    for (const v of ['', 'DELIVR', 'OK', 'FAILED', '2', 'constructor', 'toString', undefined, 7]) {
      expect(stateFromStat(v), String(v)).toBe(UNMAPPED);
    }
    for (const v of [0, 3, 9, 32, 34, 24, '1.0', 'x', undefined]) {
      expect(stateFromKannelType(v), String(v)).toBe(UNMAPPED);
    }
    expect(stateFromJasmin('ESME_ROK', '2')).toBe(UNMAPPED);
    expect(stateFromJasmin('ESME_', '1')).toBe(UNMAPPED);
    expect(stateFromJasmin('SENT', '2')).toBe(UNMAPPED);
    expect(stateFromJasmin(undefined, '2')).toBe(UNMAPPED);
  });

  it('infers a missing Jasmin level from the status', () => {
    expect(stateFromJasmin('ESME_ROK')).toBe('accepted');
    expect(stateFromJasmin('ESME_RSYSERR', undefined)).toBe('rejected');
    expect(stateFromJasmin('DELIVRD')).toBe('delivered');
    expect(stateFromJasmin('DELIVRD', '3')).toBe('delivered');
  });

  it('takes the first state that maps, so the text wins over Kannel type', () => {
    expect(firstMapped(stateFromStat('UNDELIV'), stateFromKannelType(1))).toBe('failed');
    expect(firstMapped(stateFromStat(undefined), stateFromKannelType(1))).toBe('delivered');
    expect(firstMapped(stateFromStat('bogus'), stateFromKannelType(99))).toBe(UNMAPPED);
    expect(firstMapped()).toBe(UNMAPPED);
  });
});
