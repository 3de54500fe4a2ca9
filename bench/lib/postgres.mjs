// Statements the benchmarks run on PostgreSQL beside the server: databases made and dropped, statistics taken.
import pg from 'pg';

/** Runs `sql` on one connection to the database of `url`. */
export async function onDatabase(url, sql) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** Runs `sql` on the server of `url`, connected to its `postgres` database (to make or drop databases). */
export async function onServer(url, sql) {
  const admin = new URL(url);
  admin.pathname = '/postgres';
  await onDatabase(admin.toString(), sql);
}
