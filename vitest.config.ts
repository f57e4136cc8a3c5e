import { defineConfig } from 'vitest/config';
import { isUnawaitedTypeFetchFailure } from './src/db/type-fetch.js';

/**
 * Integration files that need PostgreSQL itself or Redis (direct server connections, BullMQ,
 * worker processes); every other integration file is a contract test and runs on both backends.
 */
const POSTGRES_ONLY = [
  'test/integration/rls.test.ts',
  'test/integration/auth-jwks-down.test.ts',
  'test/integration/extraction-worker-process.test.ts',
  'test/integration/queue-lease.test.ts',
  'test/integration/db-faults.test.ts',
  'test/integration/webhooks-worker-kill.test.ts',
  'test/integration/portability-roundtrip.test.ts',
];

/** @engram/client's tests: the built package against the real service, on both backends. */
const CLIENT_TESTS = 'clients/typescript/test/**/*.test.ts';

export default defineConfig({
  test: {
    globalSetup: ['test/support/global-setup.ts', 'test/support/client-build.ts'],
    testTimeout: 30_000,
    hookTimeout: 90_000,
    // Files share one PostgreSQL and one Redis and isolate themselves by tenant (or by a database
    // of their own); two cores are all we have.
    maxWorkers: 2,
    // The one rejection the service itself drops (src/db/type-fetch.ts); tests that drop connections meet it.
    onUnhandledError: (error) => (isUnawaitedTypeFetchFailure(error) ? false : undefined),
    projects: [
      {
        extends: true,
        test: { name: 'unit', include: ['test/unit/**/*.test.ts', 'test/llm/**/*.test.ts'] },
      },
      {
        extends: true,
        test: {
          name: 'postgres',
          include: ['test/integration/**/*.test.ts', 'test/e2e/**/*.test.ts', 'test/*.test.ts', CLIENT_TESTS],
          env: { TEST_BACKEND: 'postgres' },
        },
      },
      {
        extends: true,
        test: {
          name: 'pglite',
          include: ['test/integration/**/*.test.ts', CLIENT_TESTS],
          exclude: POSTGRES_ONLY,
          env: { TEST_BACKEND: 'pglite' },
        },
      },
    ],
  },
});
