import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { CONFIG_VARIABLES, loadConfig } from '../../src/config.js';
import { PACKAGE_ROOT } from '../../src/db/paths.js';

/**
 * docker-compose.yml wires the services through the config module's variables: a variable that
 * src/config.ts does not read would be silently ignored in production, and a missing required
 * one stops a service at start-up. Docker cannot run here, so this checks the file itself.
 */

type Service = {
  image?: string;
  build?: unknown;
  command?: string[] | string;
  environment?: Record<string, string | number | boolean | null> | string[];
  depends_on?: Record<string, { condition?: string }> | string[];
  volumes?: string[];
  healthcheck?: { test?: unknown; disable?: boolean };
};
type Compose = { services: Record<string, Service>; volumes?: Record<string, unknown> };

const COMPOSE_FILE = path.join(PACKAGE_ROOT, 'docker-compose.yml');

function loadCompose(text = readFileSync(COMPOSE_FILE, 'utf8')): Compose {
  return parse(text, { merge: true }) as Compose;
}

/** What `docker compose` would pass for the variables the user leaves unset (or sets here). */
const USER_ENV: Record<string, string> = { AUTH_JWT_SECRET: 'compose-test-secret-0123456789-abcdefghij' };

/** Compose interpolation: `${VAR}`, `${VAR:-default}`, `${VAR-default}`, `${VAR:?error}`, `$$`. */
function interpolate(value: string, env: Record<string, string>): string {
  return value.replace(/\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g, (match, braced, op, arg, bare) => {
    if (match === '$$') return '$';
    const name = (braced ?? bare) as string;
    const set = env[name];
    if (op === ':-') return set ? set : arg;
    if (op === '-') return set ?? arg;
    if (op === ':?' || op === '?') {
      if (set === undefined || (op === ':?' && set === '')) throw new Error(`compose would stop: ${name} is required (${arg})`);
      return set;
    }
    return set ?? '';
  });
}

function environmentOf(service: Service, env = USER_ENV): Record<string, string> {
  const raw = service.environment ?? {};
  const entries = Array.isArray(raw) ? raw.map((line) => line.split(/=(.*)/s, 2) as [string, string]) : Object.entries(raw);
  return Object.fromEntries(entries.map(([name, value]) => [name, interpolate(String(value ?? ''), env)]));
}

/** The services built from this repository's Dockerfile: the API, the worker, the migrations. */
function engramServices(compose: Compose): Array<[string, Service]> {
  return Object.entries(compose.services).filter(([, s]) => s.build !== undefined || s.image?.startsWith('engram'));
}

/** Everything wrong with the Engram services' environments, as sentences; empty when sound. */
function problems(compose: Compose, env = USER_ENV): string[] {
  const known = new Set(CONFIG_VARIABLES);
  const found: string[] = [];
  for (const [name, service] of engramServices(compose)) {
    let vars: Record<string, string>;
    try {
      vars = environmentOf(service, env);
    } catch (error) {
      found.push(`${name}: ${(error as Error).message}`);
      continue;
    }
    for (const variable of Object.keys(vars)) if (!known.has(variable)) found.push(`${name}: ${variable} is not a variable src/config.ts reads`);
    const isWorker = (Array.isArray(service.command) ? service.command.join(' ') : (service.command ?? '')).includes('workers/extraction');
    const isApi = service.command === undefined;
    if (isApi || isWorker) {
      if (!vars.DATABASE_URL) found.push(`${name}: DATABASE_URL is required`);
      if (!vars.AUTH_JWT_SECRET && !vars.AUTH_JWKS_URL) found.push(`${name}: AUTH_JWT_SECRET or AUTH_JWKS_URL is required`);
    }
    if ((isWorker || vars.WORKER === 'off') && !vars.REDIS_URL) found.push(`${name}: REDIS_URL is required for a separate worker`);
    try {
      loadConfig(vars);
    } catch (error) {
      found.push(`${name}: ${(error as Error).message}`);
    }
  }
  return found;
}

