import type pg from 'pg';
import type { IntakeRouteRecord, RouteKind, SmppSettings } from '../../domain/intake/route.js';
import { DuplicateKeyError, type IntakeRouteStore } from '../store.js';
import { isUniqueViolation } from './pool.js';

interface RouteRow {
  name: string;
  kind: string;
  accounts: string[];
  timezone: string;
  error_map: Record<string, string>;
  enabled: boolean;
  smpp: SmppSettings | null;
  smpp_password: string | null;
  token: string | null;
  token_digest: Buffer | null;
  created_at: Date;
}

const COLUMNS =
  'name, kind, accounts, timezone, error_map, enabled, smpp, smpp_password, token, token_digest, created_at';

const fromRow = (row: RouteRow): IntakeRouteRecord => ({
  name: row.name,
  kind: row.kind as RouteKind,
  accounts: row.accounts,
  timezone: row.timezone,
  errorMap: row.error_map,
  enabled: row.enabled,
  createdAt: row.created_at,
  smpp: row.smpp,
  sealedPassword: row.smpp_password,
  sealedToken: row.token,
  tokenDigest: row.token_digest,
});

/** Every column, in the order of {@link COLUMNS}. */
const values = (route: IntakeRouteRecord) => [
  route.name,
  route.kind,
  JSON.stringify(route.accounts),
  route.timezone,
  JSON.stringify(route.errorMap),
  route.enabled,
  route.smpp === null ? null : JSON.stringify(route.smpp),
  route.sealedPassword,
  route.sealedToken,
  route.tokenDigest,
  route.createdAt.toISOString(),
];

/** The store calls of intake routes (the table of migration 4). */
export function intakeRouteCalls(pool: pg.Pool): IntakeRouteStore {
  const one = async (name: string, text: string, params: unknown[]) => {
    const row = (await pool.query<RouteRow>({ name, text, values: params })).rows[0];
    return row ? fromRow(row) : null;
  };
  return {
    async insertIntakeRoute(route) {
      try {
        await pool.query({
          name: 'wb_insert_intake_route',
          text: `INSERT INTO intake_routes (${COLUMNS})
                 VALUES ($1, $2, $3::jsonb, $4, $5::jsonb, $6, $7::jsonb, $8, $9, $10, $11)`,
          values: values(route),
        });
      } catch (error) {
        if (isUniqueViolation(error, 'intake_routes_pkey')) {
          throw new DuplicateKeyError(`route name ${route.name} is taken`);
        }
        throw error;
      }
    },
    async listIntakeRoutes() {
      const result = await pool.query<RouteRow>({
        name: 'wb_intake_routes',
        text: `SELECT ${COLUMNS} FROM intake_routes ORDER BY name COLLATE "C"`,
      });
      return result.rows.map(fromRow);
    },
    async getIntakeRoute(name) {
      return one('wb_intake_route', `SELECT ${COLUMNS} FROM intake_routes WHERE name = $1`, [name]);
    },
    async updateIntakeRoute(route) {
      const result = await pool.query({
        name: 'wb_update_intake_route',
        text: `UPDATE intake_routes SET accounts = $2::jsonb, timezone = $3, error_map = $4::jsonb, enabled = $5,
                 smpp = $6::jsonb, smpp_password = $7
               WHERE name = $1`,
        values: [route.name, ...values(route).slice(2, 8)],
      });
      return (result.rowCount ?? 0) > 0;
    },
    async setIntakeRouteToken(name, sealedToken, tokenDigest) {
      const result = await pool.query({
        name: 'wb_set_intake_route_token',
        text: 'UPDATE intake_routes SET token = $2, token_digest = $3 WHERE name = $1',
        values: [name, sealedToken, tokenDigest],
      });
      return (result.rowCount ?? 0) > 0;
    },
    async deleteIntakeRoute(name) {
      // One statement: the route and its kept receipts go together.
      const result = await pool.query({
        name: 'wb_delete_intake_route',
        text: `WITH garbled AS (DELETE FROM intake_garbled WHERE route = $1)
               DELETE FROM intake_routes WHERE name = $1`,
        values: [name],
      });
      return (result.rowCount ?? 0) > 0;
    },
    async recordGarbledIntake(route, entry, keep) {
      await pool.query({
        name: 'wb_record_garbled_intake',
        text: `WITH added AS (INSERT INTO intake_garbled (route, at, text, pdu) VALUES ($1, $2, $3, $4))
               DELETE FROM intake_garbled WHERE route = $1 AND id <= (
                 SELECT id FROM intake_garbled WHERE route = $1 ORDER BY id DESC LIMIT 1 OFFSET $5)`,
        values: [route, entry.at.toISOString(), entry.text, entry.pdu, keep - 1],
      });
    },
    async listGarbledIntake(route, limit) {
      const result = await pool.query<{ at: Date; text: string; pdu: string | null }>({
        name: 'wb_garbled_intake',
        text: 'SELECT at, text, pdu FROM intake_garbled WHERE route = $1 ORDER BY id DESC LIMIT $2',
        values: [route, limit],
      });
      return result.rows.map((row) => ({ at: row.at, text: row.text, pdu: row.pdu }));
    },
    async intakeRouteByTokenDigest(digest) {
      return one('wb_intake_route_by_token', `SELECT ${COLUMNS} FROM intake_routes WHERE token_digest = $1`, [
        digest,
      ]);
    },
  };
}
