import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { migrate } from '../../src/store/sqlite/migrations.js';
import { prepareStatements } from '../../src/store/sqlite/store.js';

/**
 * Every statement the SQLite store prepares, with the plan SQLite chooses for it. No hot statement may read
 * a table by account alone: the account holds all of its rows, so such a plan costs as much as the account
 * is big. (identitiesOfContact had one, and a 100,000-record seed ran at 235 records/s.)
 */
function plans(): Map<string, string> {
  const db = new Database(':memory:');
  migrate(db);
  const found = new Map<string, string>();
  const walk = (value: unknown, name: string) => {
    if (
      value !== null &&
      typeof value === 'object' &&
      'source' in value &&
      typeof value.source === 'string'
    ) {
      const source = value.source;
      if (!/^\s*(SELECT|UPDATE|DELETE|WITH|INSERT)/i.test(source)) return;
      const named = [...source.matchAll(/@(\w+)/g)].map((m) => m[1] as string);
      const positional = (source.match(/\?/g) ?? []).length;
      const explain = db.prepare(`EXPLAIN QUERY PLAN ${source}`);
      const rows = (
        named.length > 0
          ? explain.all(Object.fromEntries(named.map((k) => [k, 'x'])))
          : explain.all(...Array<string>(positional).fill('x'))
      ) as { detail: string }[];
      found.set(name, rows.map((r) => r.detail).join(' | '));
    } else if (value !== null && typeof value === 'object') {
      for (const [key, inner] of Object.entries(value)) walk(inner, name ? `${name}.${key}` : key);
    }
  };
  walk(prepareStatements(db), '');
  db.close();
  return found;
}

// Statements that are meant to touch all of an account's rows, or all rows: deleting an account, the start-up
// statements, the relay's walks of the due index (nextDue; earliestPending, LIMIT 64 per account, in index
// order), the /metrics gauges (counts over the partial pending, dead and parked indexes), the operator's
// "redeliver every dead delivery" (the partial dead index) and backfill (one pass over the account's events,
// which have no index by time). Creating an account looks up the new account's console sessions (the foreign
// key's bookkeeping, shown once the account_refs trigger is in the plan): a new account has none. Retention
// and its rollup walk every conversation once, searching each one's expired range of the history index (and
// the expired records' events by their index by record, and those events' deliveries and attempts by seq).
const WHOLE_ACCOUNT =
  /^(accounts\.(insertAccount|deleteAccountData\.\d+|deleteAccountRow|anyAccount|clearCallbackSecrets)|outbox\.(nextDue|earliestPending|deadRows|backfillRows|stats|prune(Attempts|Deliveries|Events))|prune\.messages|rollup\.prune(Counts|Latency))$/;

