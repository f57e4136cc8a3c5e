import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../src/db/paths.js';
import { runEntry, stop, waitForStatus, type ServiceProcess } from './support/process.js';

/**
 * The README's quick start, run as written: `npm start` (no database, Redis or key configured),
 * then the README's shell block, verbatim, against it. If this fails, the README is wrong.
 */
const dataDir = mkdtempSync(path.join(tmpdir(), 'engram-readme-'));
let server: ServiceProcess | undefined;

afterAll(async () => {
  if (server) await stop(server, 'SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
});

function quickStartBlock(): string {
  const readme = readFileSync(path.join(PACKAGE_ROOT, 'README.md'), 'utf8');
  const section = readme.split(/^## Quick start$/m)[1];
  const block = section ? /```sh\n([\s\S]*?)```/.exec(section)?.[1] : undefined;
  if (!block) throw new Error('README.md has no ```sh block under "## Quick start"');
  return block;
}

function runShell(script: string, env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn('bash', ['-euo', 'pipefail', '-c', script], { cwd: PACKAGE_ROOT, env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

it('works verbatim against `npm start` with nothing configured', { timeout: 240_000 }, async () => {
  const block = quickStartBlock();
  const port = /API=http:\/\/127\.0\.0\.1:(\d+)/.exec(block)?.[1];
  expect(port, 'the quick start names the API address').toBeDefined();
  const inUse = await fetch(`http://127.0.0.1:${port}/healthz`).then(
    () => true,
    () => false,
  );
  expect(inUse, `port ${port} is already taken; stop whatever listens there to run this test`).toBe(false);

  server = runEntry('src/main.ts', { DATA_DIR: dataDir, PORT: port!, LOG_LEVEL: 'warn' });
  await waitForStatus(`http://127.0.0.1:${port}/readyz`, 200, server, 120_000);

  const { code, stdout, stderr } = await runShell(block, { DATA_DIR: dataDir });
  expect(code, `the quick start failed:\n${stderr}\n${stdout}`).toBe(0);
  const answers = stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, any>);
  const [added, accepted, job, recalled, erased] = answers;
  expect(added?.memories?.[0]?.content).toBe('Alice is allergic to peanuts');
  expect(accepted).toMatchObject({ status: 'queued' });
  expect(job).toMatchObject({ job_id: accepted!.job_id, status: 'succeeded' });
  expect(job!.result.added).toBeGreaterThanOrEqual(1);
  expect(recalled?.memories?.length).toBeGreaterThan(0);
  expect(recalled!.memories.some((m: { content: string }) => m.content === 'Alice is allergic to peanuts')).toBe(true);
  expect(erased).toMatchObject({ deleted: expect.any(Number) });
  expect(erased!.deleted).toBeGreaterThanOrEqual(2);
  expect(erased!.erasure_id).toMatch(/^[0-9a-f-]{36}$/);
});
