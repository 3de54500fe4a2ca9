import pg from 'pg';
import { type DatabaseTarget, hostName, type PgHost, type TargetSessionAttrs } from './connection-string.js';

/** Whether an open connection is on a server this target accepts (it answers one small query). */
export async function acceptable(client: pg.ClientBase, wanted: TargetSessionAttrs): Promise<string | null> {
  if (wanted === 'any') return null;
  const result = await client.query<{ standby: boolean; read_only: string }>(
    "SELECT pg_is_in_recovery() AS standby, current_setting('transaction_read_only') AS read_only",
  );
  const row = result.rows[0];
  if (row?.standby) return 'is a standby (in recovery)';
  if (row?.read_only === 'on') return 'is read-only (transaction_read_only = on)';
  return null;
}

/**
 * Finds the host of a {@link DatabaseTarget} that new connections go to, the way libpq does: each host in
 * order, the first that is reachable and acceptable. The answer is kept until {@link forget} is told that host
 * failed (a connection to it could not be made, was lost, or found it read-only); the next {@link pick} then
 * probes the list again. Concurrent picks share one probe.
 */
export class HostResolver {
  readonly #target: DatabaseTarget;
  readonly #probeTimeoutMs: number;
  #current: PgHost | undefined;
  #probing: Promise<PgHost> | undefined;

  constructor(target: DatabaseTarget, options: { probeTimeoutMs: number }) {
    this.#target = target;
    this.#probeTimeoutMs = options.probeTimeoutMs;
  }

  get target(): DatabaseTarget {
    return this.#target;
  }

  /** The host new connections should go to (probing the list when none is known). */
  pick(): Promise<PgHost> {
    if (this.#current !== undefined) return Promise.resolve(this.#current);
    this.#probing ??= this.#probe().finally(() => {
      this.#probing = undefined;
    });
    return this.#probing;
  }

  /** `host` failed: the next pick probes the list again. */
  forget(host: PgHost): void {
    if (this.#current === host) this.#current = undefined;
  }

  async #probe(): Promise<PgHost> {
    const reasons: string[] = [];
    for (const host of this.#target.hosts) {
      const timeout = this.#probeTimeoutMs > 0 ? this.#probeTimeoutMs : 5_000;
      const client = new pg.Client({
        connectionString: this.#target.urlFor(host),
        connectionTimeoutMillis: timeout,
        query_timeout: timeout,
        application_name: 'waybill',
      });
      client.on('error', () => {});
      try {
        await client.connect();
        const refused = await acceptable(client, this.#target.targetSessionAttrs);
        if (refused === null) {
          this.#current = host;
          return host;
        }
        reasons.push(`${hostName(host)} ${refused}`);
      } catch (error) {
        reasons.push(`${hostName(host)} ${error instanceof Error ? error.message : String(error)}`);
      } finally {
        client.end().catch(() => {});
      }
    }
    // Classified like a refused connection: the database is unavailable, a retry may find the new primary.
    throw Object.assign(
      new Error(
        `no host of the database URL accepts ${this.#target.targetSessionAttrs === 'any' ? 'connections' : 'writes'}: ${reasons.join('; ')}`,
      ),
      { code: 'ECONNREFUSED' },
    );
  }
}
