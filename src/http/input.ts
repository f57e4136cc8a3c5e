import type { Context } from 'hono';
import type { z } from 'zod';
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

function validate<S extends z.ZodType>(schema: S, value: unknown, what: string): z.output<S> {
  const unsafe = findUnsafeStrings(value);
  if (unsafe.length > 0) throw new DomainError('validation_failed', `the ${what} contains characters that cannot be stored`, { errors: unsafe });
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const errors = parsed.error.issues.slice(0, 50).map((issue) => ({
      path: pointer(issue.path),
      message: issue.code === 'unrecognized_keys' ? `unknown field(s): ${issue.keys.join(', ')}` : issue.message,
    }));
    throw new DomainError('validation_failed', `the ${what} is not valid: ${errors[0]?.path || '/'} ${errors[0]?.message ?? ''}`.trim(), { errors });
  }
  return parsed.data;
}

/** Reads, decodes and validates a JSON body: 415, 400 malformed or invalid, never a 500. */
export async function readJson<S extends z.ZodType>(c: Context, schema: S): Promise<z.output<S>> {
  const contentType = (c.req.header('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (contentType !== 'application/json' && !/^application\/[a-z0-9.+-]*\+json$/.test(contentType)) {
    throw new DomainError('unsupported_media_type', 'the body must be application/json');
  }
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
    throw new DomainError('malformed_json', `the body is not valid JSON: ${(error as Error).message}`);
  }
  return validate(schema, value, 'body');
}

export function readQuery<S extends z.ZodType>(c: Context, schema: S): z.output<S> {
  return validate(schema, c.req.query(), 'query');
}

export function readParam<S extends z.ZodType>(c: Context, name: string, schema: S): z.output<S> {
  return validate(schema, c.req.param(name), `path parameter ${name}`);
}
