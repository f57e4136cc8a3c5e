import { execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../../src/db/paths.js';
import { TEST_JWT_SECRET, TEST_REDIS_URL } from '../support/env.js';
import { startTestApp, type TestApp } from '../support/harness.js';
import { deleteQueueKeys, uniqueQueuePrefix, waitUntil } from '../support/jobs.js';
import { freePort, stop, waitForStatus, type ServiceProcess } from '../support/process.js';

/**
 * The production image, as far as it can be checked without Docker: `npm run build` compiles,
 * the Dockerfile's entry points and health check exist and work when run the way the image runs
 * them (compiled JavaScript under plain `node`, no TypeScript loader), and it runs as non-root.
 */

const run = promisify(execFile);
const prefix = uniqueQueuePrefix('build');
const running: ServiceProcess[] = [];
let app: TestApp;

interface Instruction {
  keyword: string;
  args: string;
}

/** Dockerfile instructions (continuation lines joined, comments dropped), grouped by stage. */
function dockerfileStages(text: string): Instruction[][] {
  const lines = text.replace(/\\\r?\n/g, ' ').split(/\r?\n/);
  const stages: Instruction[][] = [];
  for (const line of lines) {
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#')) continue;
    const [, keyword, args] = /^(\S+)\s*(.*)$/.exec(trimmed)!;
    const instruction = { keyword: keyword!.toUpperCase(), args: args!.trim() };
    if (instruction.keyword === 'FROM') stages.push([]);
    stages.at(-1)?.push(instruction);
  }
  return stages;
}

const dockerfile = dockerfileStages(readFileSync(path.join(PACKAGE_ROOT, 'Dockerfile'), 'utf8'));
const runtimeStage = dockerfile.at(-1)!;
const find = (keyword: string) => runtimeStage.filter((i) => i.keyword === keyword);

/** The runtime stage's ENV, as the container would see it. */
function imageEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const { args } of find('ENV')) for (const [, name, value] of args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=(\S+)/g)) env[name!] = value!;
  return env;
}

/** The exec-form (JSON array) command of CMD, or of HEALTHCHECK's CMD. */
function execForm(args: string): string[] {
  const json = args.slice(args.indexOf('['));
  const parsed = JSON.parse(json) as unknown;
  if (!Array.isArray(parsed) || !parsed.every((a) => typeof a === 'string')) throw new Error(`not an exec-form command: ${args}`);
  return parsed;
}

