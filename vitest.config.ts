import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['packages/*/test/**/*.test.ts'],
    globalSetup: ['packages/server/test/support/services.ts'],
    testTimeout: 20_000,
    // Vitest's default is one file per core but one: on a 2-core machine, one file at a time. Most of a file's
    // time is spent waiting (servers starting, leases expiring, processes killed and restarted), so two at once
    // took the suite from 1,121 to 668 s there, and every file keeps to its own ports, databases and schemas.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    hookTimeout: 60_000,
    // The SDK's type tests (*.test-d.ts) run as tests of their own, checked by the compiler.
    typecheck: {
      enabled: true,
      include: ['packages/client/test/**/*.test-d.ts'],
      tsconfig: 'packages/client/test/tsconfig.json',
    },
  },
});
