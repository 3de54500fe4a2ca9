import Database from 'better-sqlite3';
import type { IntakeRouteRecord, RouteKind, SmppSettings } from '../../domain/intake/route.js';
import { DuplicateKeyError, type GarbledIntake, type IntakeRouteStore } from '../store.js';

interface RouteRow {
  name: string;
  kind: string;
  accounts: string;
  timezone: string;
  error_map: string;
  enabled: number;
  smpp: string | null;
  smpp_password: string | null;
  token: string | null;
  token_digest: Buffer | null;
  created_at: number;
}

const COLUMNS =
  'name, kind, accounts, timezone, error_map, enabled, smpp, smpp_password, token, token_digest, created_at';

const fromRow = (row: RouteRow): IntakeRouteRecord => ({
  name: row.name,
  kind: row.kind as RouteKind,
  accounts: JSON.parse(row.accounts) as string[],
  timezone: row.timezone,
  errorMap: JSON.parse(row.error_map) as Record<string, string>,
  enabled: row.enabled === 1,
  createdAt: new Date(row.created_at),
  smpp: row.smpp === null ? null : (JSON.parse(row.smpp) as SmppSettings),
  sealedPassword: row.smpp_password,
  sealedToken: row.token,
  tokenDigest: row.token_digest,
});

const toRow = (route: IntakeRouteRecord): RouteRow => ({
  name: route.name,
  kind: route.kind,
  accounts: JSON.stringify(route.accounts),
  timezone: route.timezone,
  error_map: JSON.stringify(route.errorMap),
  enabled: route.enabled ? 1 : 0,
  smpp: route.smpp === null ? null : JSON.stringify(route.smpp),
  smpp_password: route.sealedPassword,
  token: route.sealedToken,
  token_digest: route.tokenDigest,
  created_at: route.createdAt.getTime(),
});

/** The store calls of intake routes (the table of migration 4). */
export function intakeRouteCalls(db: Database.Database): IntakeRouteStore {
  const insert = db.prepare<[RouteRow]>(
    `INSERT INTO intake_routes (${COLUMNS}) VALUES (@name, @kind, @accounts, @timezone, @error_map, @enabled,
       @smpp, @smpp_password, @token, @token_digest, @created_at)`,
  );
  const all = db.prepare<[], RouteRow>(`SELECT ${COLUMNS} FROM intake_routes ORDER BY name`);
  const byName = db.prepare<[string], RouteRow>(`SELECT ${COLUMNS} FROM intake_routes WHERE name = ?`);
  const byDigest = db.prepare<[Buffer], RouteRow>(
    `SELECT ${COLUMNS} FROM intake_routes WHERE token_digest = ?`,
  );
  const update = db.prepare<[RouteRow]>(
    `UPDATE intake_routes SET accounts = @accounts, timezone = @timezone, error_map = @error_map,
       enabled = @enabled, smpp = @smpp, smpp_password = @smpp_password
     WHERE name = @name`,
  );
  const setToken = db.prepare<[string, Buffer, string]>(
    'UPDATE intake_routes SET token = ?, token_digest = ? WHERE name = ?',
  );
  const removeRoute = db.prepare<[string]>('DELETE FROM intake_routes WHERE name = ?');
  const removeGarbled = db.prepare<[string]>('DELETE FROM intake_garbled WHERE route = ?');
  const remove = db.transaction((name: string) => {
    removeGarbled.run(name);
    return removeRoute.run(name).changes > 0;
  });
  const insertGarbled = db.prepare<[string, number, string, string | null]>(
    'INSERT INTO intake_garbled (route, at, text, pdu) VALUES (?, ?, ?, ?)',
  );
  const trimGarbled = db.prepare<{ route: string; keep: number }>(
    `DELETE FROM intake_garbled WHERE route = @route AND id <= (
       SELECT id FROM intake_garbled WHERE route = @route ORDER BY id DESC LIMIT 1 OFFSET @keep)`,
  );
  const record = db.transaction((route: string, entry: GarbledIntake, keep: number) => {
    insertGarbled.run(route, entry.at.getTime(), entry.text, entry.pdu);
    trimGarbled.run({ route, keep });
  });
  const garbled = db.prepare<[string, number], { at: number; text: string; pdu: string | null }>(
    'SELECT at, text, pdu FROM intake_garbled WHERE route = ? ORDER BY id DESC LIMIT ?',
  );
  return {
    async insertIntakeRoute(route) {
      try {
        insert.run(toRow(route));
      } catch (error) {
        if (
          error instanceof Database.SqliteError &&
          /^SQLITE_CONSTRAINT_(PRIMARYKEY|UNIQUE)$/.test(error.code) &&
          error.message.includes('intake_routes.name')
        ) {
          throw new DuplicateKeyError(`route name ${route.name} is taken`);
        }
        throw error;
      }
    },
    async listIntakeRoutes() {
      return all.all().map(fromRow);
    },
    async getIntakeRoute(name) {
      const row = byName.get(name);
      return row ? fromRow(row) : null;
    },
    async updateIntakeRoute(route) {
      return update.run(toRow(route)).changes > 0;
    },
    async setIntakeRouteToken(name, sealedToken, tokenDigest) {
      return setToken.run(sealedToken, tokenDigest, name).changes > 0;
    },
    async deleteIntakeRoute(name) {
      return remove.immediate(name);
    },
    async recordGarbledIntake(route, entry, keep) {
      record.immediate(route, entry, keep);
    },
    async listGarbledIntake(route, limit) {
      return garbled.all(route, limit).map((row) => ({ at: new Date(row.at), text: row.text, pdu: row.pdu }));
    },
    async intakeRouteByTokenDigest(digest) {
      const row = byDigest.get(digest);
      return row ? fromRow(row) : null;
    },
  };
}
