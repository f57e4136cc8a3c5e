import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import type { Config } from '../config.js';
import { generatedSecret } from '../auth/dev-secret.js';

const KEY_FILE = 'webhook-secret-key';
const FORMAT = 'v1';

/** A Standard Webhooks signing secret: `whsec_` and 32 random bytes in base64. */
export function generateSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/**
 * The key that encrypts signing secrets at rest: from WEBHOOK_SECRET_KEY; embedded without it,
 * one generated once into DATA_DIR (like the development JWT secret); with DATABASE_URL and no
 * key, derived from the server secret, which the database does not hold either.
 */
export function resolveWebhookKey(config: Config, serverSecret: string): Buffer {
  const material = config.webhooks.secretKey ?? (config.databaseUrl ? serverSecret : generatedSecret(config.dataDir, KEY_FILE).secret);
  return Buffer.from(hkdfSync('sha256', material, 'engram webhook secrets', 'engram/webhook-secret', 32));
}

/** AES-256-GCM, bound to the endpoint (`aad`), so a ciphertext copied to another row does not open. */
export function encryptSecret(key: Buffer, aad: string, secret: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(aad));
  const body = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return [FORMAT, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), body.toString('base64url')].join(':');
}

export function decryptSecret(key: Buffer, aad: string, stored: string): string {
  const [format, iv, tag, body] = stored.split(':');
  if (format !== FORMAT || !iv || !tag || body === undefined) throw new Error('unknown webhook secret format');
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
  decipher.setAAD(Buffer.from(aad));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
}
