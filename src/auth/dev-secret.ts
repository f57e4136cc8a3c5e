import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.js';
import { ensureDataDir } from '../db/data-dir.js';

const JWT_SECRET_FILE = 'dev-jwt-secret';
const SERVER_SECRET_FILE = 'server-secret';

/** A secret generated once into DATA_DIR (mode 0600, in a 0700 folder) and read back after. */
export function generatedSecret(dataDir: string, name: string): { secret: string; file: string } {
  const file = path.join(ensureDataDir(dataDir), name);
  if (!existsSync(file)) writeFileSync(file, randomBytes(48).toString('base64url'), { mode: 0o600, flag: 'wx' });
  chmodSync(file, 0o600);
  return { secret: readFileSync(file, 'utf8').trim(), file };
}

/**
 * The HS256 secret in force: the configured one, or in embedded mode (no DATABASE_URL) a secret
 * generated once into DATA_DIR with mode 0600. A production configuration never generates one;
 * config.ts already refuses DATABASE_URL without a secret or JWKS.
 */
export function resolveJwtSecret(config: Config): { secret: string | undefined; generatedAt?: string } {
  if (config.auth.jwtSecret || config.auth.jwksUrl || config.databaseUrl) return { secret: config.auth.jwtSecret };
  const { secret, file } = generatedSecret(config.dataDir, JWT_SECRET_FILE);
  return { secret, generatedAt: file };
}

/**
 * The secret the server keys derive from: SERVER_SECRET; else the HS256 secret in force (so an
 * existing deployment starts as before); else, embedded with only a JWKS, one generated into
 * DATA_DIR. config.ts refuses DATABASE_URL with neither SERVER_SECRET nor AUTH_JWT_SECRET.
 */
export function resolveServerSecret(config: Config, jwtSecret: string | undefined): string {
  if (config.serverSecret) return config.serverSecret;
  if (jwtSecret) return jwtSecret;
  if (config.databaseUrl) throw new Error('SERVER_SECRET is required when DATABASE_URL is set without AUTH_JWT_SECRET');
  return generatedSecret(config.dataDir, SERVER_SECRET_FILE).secret;
}
