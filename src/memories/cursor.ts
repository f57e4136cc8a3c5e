import { keyedHash, sameMac } from '../auth/server-keys.js';
import { validationFailed } from '../shared/errors.js';

/** A position in a user's list: newest `created_at` first, then `id`. */
export interface ListCursor {
  createdAt: Date;
  id: string;
}

/** Whose list a cursor belongs to: it is signed for that list alone. */
export interface CursorScope {
  key: Buffer;
  tenantId: string;
  userId: string;
}

// Exactly what encodeCursor writes: toISOString's form in years 0001-9999, and a canonical UUID.
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

const mac = (scope: CursorScope, payload: string) => keyedHash(scope.key, ['list-cursor', scope.tenantId, scope.userId, payload], 'base64url');

/** `payload.mac`: the position, and an HMAC over it and the list it belongs to. */
export function encodeCursor(position: ListCursor, scope: CursorScope): string {
  const payload = Buffer.from(JSON.stringify([position.createdAt.toISOString(), position.id])).toString('base64url');
  return `${payload}.${mac(scope, payload)}`;
}

/**
 * The position of a cursor this service issued for this list; anything else (made up, altered,
 * another user's) is a 400. The signature is checked before the payload is read at all.
 */
export function decodeCursor(cursor: string, scope: CursorScope): ListCursor {
  const position = readCursor(cursor, scope);
  if (!position) throw validationFailed('the cursor is not valid', [{ path: '/cursor', message: 'not a cursor this service issued for this list' }]);
  return position;
}

function readCursor(cursor: string, scope: CursorScope): ListCursor | undefined {
  const parts = cursor.split('.');
  if (parts.length !== 2) return undefined;
  const [payload, signature] = parts as [string, string];
  if (!BASE64URL.test(payload) || !sameMac(signature, mac(scope, payload))) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (!Array.isArray(value) || value.length !== 2) return undefined;
  const [createdAt, id] = value as unknown[];
  if (typeof createdAt !== 'string' || typeof id !== 'string' || !ISO_INSTANT.test(createdAt) || !UUID.test(id)) return undefined;
  const date = new Date(createdAt);
  if (Number.isNaN(date.getTime()) || date.toISOString() !== createdAt) return undefined;
  return { createdAt: date, id };
}
