import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Integration files share one PostgreSQL and one Redis; each file gets its own tenants, so
    // files may run in parallel, but two cores are all we have.
    maxWorkers: 2,
    fileParallelism: true,
  },
});
