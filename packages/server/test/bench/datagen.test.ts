import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/store/sqlite/migrations.js';

/**
 * bench/lib/datagen.mjs, the bulk generator of the benchmark datasets: a small SQLite dataset passes its own
 * consistency checks (made through the built store, which reopens it), keeps the migrations' schema, and comes
 * with a manifest of exactly the fields the harness reads. The generator imports packages/server/dist, so this
 * needs a build (npm test builds first).
 */

interface Manifest {
  version: number;
  databaseUrl: string;
  pepper: string;
  key: string;
  secret: string;
  recipients: number;
  records: number;
  events: number;
  dlrIds: string[];
  missingIds: string[];
  long: { channel: string; channelUserId: string; messages: number };
  campaign: { id: string; messages: number };
  conversations: { channel: string; channelUserId: string }[];
  generation: { seconds: number; recordsPerSecond: number; bytes: number };
}

interface GenerateOptions {
  databaseUrl: string;
  recipients: number;
  seed?: number;
  longMessages?: number;
  force?: boolean;
  log?: (line: string) => void;
}

// A computed specifier: the module is plain JavaScript outside this package, loaded as it is.
const datagenUrl = new URL('../../../../bench/lib/datagen.mjs', import.meta.url).href;
const { generate } = (await import(datagenUrl)) as {
  generate: (options: GenerateOptions) => Promise<Manifest>;
};

const dir = mkdtempSync(join(tmpdir(), 'waybill-datagen-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const schemaOf = (db: Database.Database) =>
  db
    .prepare<[], { type: string; name: string; sql: string | null }>(
      `SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_stat%' ORDER BY type, name`,
    )
    .all();

describe('bench datagen (SQLite)', () => {
  const file = join(dir, 'datagen.db');
  const lines: string[] = [];
  let manifest: Manifest;

  it('generates 20,000 recipients that pass the consistency checks', async () => {
    manifest = await generate({
      databaseUrl: `sqlite:${file}`,
      recipients: 20_000,
      longMessages: 2000,
      log: (line) => lines.push(line),
    });
    const log = lines.join('\n');
    expect(log).toMatch(/\/dlr: \d+ sampled message ids match/);
    expect(log).toContain('in seq order with no gap');
    expect(log).toContain('long history: 20 pages of ≤100, 2,000 records');
    expect(log).toMatch(/dry-run ingest of \d+ sampled recipients and their receipts: accepted/);
    expect(log).toContain('checks passed');
  });

  it('writes a manifest with exactly the harness fields', () => {
    expect(Object.keys(manifest).sort()).toEqual(
      [
        'version',
        'databaseUrl',
        'pepper',
        'key',
        'secret',
        'recipients',
        'records',
        'events',
        'dlrIds',
        'missingIds',
        'long',
        'campaign',
        'conversations',
        'generation',
        // The dataset's last instant: the review scenario asks for the 30 days before it.
        'end',
      ].sort(),
    );
    expect(JSON.parse(readFileSync(`${file}.manifest.json`, 'utf8'))).toEqual(manifest);
    expect(manifest).toMatchObject({
      version: 6,
      databaseUrl: `sqlite:${file}`,
      pepper: 'bench-pepper-0123456789',
      key: 'BENCHKEY',
      secret: 'BENCHSEC',
      recipients: 20_000,
      // Recipients, 2% inbound SMS, 10% WhatsApp, the long history.
      records: 20_000 + 400 + 2000 + 2000,
      long: { channel: 'WHATSAPP', messages: 2000 },
    });
    expect(manifest.events).toBeGreaterThan(0.85 * 20_000);
    expect(manifest.dlrIds).toHaveLength(10_000);
    expect(new Set(manifest.dlrIds).size).toBe(10_000);
    expect(manifest.missingIds).toHaveLength(1000);
    const existing = new Set(manifest.dlrIds);
    for (const id of [...manifest.dlrIds.slice(0, 100), ...manifest.missingIds]) {
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    }
    expect(manifest.missingIds.some((id) => existing.has(id))).toBe(false);
    expect(manifest.campaign.messages).toBeGreaterThan(0);
    expect(manifest.conversations).toHaveLength(1000);
    for (const c of manifest.conversations) {
      expect(['SMS', 'WHATSAPP']).toContain(c.channel);
      expect(c.channelUserId).toMatch(/^[1-9][0-9]{5,14}$/);
    }
    expect(manifest.generation.seconds).toBeGreaterThan(0);
    expect(manifest.generation.recordsPerSecond).toBeGreaterThan(0);
    expect(manifest.generation.bytes).toBe(statSync(file).size);
  });

  it('leaves the schema the migrations make, in WAL mode, with every key and reference intact', () => {
    const fresh = new Database(':memory:');
    migrate(fresh);
    const db = new Database(file, { readonly: true });
    try {
      expect(schemaOf(db)).toEqual(schemaOf(fresh));
      expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
      expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
      expect(db.pragma('foreign_key_check')).toEqual([]);
      const account = db
        .prepare<[], { id: string; last_message_seq: number; last_event_seq: number }>(
          `SELECT id, last_message_seq, last_event_seq FROM accounts WHERE key = 'BENCHKEY'`,
        )
        .get();
      const counts = db
        .prepare<
          [{ account: string }],
          { records: number; maxSeq: number; events: number; maxEvent: number }
        >(
          `WITH r AS (SELECT ref FROM account_refs WHERE id = @account)
           SELECT (SELECT count(*) FROM messages WHERE account_id = (SELECT ref FROM r)) AS records,
                  (SELECT max(seq) FROM messages WHERE account_id = (SELECT ref FROM r)) AS maxSeq,
                  (SELECT count(*) FROM receipt_events WHERE account_id = (SELECT ref FROM r)) AS events,
                  (SELECT max(seq) FROM receipt_events WHERE account_id = (SELECT ref FROM r)) AS maxEvent`,
        )
        .get({ account: account?.id ?? '' });
      expect(counts).toEqual({
        records: manifest.records,
        maxSeq: manifest.records,
        events: manifest.events,
        maxEvent: manifest.events,
      });
      expect(account).toMatchObject({ last_message_seq: manifest.records, last_event_seq: manifest.events });
    } finally {
      db.close();
      fresh.close();
    }
  });

  it('refuses a database that already holds the bench account, unless forced', async () => {
    await expect(
      generate({ databaseUrl: `sqlite:${file}`, recipients: 100, longMessages: 10, log: () => {} }),
    ).rejects.toThrow(/already holds the bench account/);
  });

  it('makes the same data for the same seed, and other data for another', async () => {
    const run = (name: string, seed: number) =>
      generate({
        databaseUrl: `sqlite:${join(dir, name)}`,
        recipients: 2000,
        longMessages: 100,
        seed,
        log: () => {},
      });
    const [a, b, c] = [await run('a.db', 7), await run('b.db', 7), await run('c.db', 8)];
    expect(b.dlrIds).toEqual(a.dlrIds);
    expect(b.conversations).toEqual(a.conversations);
    expect(b.events).toBe(a.events);
    expect(c.dlrIds).not.toEqual(a.dlrIds);
  });
});