describe('docker-compose.yml', () => {
  const compose = loadCompose();
  const services = compose.services;

  it('sets only variables the config module knows, every required one, and values that pass validation', () => {
    expect(engramServices(compose).map(([name]) => name).sort()).toEqual(['api', 'migrate', 'worker']);
    expect(problems(compose)).toEqual([]);
  });

  it('catches an unknown variable, a missing required one, an invalid value and an unset secret', () => {
    const text = readFileSync(COMPOSE_FILE, 'utf8');
    const broken = loadCompose(text);
    (broken.services.api!.environment as Record<string, string>).DATABSE_URL = 'postgres://typo@db/engram';
    delete (broken.services.worker!.environment as Record<string, string>).REDIS_URL;
    (broken.services.migrate!.environment as Record<string, string>).EMBEDDING_DIMENSIONS = 'many';
    const found = problems(broken);
    expect(found).toContain('api: DATABSE_URL is not a variable src/config.ts reads');
    expect(found).toContain('worker: REDIS_URL is required for a separate worker');
    expect(found.some((p) => p.startsWith('migrate: Invalid configuration: EMBEDDING_DIMENSIONS'))).toBe(true);
    // Without AUTH_JWT_SECRET in the environment compose refuses to start rather than run without one.
    expect(problems(loadCompose(text), {}).filter((p) => /AUTH_JWT_SECRET is required/.test(p))).toHaveLength(3);
  });

  it('runs the API without an inline worker or migrations, after the one-shot migrate service succeeded', () => {
    const api = environmentOf(services.api!);
    expect(api).toMatchObject({ WORKER: 'off', MIGRATE_ON_START: 'false', HOST: '0.0.0.0' });
    expect(services.api!.depends_on).toMatchObject({ migrate: { condition: 'service_completed_successfully' } });
    expect(services.worker!.depends_on).toMatchObject({ migrate: { condition: 'service_completed_successfully' } });
    expect(services.migrate!.depends_on).toMatchObject({ postgres: { condition: 'service_healthy' } });
    expect(environmentOf(services.worker!).MIGRATE_ON_START).toBe('false');
  });

  it('runs entry points that the build produces from existing sources', () => {
    const commands = [services.migrate!.command, services.worker!.command];
    expect(commands).toEqual([
      ['node', 'dist/src/db/migrate-cli.js'],
      ['node', 'dist/workers/extraction.js'],
    ]);
    for (const command of commands as string[][]) {
      const source = command[1]!.replace(/^dist\//, '').replace(/\.js$/, '.ts');
      expect(existsSync(path.join(PACKAGE_ROOT, source)), source).toBe(true);
    }
    // The worker serves /healthz for the image's HEALTHCHECK; the one-shot job has none to serve.
    expect(environmentOf(services.worker!).WORKER_METRICS_PORT).toMatch(/^\d+$/);
    expect(services.migrate!.healthcheck?.disable).toBe(true);
  });

  it('logs the API and the worker in as engram_app only, and runs migrations as the tables\' owner, neither a superuser', () => {
    const user = (service: Service) => new URL(environmentOf(service).DATABASE_URL!).username;
    expect({ api: user(services.api!), worker: user(services.worker!), migrate: user(services.migrate!) }).toEqual({
      api: 'engram_app',
      worker: 'engram_app',
      migrate: 'engram_owner',
    });
    // The image's bootstrap superuser is no Engram service's login.
    const superuser = environmentOf(services.postgres!).POSTGRES_USER;
    expect(Object.values({ api: user(services.api!), worker: user(services.worker!), migrate: user(services.migrate!) })).not.toContain(superuser);

    // The init script the postgres service runs creates both roles, neither a superuser nor BYPASSRLS.
    const mount = services.postgres!.volumes!.find((v) => v.includes('/docker-entrypoint-initdb.d/'));
    expect(mount).toBeDefined();
    const script = readFileSync(path.join(PACKAGE_ROOT, mount!.split(':')[0]!), 'utf8');
    for (const role of ['engram_owner', 'engram_app']) {
      const create = new RegExp(`CREATE ROLE ${role} ([^;]*);`).exec(script)?.[1] ?? '';
      expect(create, role).toMatch(/\bLOGIN\b/);
      expect(create, role).toMatch(/\bNOSUPERUSER\b/);
      expect(create, role).toMatch(/\bNOBYPASSRLS\b/);
    }
    expect(script).toMatch(/ALTER DATABASE :"db" OWNER TO engram_owner/);
    expect(script).toMatch(/GRANT engram_app TO engram_owner/);
  });

  it('keeps PostgreSQL (pgvector) and Redis (append-only) on volumes, with health checks', () => {
    expect(services.postgres!.image).toMatch(/^pgvector\/pgvector:pg1[5-9]$/);
    expect(services.postgres!.volumes?.some((v) => v.endsWith(':/var/lib/postgresql/data'))).toBe(true);
    expect(services.postgres!.healthcheck?.test).toBeDefined();
    expect(services.redis!.image).toMatch(/^redis:7/);
    const redisCommand = (services.redis!.command as string[]).join(' ');
    expect(redisCommand).toMatch(/--appendonly yes/);
    expect(redisCommand).toMatch(/--maxmemory-policy noeviction/);
    expect(services.redis!.volumes?.some((v) => v.endsWith(':/data'))).toBe(true);
    expect(Object.keys(compose.volumes ?? {})).toEqual(expect.arrayContaining(['pgdata', 'redisdata']));
    // The services reach each other by compose service name.
    expect(new URL(environmentOf(services.api!).DATABASE_URL!).hostname).toBe('postgres');
    expect(new URL(environmentOf(services.worker!).REDIS_URL!).hostname).toBe('redis');
  });
});
