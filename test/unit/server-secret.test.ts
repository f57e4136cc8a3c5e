import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { resolveJwtSecret, resolveServerSecret } from '../../src/auth/dev-secret.js';
import { deriveServerKeys } from '../../src/auth/server-keys.js';
import { ConfigError, loadConfig } from '../../src/config.js';

/** One server secret keys cursors and receipts; where it comes from when it is not set. */
const DB = 'postgres://engram@db.internal:5432/engram';
const JWT = 'j'.repeat(40);
const SERVER = 's'.repeat(40);
const dirs: string[] = [];
const scratch = () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'engram-secret-'));
  dirs.push(dir);
  return dir;
};
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function configError(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('the configuration was accepted');
}

describe('SERVER_SECRET', () => {
  it('is required, in one line naming it, with DATABASE_URL and only a JWKS', () => {
    const error = configError({ DATABASE_URL: DB, AUTH_JWKS_URL: 'https://idp.example/jwks.json' });
    expect(error.variable).toBe('SERVER_SECRET');
    expect(error.message).toMatch(/^Invalid configuration: SERVER_SECRET is required when DATABASE_URL is set/);
    expect(error.message).not.toContain('\n');
  });

  it('must be at least 32 bytes', () => {
    expect(configError({ SERVER_SECRET: 'short' }).variable).toBe('SERVER_SECRET');
  });

  it('defaults to the HS256 secret, so an existing deployment starts unchanged', () => {
    const config = loadConfig({ DATABASE_URL: DB, AUTH_JWT_SECRET: JWT });
    expect(resolveServerSecret(config, resolveJwtSecret(config).secret)).toBe(JWT);
  });

  it('is used as given when set, apart from the HS256 secret', () => {
    const config = loadConfig({ DATABASE_URL: DB, AUTH_JWT_SECRET: JWT, SERVER_SECRET: SERVER });
    expect(resolveServerSecret(config, JWT)).toBe(SERVER);
  });

  it('is generated once into DATA_DIR (0600) in embedded mode with only a JWKS, and read back after', () => {
    const dataDir = path.join(scratch(), 'data');
    const config = loadConfig({ DATA_DIR: dataDir, AUTH_JWKS_URL: 'https://idp.example/jwks.json' });
    const first = resolveServerSecret(config, undefined);
    const file = path.join(dataDir, 'server-secret');
    expect(existsSync(file)).toBe(true);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(dataDir).mode & 0o777).toBe(0o700);
    expect(Buffer.byteLength(first)).toBeGreaterThanOrEqual(32);
    expect(readFileSync(file, 'utf8').trim()).toBe(first);
    expect(resolveServerSecret(config, undefined)).toBe(first);
  });
});

describe('deriveServerKeys', () => {
  it('derives a distinct 32-byte key per purpose, none of them the secret itself', () => {
    const keys = deriveServerKeys(SERVER);
    expect(keys.cursor).toHaveLength(32);
    expect(keys.receipt).toHaveLength(32);
    expect(keys.cursor.equals(keys.receipt)).toBe(false);
    expect(keys.cursor.toString('utf8')).not.toContain(SERVER.slice(0, 8));
    expect(deriveServerKeys(SERVER).cursor.equals(keys.cursor)).toBe(true);
    expect(deriveServerKeys(JWT).cursor.equals(keys.cursor)).toBe(false);
  });
});