/** Starts a command from the package root the way the image does: its ENV, then the service's. */
function runAsImage(command: string[], env: Record<string, string>): ServiceProcess {
  const child = spawn(command[0]!, command.slice(1), {
    cwd: PACKAGE_ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...imageEnv(), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const proc = { child, output: () => output, exited };
  running.push(proc);
  return proc;
}

/** Runs the image's HEALTHCHECK command with the given environment; resolves its exit code. */
async function healthcheck(env: Record<string, string>): Promise<number> {
  const [check] = find('HEALTHCHECK');
  const proc = runAsImage(execForm(check!.args), env);
  return (await proc.exited) ?? -1;
}

beforeAll(async () => {
  // Its own database: a worker sweeps every tenant's due jobs, and must not take other files'.
  app = await startTestApp({}, { isolated: true });
  await run('npm', ['run', 'build'], { cwd: PACKAGE_ROOT, timeout: 180_000 });
}, 240_000);

afterAll(async () => {
  await Promise.all(running.map((p) => stop(p, 'SIGKILL')));
  await app?.close();
  await deleteQueueKeys(prefix);
});

describe('the Dockerfile', () => {
  it('builds in stages and runs production dependencies only, as a non-root user', () => {
    expect(dockerfile.length).toBeGreaterThanOrEqual(3);
    expect(runtimeStage[0]!.args).toMatch(/node:20|NODE_IMAGE/);
    expect(find('RUN').some((r) => /npm ci\b.*--omit=dev/.test(r.args))).toBe(true);
    expect(find('COPY').some((c) => /--from=build\s+\/app\/dist\b/.test(c.args))).toBe(true);
    const users = find('USER');
    expect(users).toHaveLength(1);
    expect(users[0]!.args).not.toMatch(/^(root|0)(:|$)/);
    // The runtime stage holds no TypeScript sources and needs no loader.
    expect(find('COPY').some((c) => /^(src|workers)\b/.test(c.args))).toBe(false);
  });

  it('copies only files that exist', () => {
    for (const stage of dockerfile) {
      for (const { args } of stage.filter((i) => i.keyword === 'COPY' && !/--from=/.test(i.args))) {
        const sources = args.split(/\s+/).filter((a) => !a.startsWith('--')).slice(0, -1);
        for (const source of sources) expect(existsSync(path.join(PACKAGE_ROOT, source)), `COPY ${source}`).toBe(true);
      }
    }
  });

  it('names entry points and scripts that the build produces', () => {
    const [cmd] = find('CMD');
    const command = execForm(cmd!.args);
    expect(command).toEqual(['node', 'dist/src/main.js']);
    expect(existsSync(path.join(PACKAGE_ROOT, command[1]!))).toBe(true);
    const scripts = (JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
    for (const name of ['start:prod', 'worker:prod', 'db:migrate:prod', 'token:prod']) {
      const [runner, entry] = scripts[name]!.split(' ');
      expect(runner, name).toBe('node');
      expect(existsSync(path.join(PACKAGE_ROOT, entry!)), `${name}: ${entry}`).toBe(true);
    }
    // What the compiled code reads from the package root at run time is copied into the image.
    for (const needed of ['drizzle', 'openapi.yaml', 'package.json']) {
      expect(find('COPY').some((c) => c.args.split(/\s+/).includes(needed) || c.args.startsWith(`${needed} `)), needed).toBe(true);
    }
    expect(existsSync(path.join(PACKAGE_ROOT, 'dist/test'))).toBe(false);
  });

  it('health-checks /healthz with node alone', () => {
    const [check] = find('HEALTHCHECK');
    const command = execForm(check!.args);
    expect(command[0]).toBe('node');
    expect(command.join(' ')).toContain('/healthz');
  });
});

describe('the compiled entry points, run as the image runs them', () => {
  it('the migrations entry finds drizzle/ from dist/ and exits 0', async () => {
    const migrate = runAsImage(['node', 'dist/src/db/migrate-cli.js'], { DATABASE_URL: app.databaseUrl, AUTH_JWT_SECRET: TEST_JWT_SECRET });
    expect(await migrate.exited, migrate.output()).toBe(0);
    expect(migrate.output()).toMatch(/migrations applied \(postgres\)/);
  });

  it('the API answers /healthz, /docs and the image health check, and stops on SIGTERM', async () => {
    const port = await freePort();
    const [cmd] = find('CMD');
    const api = runAsImage(execForm(cmd!.args), {
      PORT: String(port),
      DATABASE_URL: app.databaseUrl,
      REDIS_URL: TEST_REDIS_URL,
      QUEUE_PREFIX: prefix,
      AUTH_JWT_SECRET: TEST_JWT_SECRET,
      WORKER: 'off',
      MIGRATE_ON_START: 'false',
    });
    await waitForStatus(`http://127.0.0.1:${port}/healthz`, 200, api, 30_000);
    expect((await fetch(`http://127.0.0.1:${port}/docs`)).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${port}/openapi.json`)).status).toBe(200);
    expect(await healthcheck({ PORT: String(port) })).toBe(0);
    expect(await healthcheck({ PORT: String(await freePort()) })).toBe(1);
    api.child.kill('SIGTERM');
    expect(await api.exited).toBe(0);
    expect(api.output()).toMatch(/"msg":"stopped"/);
  });

  it('the worker starts, serves /healthz and /metrics for the health check, and stops on SIGTERM', async () => {
    const port = await freePort();
    // The worker command the Dockerfile documents (`npm run worker:prod` runs the same file).
    const worker = runAsImage(['node', 'dist/workers/extraction.js'], {
      WORKER_METRICS_PORT: String(port),
      DATABASE_URL: app.databaseUrl,
      REDIS_URL: TEST_REDIS_URL,
      QUEUE_PREFIX: prefix,
      AUTH_JWT_SECRET: TEST_JWT_SECRET,
      MIGRATE_ON_START: 'false',
    });
    await waitUntil('the worker to log that it started', () => /"msg":"engram worker started"/.test(worker.output()) || worker.child.exitCode !== null, 30_000);
    expect(worker.output()).toMatch(/"msg":"engram worker started"/);
    await waitForStatus(`http://127.0.0.1:${port}/healthz`, 200, worker, 10_000);
    expect(await healthcheck({ WORKER_METRICS_PORT: String(port) })).toBe(0);
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    expect(metrics).toMatch(/^engram_queue_depth \d+$/m);
    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
    expect(worker.output()).toMatch(/"msg":"worker stopped"/);
  });
});
