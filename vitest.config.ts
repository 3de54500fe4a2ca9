import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['packages/*/test/**/*.test.ts'],
    globalSetup: ['packages/server/test/support/services.ts'],
    testTimeout: 20_000,
    hookTimeout: 60_000,
    // The SDK's type tests (*.test-d.ts) run as tests of their own, checked by the compiler.
    typecheck: {
      enabled: true,
      include: ['packages/client/test/**/*.test-d.ts'],
      tsconfig: 'packages/client/test/tsconfig.json',
    },
  },
});
