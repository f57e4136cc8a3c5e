import { chmodSync, lstatSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { startScriptedLlm, type ScriptedLlm } from '../support/scripted-llm.js';
import { PACKAGE_ROOT } from '../../src/db/paths.js';
import { freePort, rawHttp, runEntry, runNode, stop, waitForStatus, type ServiceProcess } from '../support/process.js';

/**
 * The zero-setup default as a user meets it: `npm start` with no DATABASE_URL, REDIS_URL or key,
 * as a real process on embedded PGlite with the in-process queue.
 */
const dirs: string[] = [];
const running: ServiceProcess[] = [];
let llm: ScriptedLlm | undefined;

function tempDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'engram-embedded-'));
  dirs.push(dir);
  return dir;
}

function start(env: Record<string, string>): ServiceProcess {
  const proc = runEntry('src/main.ts', { LOG_LEVEL: 'warn', ...env });
  running.push(proc);
  return proc;
}

/** Entries under `dir` (itself included) whose mode is not 0700 for a folder or 0600 for a file. */
function looseModes(dir: string): string[] {
  const loose: string[] = [];
  for (const name of ['', ...readdirSync(dir, { recursive: true, encoding: 'utf8' })]) {
    const stat = lstatSync(path.join(dir, name));
    const mode = stat.mode & 0o777;
    if (!stat.isSymbolicLink() && mode !== (stat.isDirectory() ? 0o700 : 0o600)) loose.push(`${name || '.'} ${mode.toString(8)}`);
  }
  return loose;
}

async function mintToken(dataDir: string, user = 'alice', scope?: string): Promise<string> {
  const cli = runEntry('src/auth/token-cli.ts', { DATA_DIR: dataDir }, ['--tenant', 'demo', '--user', user, ...(scope ? ['--scope', scope] : [])]);
  expect(await cli.exited).toBe(0);
  return cli.output().trim();
}