describe('SQLite query plans', () => {
  const all = plans();

  it('finds the statements', () => {
    expect(all.size).toBeGreaterThan(40);
    expect(all.has('messages.identitiesOfContacts')).toBe(true);
    expect(all.has('queries.dlrItems')).toBe(true);
  });

  it('never scans a table that grows with the data', () => {
    const scans = [...all].filter(
      ([name, plan]) =>
        !WHOLE_ACCOUNT.test(name) &&
        /\bSCAN (messages|identities|conversations|contacts|receipt_events|deliveries|delivery_attempts|parked_receipts|carrier_ids)\b/.test(
          plan,
        ),
    );
    expect(scans).toEqual([]);
  });

  it('never searches a table by the account alone', () => {
    const wide = [...all].filter(
      ([name, plan]) => !WHOLE_ACCOUNT.test(name) && /SEARCH \w+ USING [^(]*\(account_id=\?\)/.test(plan),
    );
    expect(wide).toEqual([]);
  });

  it('finds carrier pairs by the pair, and a recipient’s pair by the recipient', () => {
    for (const name of ['records.carriersOfPairs', 'records.holdersOnRoute', 'records.releaseCarrier']) {
      expect(all.get(name)).toMatch(/carrier_ids USING PRIMARY KEY \(route=\? AND carrier_id=\?\)/);
    }
    expect(all.get('records.carriersOfRecords')).toMatch(
      /\(account_id=\? AND message_id=\? AND channel_user_id=\?\)/,
    );
    expect(all.get('parked.parkedOfPairs')).toMatch(/parked_receipts_carrier \(route=\? AND carrier_id=\?\)/);
    expect(all.get('prune.carriers')).toMatch(/carrier_ids_prune \(created_at<\?\)/);
  });

  it('reads a contact’s identities through the (account, contact) index', () => {
    expect(all.get('messages.identitiesOfContacts')).toMatch(/\(account_id=\? AND contact_id=\?\)/);
  });

  it('supersedes deliveries through the record index, by the refs the batch holds', () => {
    const plan = all.get('events.supersede');
    expect(plan).toMatch(/deliveries_record \(account_id=\? AND message_ref=\?\)/);
    expect(plan).not.toMatch(/messages/);
  });

  // Events and deliveries are WITHOUT ROWID: their primary key (account, seq) is the table, and a planner left
  // to itself walks it in seq order rather than search the narrower index.
  it('lists a state’s deliveries, a message’s events and a recipient’s leases through their own indexes', () => {
    expect(all.get('outbox.listByState')).toMatch(
      /deliveries_state \(account_id=\? AND state=\? AND seq<\?\)/,
    );
    expect(all.get('outbox.messageEvents')).toMatch(
      /SEARCH m USING (COVERING )?INDEX sqlite_autoindex_messages_1 \(account_id=\? AND id=\?\).*SEARCH e USING INDEX receipt_events_message \(account_id=\? AND message_ref=\?\)/,
    );
    // The feed walks the events in seq order and finds each one's record by its ref (record-refs.ts).
    expect(all.get('outbox.events')).toMatch(
      /^SEARCH e USING PRIMARY KEY \(account_id=\? AND seq>\?\).*SEARCH m USING INTEGER PRIMARY KEY \(rowid=\?\)$/,
    );
    expect(all.get('outbox.candidates')).toMatch(
      /SEARCH b USING (COVERING )?INDEX deliveries_record \(account_id=\? AND message_ref=\?\)/,
    );
    expect(all.get('outbox.messageDeliveries')).toMatch(
      /SEARCH m USING (COVERING )?INDEX sqlite_autoindex_messages_1 \(account_id=\? AND id=\?\).*SEARCH d USING INDEX deliveries_record \(account_id=\? AND message_ref=\?\)/,
    );
  });

  // A page is one range of its keyset index, in order: no sort. A contact's page reads no other table (its
  // conversation's ids are bound); a campaign's joins each record's conversation by its ref.
  it('reads a history page as one index range, without sorting', () => {
    for (const kind of ['conversation', 'conversationCampaign', 'campaign', 'campaignChannel']) {
      for (const step of ['first', 'next']) {
        const plan = all.get(`queries.history.${kind}.${step}`);
        expect(plan).toMatch(
          /^SEARCH m USING INDEX messages_(history|campaign|conversation_campaign) \(account_id=\?/,
        );
        expect(plan).not.toMatch(/TEMP B-TREE/);
        if (kind.startsWith('conversation')) expect(plan).not.toMatch(/SEARCH c /);
        else expect(plan).toMatch(/SEARCH c USING INTEGER PRIMARY KEY \(rowid=\?\)$/);
      }
    }
    // A conversation's indexes end at created_at (migration 11): the page after a cursor is a range of it, and
    // the records of the page's last millisecond are one probe.
    expect(all.get('queries.history.conversation.next')).toMatch(
      /messages_history \(account_id=\? AND conversation_ref=\? AND created_at<\?\)/,
    );
    for (const kind of ['conversation', 'conversationCampaign']) {
      for (const step of ['firstTie', 'nextTie']) {
        expect(all.get(`queries.history.${kind}.${step}`)).toMatch(
          /^SEARCH m USING INDEX messages_(history|conversation_campaign) \(account_id=\? AND conversation_ref=\? AND (campaign_id=\? AND )?created_at=\?\)/,
        );
      }
    }
  });

  it('reads the review rollup by account and day range, and prunes it and the events through the history index', () => {
    expect(all.get('rollup.counts')).toMatch(
      /review_counts USING PRIMARY KEY \(account_id=\? AND day>\? AND day<\?\)/,
    );
    expect(all.get('rollup.latency')).toMatch(
      /review_latency USING PRIMARY KEY \(account_id=\? AND day>\? AND day<\?\)/,
    );
    for (const name of [
      'rollup.pruneCounts',
      'rollup.pruneLatency',
      'prune.messages',
      'outbox.pruneEvents',
    ]) {
      expect(all.get(name)).toMatch(
        /messages USING (COVERING )?INDEX messages_history \(account_id=\? AND conversation_ref=\? AND created_at<\?\)/,
      );
    }
    expect(all.get('outbox.pruneEvents')).toMatch(
      /^SEARCH receipt_events USING INDEX receipt_events_message \(account_id=\? AND message_ref=\?\)/,
    );
    for (const [name, table] of [
      ['outbox.pruneDeliveries', 'deliveries'],
      ['outbox.pruneAttempts', 'delivery_attempts'],
    ] as const) {
      expect(all.get(name)).toMatch(
        new RegExp(
          `^SEARCH ${table} USING PRIMARY KEY \\(account_id=\\? AND seq=\\?\\).*SEARCH e USING (COVERING )?INDEX receipt_events_message \\(account_id=\\? AND message_ref=\\?\\).*messages_history \\(account_id=\\? AND conversation_ref=\\? AND created_at<\\?\\)`,
        ),
      );
    }
  });
});
