import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['packages/*/test/**/*.test.ts'],
    globalSetup: ['packages/server/test/support/services.ts'],
    testTimeout: 20_000,
    hookTimeout: 60_000,
  },
});