async function api(base: string, token: string, method: string, route: string, body?: unknown) {
  const res = await fetch(`${base}${route}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, body: (await res.json()) as any };
}

async function waitForJob(base: string, token: string, jobId: string, timeoutMs = 30_000) {
  const started = Date.now();
  for (;;) {
    const job = await api(base, token, 'GET', `/jobs/${jobId}`);
    if (job.body.status === 'succeeded' || job.body.status === 'failed') return job.body;
    if (Date.now() - started > timeoutMs) throw new Error(`job ${jobId} still ${job.body.status}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

afterEach(async () => {
  await Promise.all(running.splice(0).map((p) => stop(p, 'SIGKILL')));
});
afterAll(async () => {
  await llm?.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('npm start with nothing configured', { timeout: 180_000 }, () => {
  it('serves on embedded PGlite, says where everything is, and keeps a 0600 dev secret', async () => {
    const dataDir = tempDir();
    chmodSync(dataDir, 0o755); // as an older version left it
    const port = await freePort();
    const proc = start({ DATA_DIR: dataDir, PORT: String(port) });
    await waitForStatus(`http://127.0.0.1:${port}/readyz`, 200, proc);
    // The embedded database (memory text in its WAL) and the secrets: the owner's alone.
    expect(readdirSync(path.join(dataDir, 'pg')).length).toBeGreaterThan(0);
    expect(looseModes(dataDir)).toEqual([]);
    const banner = proc.output();
    expect(banner).toContain(`http://127.0.0.1:${port}/openapi.json`);
    expect(banner).toMatch(/embedded PostgreSQL \(PGlite \+ pgvector\)/);
    expect(banner).toMatch(/in-process, durable in the database/);
    expect(banner).toMatch(/offline/);
    expect(banner).toContain('npm run token -- --tenant demo --user alice');
    expect(banner.split('\n').filter(Boolean).length).toBeLessThanOrEqual(8);
    expect(statSync(path.join(dataDir, 'dev-jwt-secret')).mode & 0o777).toBe(0o600);

    const token = await mintToken(dataDir);
    const base = `http://127.0.0.1:${port}`;
    const added = await api(base, token, 'POST', '/memories', { memories: [{ content: 'Alice keeps bees' }] });
    expect(added.status).toBe(201);
    const recalled = await api(base, token, 'POST', '/memories/recall', { query: 'bees' });
    expect(recalled.body.memories[0].content).toBe('Alice keeps bees');

    // An operator token from the same CLI reaches /admin/queues (404 here: no Redis); a tenant's is refused.
    const operator = await mintToken(dataDir, 'ops', 'engram:operator');
    expect((await api(base, operator, 'GET', '/admin/queues')).status).toBe(404);
    expect((await api(base, token, 'GET', '/admin/queues')).status).toBe(403);

    // The real entry point serves through serveHttp: requests that never reach the app (refused by
    // the HTTP parser or the adapter; test/integration/http-server.test.ts has every case) still
    // get a problem+json answer, not an empty 400, and the connection closes.
    for (const request of ['GET /memories HTTP/1.1\r\nHost: x\r\nNot a header\r\n\r\n', 'GET /a\\b HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n']) {
      const answer = await rawHttp(port, request);
      expect(answer.status, request).toBe(400);
      expect(answer.headers, request).toContain('content-type: application/problem+json');
      expect(answer.headers, request).toContain('connection: close');
      expect(JSON.parse(answer.body), request).toMatchObject({ status: 400, code: 'validation_failed', request_id: expect.any(String) });
    }
  });

  it('keeps data and accepted jobs across a SIGKILL: the job runs after the restart', async () => {
    llm = await startScriptedLlm();
    const dataDir = tempDir();
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    // The first process hangs in the model call, so the job is mid-flight when it is killed.
    llm.onChat(() => ({ delayMs: 60_000, then: { json: { facts: [] } } }));
    const env = {
      DATA_DIR: dataDir,
      PORT: String(port),
      OPENAI_BASE_URL: llm.url,
      EMBEDDING_DIMENSIONS: '256',
      JOB_LEASE_MS: '1500',
      LLM_TIMEOUT_MS: '120000',
    };
    const first = start(env);
    await waitForStatus(`${base}/readyz`, 200, first);
    const token = await mintToken(dataDir);
    const added = await api(base, token, 'POST', '/memories', { memories: [{ content: 'Alice grows tomatoes' }] });
    expect(added.status).toBe(201);
    const accepted = await api(base, token, 'POST', '/memories/extract', {
      messages: [{ role: 'user', content: 'I adopted a cat named Miso.' }],
    });
    expect(accepted.status).toBe(202);
    const deadline = Date.now() + 20_000;
    while (llm.chatRequests('extraction').length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(llm.chatRequests('extraction').length).toBe(1);
    first.child.kill('SIGKILL');
    await first.exited;

    llm.onChat(null); // the default handler answers at once with the offline extractor's facts
    const second = start(env);
    await waitForStatus(`${base}/readyz`, 200, second);
    const job = await waitForJob(base, token, accepted.body.job_id);
    expect(job.status).toBe('succeeded');
    expect(job.result.added).toBe(1);
    const list = await api(base, token, 'GET', '/memories');
    const contents = list.body.memories.map((m: { content: string }) => m.content);
    expect(contents).toContain('Alice grows tomatoes');
    expect(contents.filter((c: string) => /Miso/.test(c))).toHaveLength(1);
  });

  it("runs as package.json's start script says, one Node process with its flags, and stops cleanly on SIGTERM", async () => {
    const script = (JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start;
    // One process under npm: a wrapper (tsx's CLI) would hold tens of MiB of its own for the server's life.
    const [command, ...argv] = script.split(/\s+/);
    expect(command).toBe('node');
    const dataDir = tempDir();
    const port = await freePort();
    const proc = runNode(argv, { DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: 'warn' });
    running.push(proc);
    await waitForStatus(`http://127.0.0.1:${port}/readyz`, 200, proc);
    expect(readdirSync(path.join(dataDir, 'pg'))).toContain('PG_VERSION');
    expect(await stop(proc, 'SIGTERM')).toBe(0);
  });

  it('refuses a second process on the same DATA_DIR in one line, and takes over the lock of one that died', async () => {
    // Two processes on one PGlite folder each saw only their own writes; one side's were lost on restart.
    const dataDir = tempDir();
    const port = await freePort();
    const first = start({ DATA_DIR: dataDir, PORT: String(port) });
    await waitForStatus(`http://127.0.0.1:${port}/readyz`, 200, first);
    const second = start({ DATA_DIR: dataDir, PORT: String(await freePort()) });
    expect(await second.exited).toBe(1);
    expect(second.output().trim().split('\n')).toEqual([expect.stringMatching(/^engram failed to start: DATA_DIR .+ is in use by process \d+ /)]);
    expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
    const migrate = runEntry('src/db/migrate-cli.ts', { DATA_DIR: dataDir });
    expect(await migrate.exited).not.toBe(0);
    expect(migrate.output()).toMatch(/is in use by process/);
    await stop(first, 'SIGKILL'); // its lock stays behind, naming a process that is gone
    const third = start({ DATA_DIR: dataDir, PORT: String(port) });
    await waitForStatus(`http://127.0.0.1:${port}/readyz`, 200, third);
    expect(await stop(third, 'SIGTERM')).toBe(0);
    expect(readdirSync(dataDir)).not.toContain('engram.lock');
  });

  it("serves the local semantic embedder under the start script's flags, next to PGlite's WebAssembly", async () => {
    // The model's weights were decoded before TensorFlow.js's WebAssembly backend had started: every
    // add answered 503. One V8 worker thread (the start script's) lost that race every time.
    const script = (JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start;
    const [, ...argv] = script.split(/\s+/);
    const dataDir = tempDir();
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const proc = runNode(argv, { DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: 'warn', EMBEDDINGS: 'local' });
    running.push(proc);
    await waitForStatus(`${base}/readyz`, 200, proc);
    const token = await mintToken(dataDir);
    const added = await api(base, token, 'POST', '/memories', { memories: [{ content: 'User bought a new car last week' }, { content: 'User enjoys baking sourdough bread' }] });
    expect(added.status).toBe(201);
    const recalled = await api(base, token, 'POST', '/memories/recall', { query: 'automobile purchase', limit: 1, min_relevance: 0 });
    expect(recalled.status).toBe(200);
    expect(recalled.body.memories[0].content).toBe('User bought a new car last week');
  });

  it('refuses a production configuration without a secret, naming the variable in one line', async () => {
    const proc = runEntry('src/main.ts', { DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/engram_test', DATA_DIR: tempDir() });
    expect(await proc.exited).toBe(1);
    const lines = proc.output().trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/AUTH_JWT_SECRET/);
  });

  it('refuses a DATA_DIR other users can write, in one line naming it', async () => {
    const dataDir = tempDir();
    chmodSync(dataDir, 0o777);
    const proc = runEntry('src/main.ts', { DATA_DIR: dataDir, PORT: String(await freePort()) });
    expect(await proc.exited).toBe(1);
    const lines = proc.output().trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`DATA_DIR ${dataDir} is writable by other users`);
  });

  it('refuses a malformed value, naming the variable in one line', async () => {
    const proc = runEntry('src/main.ts', { PORT: 'eighty', DATA_DIR: tempDir() });
    expect(await proc.exited).toBe(1);
    const lines = proc.output().trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^Invalid configuration: PORT /);
  });
});
