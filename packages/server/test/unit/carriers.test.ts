import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { isCarrierMessageId, isRouteName } from '../../src/domain/formats.js';
import {
  type CarrierReceiptState,
  carrierReceiptFingerprint,
  planCarrierReceipts,
} from '../../src/domain/ingest/plan-carrier-receipts.js';
import {
  type CarrierClaim,
  type MessageBatchState,
  planMessages,
} from '../../src/domain/ingest/plan-messages.js';
import type { CarrierReceiptInput, MessageUpsert } from '../../src/domain/ingest/precedence.js';
import { MIGRATIONS, migrate } from '../../src/store/sqlite/migrations.js';
import { prepareParked, readParked } from '../../src/store/sqlite/parked.js';
import { batchState } from '../conformance/fixtures.js';

const NOW = new Date('2026-11-22T10:00:00.000Z');
const A = '0190a5d4-7e2b-7c3d-8e4f-000000000001';
const B = '0190a5d4-7e2b-7c3d-8e4f-000000000002';

const empty = (accountId = A, carriers: CarrierClaim[] = []): MessageBatchState =>
  batchState(accountId, { carriers });

const sent = (id: string, to: string, carrierId: string, route = 'smsc-1'): MessageUpsert => ({
  id,
  channel: 'SMS',
  channelUserId: to,
  createdAt: NOW,
  sms: { carrier: { route, messageId: carrierId } },
});

const claim = (accountId: string, messageId: string, to: string, carrierId: string): CarrierClaim => ({
  route: 'smsc-1',
  carrierId,
  accountId,
  messageId,
  to,
});

const dr = (carrierId: string): CarrierReceiptInput => ({
  carrierId,
  drStatuscode: 'delivered',
  drErrcode: '0',
  drTime: NOW,
});

describe('carrier formats', () => {
  it('takes route names of 1-32 of a-z 0-9 -', () => {
    expect(['a', 'smsc-1', 'x'.repeat(32)].every(isRouteName)).toBe(true);
    expect(['', 'SMSC', 'smsc_1', 'x'.repeat(33), 'é'].some(isRouteName)).toBe(false);
  });

  it('takes carrier ids of 1-64 printable ASCII characters', () => {
    expect(['1', 'A1 b/2~', ' ', 'x'.repeat(64)].every(isCarrierMessageId)).toBe(true);
    expect(['', 'x'.repeat(65), 'a\tb', 'a\u007fb', 'é'].some(isCarrierMessageId)).toBe(false);
  });
});

describe('planMessages: carrier pairs', () => {
  it('claims new pairs, with their record’s createdAt', () => {
    const planned = planMessages(empty(), [sent('m-1', '447700900001', 'c-1')], NOW);
    expect(planned.ok && planned.plan.carriers).toStrictEqual({
      release: [],
      claim: [{ ...claim(A, 'm-1', '447700900001', 'c-1'), createdAt: NOW }],
    });
  });

  it('writes nothing for a pair the recipient already holds', () => {
    const state = empty(A, [claim(A, 'm-1', '447700900001', 'c-1')]);
    const planned = planMessages(state, [sent('m-1', '447700900001', 'c-1')], NOW);
    expect(planned.ok && planned.plan.carriers).toStrictEqual({ release: [], claim: [] });
  });

  it('refuses a pair of another recipient, and names it only within the account', () => {
    const mine = planMessages(
      empty(A, [claim(A, 'm-1', '447700900001', 'c-1')]),
      [sent('m-2', '447700900002', 'c-1')],
      NOW,
    );
    expect(mine).toStrictEqual({
      ok: false,
      errors: [
        {
          index: 0,
          param: 'sms.carrier',
          detail: 'carrier id "c-1" on route smsc-1 already belongs to message m-1 to 447700900001',
        },
      ],
    });
    const theirs = planMessages(
      empty(A, [claim(B, 'm-1', '447700900001', 'c-1')]),
      [sent('m-1', '447700900001', 'c-1')],
      NOW,
    );
    expect(theirs.ok === false && theirs.errors[0]?.detail).toBe(
      'carrier id "c-1" on route smsc-1 already belongs to a recipient of another account',
    );
  });

  it('releases a replaced pair before another recipient of the batch claims it', () => {
    const state = empty(A, [claim(A, 'm-1', '447700900001', 'c-1')]);
    const planned = planMessages(
      state,
      [sent('m-1', '447700900001', 'c-2'), sent('m-2', '447700900002', 'c-1')],
      NOW,
    );
    expect(planned.ok && planned.plan.carriers).toStrictEqual({
      release: [{ route: 'smsc-1', carrierId: 'c-1' }],
      claim: [
        { ...claim(A, 'm-1', '447700900001', 'c-2'), createdAt: NOW },
        { ...claim(A, 'm-2', '447700900002', 'c-1'), createdAt: NOW },
      ],
    });
  });

  it('gives up the pair of a recipient re-sent as inbound', () => {
    const state = empty(A, [claim(A, 'm-1', '447700900001', 'c-1')]);
    const planned = planMessages(
      state,
      [{ id: 'm-1', channel: 'SMS', channelUserId: '447700900001', direction: 'inbound' }],
      NOW,
    );
    expect(planned.ok && planned.plan.carriers).toStrictEqual({
      release: [{ route: 'smsc-1', carrierId: 'c-1' }],
      claim: [],
    });
  });
});

