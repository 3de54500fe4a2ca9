import { afterEach, describe, expect, it } from 'vitest';
import { killAll, serve } from '../support/processes.js';

/** What `waybill serve` says at start about its settings: typos it ignores, and whether /admin/v1 is on. */

/** Each test starts several real processes, one after another: seconds each on a busy machine. */
const PROCESS_TIMEOUT_MS = 60_000;

afterEach(killAll);

/** The JSON log lines of a process's output (the demo banner and other text are skipped). */
const logLines = (output: string) =>
  output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { level: number; msg: string; [field: string]: unknown });

describe('the start log', () => {
  it(
    'warns about every WAYBILL_* variable nothing reads, naming the closest setting',
    async () => {
      const server = await serve(['--no-demo'], {
        DATABASE_URL: 'sqlite::memory:',
        WAYBILL_ADMN_TOKEN: 'abc',
        WAYBILL_PORT: '9999',
        WAYBILL_URL: 'http://127.0.0.1:1', // read by the client commands: no warning
      });
      await server.stop();
      const warnings = logLines(server.output()).filter((line) => line.msg.includes('not a Waybill setting'));
      expect(warnings.map(({ level, variable, closest }) => ({ level, variable, closest }))).toEqual([
        { level: 40, variable: 'WAYBILL_ADMN_TOKEN', closest: 'WAYBILL_ADMIN_TOKEN' },
        { level: 40, variable: 'WAYBILL_PORT', closest: 'PORT' },
      ]);
      expect(warnings[0]?.msg).toBe(
        'WAYBILL_ADMN_TOKEN is not a Waybill setting and is ignored: did you mean WAYBILL_ADMIN_TOKEN?',
      );
      expect(server.output()).not.toContain('"abc"');
      const operator = logLines(server.output()).filter((line) => line.operatorApi !== undefined);
      expect(operator).toMatchObject([{ level: 30, operatorApi: false }]);
      expect(operator[0]?.msg).toContain('set WAYBILL_ADMIN_TOKEN');
    },
    PROCESS_TIMEOUT_MS,
  );

  it(
    'says the operator API is on without logging the token',
    async () => {
      const token = 'start-log-admin-token-0123456789';
      const server = await serve(['--no-demo'], {
        DATABASE_URL: 'sqlite::memory:',
        WAYBILL_ADMIN_TOKEN: token,
      });
      await server.stop();
      expect(logLines(server.output()).filter((line) => line.operatorApi !== undefined)).toMatchObject([
        { level: 30, operatorApi: true },
      ]);
      expect(server.output()).not.toContain('not a Waybill setting');
      expect(server.output()).not.toContain(token);
    },
    PROCESS_TIMEOUT_MS,
  );
});
