/** Where the suite's services live; scripts/test-services.sh brings them up. */
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/engram_test';
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379/15';
export const TEST_JWT_SECRET = 'engram-test-secret-0123456789-abcdefghijklmnop';
/**
 * Migrated once per run and never connected to afterwards, so isolated databases can clone it.
 * Named after the test database, so suites of two checkouts on one server keep their schemas apart.
 */
export const TEMPLATE_DB = `${new URL(TEST_DATABASE_URL).pathname.slice(1)}_template`;

export function databaseUrl(name: string): string {
  const url = new URL(TEST_DATABASE_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

export function adminUrl(): string {
  return databaseUrl('postgres');
}