describe('planCarrierReceipts', () => {
  const state: CarrierReceiptState = {
    holders: new Map([['c-1', { accountId: A, messageId: 'm-1', to: '447700900001' }]]),
    accounts: new Map(),
  };

  it('parks what no recipient holds, once per receipt', () => {
    const plan = planCarrierReceipts(state, 'smsc-1', [dr('c-9'), dr('c-9')], null, NOW);
    expect(plan.results).toStrictEqual([{ outcome: 'parked' }, { outcome: 'parked' }]);
    expect(plan.park).toStrictEqual([dr('c-9')]);
    expect(plan.accounts.size).toBe(0);
  });

  it('refuses a recipient of an account the route may not touch, and writes nothing for it', () => {
    const plan = planCarrierReceipts(state, 'smsc-1', [dr('c-1')], [B], NOW);
    expect(plan.results).toStrictEqual([{ outcome: 'forbidden' }]);
    expect(plan.accounts.size).toBe(0);
    expect(plan.park).toStrictEqual([]);
  });

  it('tells the same receipt on two routes apart', () => {
    expect(carrierReceiptFingerprint('a', dr('c-1'))).not.toBe(carrierReceiptFingerprint('b', dr('c-1')));
  });
});

describe('SQLite migration 5', () => {
  it('keeps the receipts parked before it, with their refs', () => {
    const db = new Database(':memory:');
    db.exec(`CREATE TABLE schema_migrations (version INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL,
      applied_at INTEGER NOT NULL) STRICT`);
    for (const m of MIGRATIONS.filter((m) => m.version <= 3)) {
      db.exec(m.sql);
      db.prepare('INSERT INTO schema_migrations VALUES (?, ?, 0)').run(m.version, m.name);
    }
    const receipt = JSON.stringify({
      messageId: 'm-1',
      drStatuscode: 'delivered',
      drErrcode: '0',
      drTime: 1,
    });
    // Its account: migration 9 carries over the rows of accounts that exist.
    db.prepare(
      `INSERT INTO accounts (id, name, key, secret_hash, callback_secret, ip_whitelist, dlr_query_enabled,
         balance, credit_limit, created_at)
       VALUES (?, 'Acme', 'KEY', x'00', 'whsec', '[]', 1, 0, 0, 0)`,
    ).run(A);
    db.prepare(
      `INSERT INTO parked_receipts (ref, account_id, message_id, fingerprint, receipt, parked_at)
       VALUES (7, ?, 'm-1', 'f', ?, 5)`,
    ).run(A, receipt);
    expect(migrate(db).map((m) => m.version)).toStrictEqual(
      MIGRATIONS.filter((m) => m.version > 3).map((m) => m.version),
    );
    expect(readParked(prepareParked(db), A, ['m-1'], 0)).toStrictEqual([
      {
        ref: 7,
        receipt: { messageId: 'm-1', drStatuscode: 'delivered', drErrcode: '0', drTime: new Date(1) },
        parkedAt: new Date(5),
      },
    ]);
    db.close();
  });
});
