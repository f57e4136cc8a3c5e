import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.js';

const FILE_NAME = 'dev-jwt-secret';

/**
 * The HS256 secret in force: the configured one, or in embedded mode (no DATABASE_URL) a secret
 * generated once into DATA_DIR with mode 0600. A production configuration never generates one;
 * config.ts already refuses DATABASE_URL without a secret or JWKS.
 */
export function resolveJwtSecret(config: Config): { secret: string | undefined; generatedAt?: string } {
  if (config.auth.jwtSecret || config.auth.jwksUrl || config.databaseUrl) return { secret: config.auth.jwtSecret };
  const file = path.resolve(config.dataDir, FILE_NAME);
  if (!existsSync(file)) {
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, randomBytes(48).toString('base64url'), { mode: 0o600, flag: 'wx' });
  }
  chmodSync(file, 0o600);
  return { secret: readFileSync(file, 'utf8').trim(), generatedAt: file };
}
