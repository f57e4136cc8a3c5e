import { SCOPES, requireScope } from '../auth/principal.js';
import type { Database } from '../db/client.js';
import { withTenant } from '../db/tenant.js';
import type { RequestContext } from '../shared/context.js';
import * as repo from './repository.js';
import { defaultSettings, settingsSchema, type Settings } from './schemas.js';

/**
 * How long a process reuses a tenant's settings before reading them again. A PUT drops the entry
 * of the process that served it at once; every other process (API replicas, separate workers)
 * sees the change when its entry ages out, so within this many milliseconds.
 */
export const SETTINGS_CACHE_TTL_MS = 5_000;
const MAX_CACHED_TENANTS = 10_000;

interface Cached {
  settings: Settings;
  at: number;
}

// One cache per database handle: a runtime (and each test app) has its own, and the inline
// worker shares the API's, so a PUT is seen by the same process's next job at once.
const caches = new WeakMap<Database, Map<string, Cached>>();

function cacheOf(database: Database): Map<string, Cached> {
  let cache = caches.get(database);
  if (!cache) {
    cache = new Map();
    caches.set(database, cache);
  }
  return cache;
}

/** A stored document read with the current schema: keys added since it was written take their defaults. */
function fromStored(stored: unknown): Settings {
  if (stored === undefined) return defaultSettings();
  const parsed = settingsSchema.safeParse(stored);
  return parsed.success ? parsed.data : defaultSettings();
}

/** The tenant's settings (defaults when it set none), from this process's short-lived cache. */
export async function tenantSettings(database: Database, tenantId: string, now = Date.now()): Promise<Settings> {
  const cache = cacheOf(database);
  const hit = cache.get(tenantId);
  if (hit && now - hit.at < SETTINGS_CACHE_TTL_MS) return hit.settings;
  const settings = fromStored(await withTenant(database, tenantId, (tx) => repo.findSettings(tx, tenantId), { readOnly: true }));
  if (cache.size >= MAX_CACHED_TENANTS) cache.delete(cache.keys().next().value!);
  cache.delete(tenantId);
  cache.set(tenantId, { settings, at: now });
  return settings;
}

export function forgetCachedSettings(database: Database, tenantId: string): void {
  cacheOf(database).delete(tenantId);
}

export async function getSettings(ctx: RequestContext): Promise<Settings> {
  requireScope(ctx.principal, SCOPES.read);
  return tenantSettings(ctx.services.database, ctx.principal.tenantId);
}

/** Replaces the tenant's settings whole (the body is already validated, defaults filled in). */
export async function putSettings(ctx: RequestContext, settings: Settings): Promise<Settings> {
  requireScope(ctx.principal, SCOPES.admin);
  const { tenantId } = ctx.principal;
  await withTenant(ctx.services.database, tenantId, (tx) => repo.saveSettings(tx, tenantId, settings, ctx.services.clock()));
  forgetCachedSettings(ctx.services.database, tenantId);
  return settings;
}
