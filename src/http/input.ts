import type { Context } from 'hono';
import { DomainError, type FieldError } from '../shared/errors.js';

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** JSON pointer of a zod issue path, e.g. /memories/0/content. */
export function pointer(path: ReadonlyArray<PropertyKey>): string {
  return path.length === 0 ? '' : `/${path.map((p) => String(p).replaceAll('~', '~0').replaceAll('/', '~1')).join('/')}`;
}

/**
 * NUL bytes and lone surrogates pass JSON.parse but break PostgreSQL text and every consumer
 * downstream, so they are refused up front with the path where they were found.
 */
export function findUnsafeStrings(value: unknown, path: PropertyKey[] = [], found: FieldError[] = []): FieldError[] {
  if (found.length >= 20) return found;
  if (typeof value === 'string') {
    if (value.includes('\u0000')) found.push({ path: pointer(path), message: 'must not contain NUL characters' });
    else if (!value.isWellFormed()) found.push({ path: pointer(path), message: 'must not contain lone surrogates' });
  } else if (Array.isArray(value)) {
    value.forEach((item, index) => findUnsafeStrings(item, [...path, index], found));
  } else if (value && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      findUnsafeStrings(key, [...path, key], found);
      findUnsafeStrings(item, [...path, key], found);
    }
  }
  return found;
}

/** Deeper than any real request; every walker below (ours, zod's, JSON.stringify) recurses. */
export const MAX_JSON_DEPTH = 64;

/**
 * The path of the first place nested deeper than `max` levels, or undefined. Iterative, because
 * JSON.parse accepts nesting far deeper than the call stack of the recursive walkers that follow.
 */
export function findTooDeep(value: unknown, max = MAX_JSON_DEPTH): PropertyKey[] | undefined {
  const stack: Array<{ value: unknown; path: PropertyKey[] }> = [{ value, path: [] }];
  while (stack.length > 0) {
    const { value: current, path } = stack.pop()!;
    if (!current || typeof current !== 'object') continue;
    if (path.length >= max) return path;
    const entries = Array.isArray(current) ? current.map((item, index) => [index, item] as const) : Object.entries(current);
    for (const [key, item] of entries) stack.push({ value: item, path: [...path, key] });
  }
  return undefined;
}

/** Keys that would reach an object's prototype when a parser copies them: refused, never silently dropped. */
const FORBIDDEN_KEYS = new Set(['__proto__']);

function findForbiddenKeys(value: unknown, path: PropertyKey[] = [], found: FieldError[] = []): FieldError[] {
  if (found.length >= 20 || !value || typeof value !== 'object') return found;
  if (Array.isArray(value)) {
    value.forEach((item, index) => findForbiddenKeys(item, [...path, index], found));
    return found;
  }
  for (const [key, item] of Object.entries(value)) {
    if (FORBIDDEN_KEYS.has(key)) found.push({ path: pointer([...path, key]), message: `a field named ${key} is not accepted` });
    else findForbiddenKeys(item, [...path, key], found);
  }
  return found;
}

/**
 * Reads and decodes a JSON body before any schema sees it: 415 unless JSON, 400 for invalid UTF-8,
 * malformed JSON, nesting deeper than zod's and JSON.stringify's recursion can walk, NUL bytes,
 * lone surrogates and `__proto__` keys. Never a 500.
 */
export async function readStrictJson(c: Context): Promise<unknown> {
  const [mediaType = '', ...parameters] = (c.req.header('content-type') ?? '').split(';');
  if (!JSON_MEDIA_TYPE.test(mediaType.trim().toLowerCase()) || !parameters.every(isUtf8Parameter)) throw unsupportedMediaType();
  const bytes = new Uint8Array(await c.req.arrayBuffer());
  let text: string;
  try {
    text = strictUtf8.decode(bytes);
  } catch {
    throw new DomainError('malformed_json', 'the body is not valid UTF-8');
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    // V8's message quotes the body; only the position is repeated back.
    const position = /position (\d+)/.exec((error as Error).message)?.[1];
    throw new DomainError('malformed_json', `the body is not valid JSON${position ? ` (at position ${position})` : ''}`);
  }
  const tooDeep = findTooDeep(value);
  if (tooDeep) {
    throw new DomainError('validation_failed', `the body is nested more than ${MAX_JSON_DEPTH} levels deep`, {
      errors: [{ path: pointer(tooDeep), message: `nested more than ${MAX_JSON_DEPTH} levels deep` }],
    });
  }
  const unsafe = findUnsafeStrings(value);
  if (unsafe.length > 0) throw new DomainError('validation_failed', 'the body contains characters that cannot be stored', { errors: unsafe });
  const forbidden = findForbiddenKeys(value);
  if (forbidden.length > 0) throw new DomainError('validation_failed', 'the body contains a field name that is not accepted', { errors: forbidden });
  return value;
}

/** The 415 of a body that is not UTF-8 JSON, whichever check finds it (this reader or Hono's route validator). */
export function unsupportedMediaType(): DomainError {
  return new DomainError('unsupported_media_type', 'the body must be application/json (UTF-8)');
}

/** application/json or application/<something>+json: the types Hono's JSON validator reads too. */
const JSON_MEDIA_TYPE = /^application\/([\w.-]+\+)?json$/;

/**
 * A media type parameter as Hono's route validator accepts it (`name=value`), and a charset, if
 * named, UTF-8: the body is decoded as UTF-8 whatever it says, so another charset is refused.
 */
function isUtf8Parameter(parameter: string): boolean {
  const match = /^\s*([A-Za-z0-9-]+)=("?)([^";]+)\2\s*$/.exec(parameter);
  if (!match) return false;
  // US-ASCII is a subset of UTF-8.
  return match[1]!.toLowerCase() !== 'charset' || /^(utf-?8|us-ascii|ascii)$/i.test(match[3]!);
}
