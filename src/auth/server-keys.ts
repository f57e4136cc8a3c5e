import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';

/**
 * Keys the service uses for its own integrity and privacy, each derived (HKDF-SHA256) from one
 * server secret for one purpose, so a key leaked or rotated for one purpose says nothing of another.
 */
export interface ServerKeys {
  /** Signs list cursors, so a client can only hand back a cursor the service issued. */
  cursor: Buffer;
  /** Keys the subject hash of erasure receipts: without it, a guessed user cannot be confirmed. */
  receipt: Buffer;
}

const SALT = 'engram server keys v1';

function derive(secret: string, purpose: string): Buffer {
  return Buffer.from(hkdfSync('sha256', secret, SALT, `engram/${purpose}`, 32));
}

export function deriveServerKeys(secret: string): ServerKeys {
  return { cursor: derive(secret, 'cursor'), receipt: derive(secret, 'erasure-receipt') };
}

/** HMAC-SHA256 of the parts, joined by a separator no id contains. */
export function keyedHash(key: Buffer, parts: readonly string[], encoding: 'hex' | 'base64url' = 'hex'): string {
  return createHmac('sha256', key).update(parts.join('\u001f')).digest(encoding);
}

/** Constant-time comparison of two MACs in the same encoding. */
export function sameMac(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}
