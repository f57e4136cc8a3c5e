import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { PACKAGE_ROOT } from '../db/paths.js';

export const OPENAPI_PATH = path.join(PACKAGE_ROOT, 'openapi.yaml');

let cached: Record<string, unknown> | undefined;

/** openapi.yaml is the source of truth; /openapi.json serves it, parsed once. */
export function openApiDocument(): Record<string, unknown> {
  cached ??= parse(readFileSync(OPENAPI_PATH, 'utf8')) as Record<string, unknown>;
  return cached;
}
