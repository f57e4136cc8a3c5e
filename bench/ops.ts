/**
 * `npm run bench -- ops [--quick] [--backend postgres|pglite|both] [--profile DIR] [--n CALLS]
 * [--routes add-one,add-100,recall-@100,recall-@1000,get,list,extract-accept]`: the per-call cost of
 * each route, against the database's floor.
 *
 * Starts the real server (`src/main.ts`, lexical embedder, logs at `info` to a file) on each backend
 * and drives it over HTTP on loopback with keep-alive (undici): add one memory, add 100,
 * recall (limit 10) for users with 100 and 1,000 memories, get one, list a page, and accept an
 * extraction (202). For each: p50/p95/p99 at concurrency 1, and throughput at concurrency 8 (each
 * writer its own user, so no user lock is contended). Embedded, as `npm start` runs it (its Node
 * flags, the worker inline); PostgreSQL as deployed (docker-compose.yml): Node's defaults, the API
 * with WORKER=off and the extraction worker in a process of its own over Redis (BENCH_REDIS_URL,
 * else the tests'), so a 202 is not slowed by its job being run on the API's event loop.
 *
 * The floor (PostgreSQL only): the statements each route sends, captured from an in-process copy
 * of the service through postgres.js's statement hook (after one uncaptured call, so the tenant's
 * settings are cached as in steady state), from the request's first BEGIN to its last COMMIT sent
 * before the answer. They are replayed straight through postgres.js with no HTTP, auth, validation
 * or query building, in the same round trips as the service: statements the service sent with no
 * reply from the database in between go down together, the next group after their replies (a
 * read-only COMMIT is not awaited), with fresh ids and content for the writes. Floor and HTTP calls
 * alternate call by call, so both see the same load. Each route's p50 is printed as a multiple of
 * its floor, with the goal p50 ≤ 1.5 × floor + 0.5 ms.
 *
 * `--profile DIR` runs the server under `--cpu-prof` and prints its CPU self-time by area (the
 * samples from the first request on).
 *
 * PostgreSQL: BENCH_DATABASE_URL, else TEST_DATABASE_URL or its default (a superuser, as `npm test` uses). Each run
 * uses a tenant of its own and leaves its rows behind.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { spawn, type ChildProcess } from 'node:child_process';
import { Socket } from 'node:net';
import { Pool } from 'undici';
import postgres from 'postgres';
import pino from 'pino';
import { signDevToken } from '../src/auth/sign.js';
import { loadConfig } from '../src/config.js';
import { openPostgres } from '../src/db/postgres.js';
import { PACKAGE_ROOT } from '../src/db/paths.js';
import { contentHash } from '../src/extraction/normalise.js';
import { createRuntime } from '../src/runtime.js';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../test/support/env.js';
import { freePort } from '../test/support/process.js';
import { summariseProfile } from './profile-areas.js';

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    backend: { type: 'string', default: 'both' },
    profile: { type: 'string' },
    n: { type: 'string' },
    routes: { type: 'string' },
  },
});
const N = Number(values.n ?? (values.quick ? 150 : 600));
const C8_REQUESTS = values.quick ? 320 : 1600;
const WARMUP = values.quick ? 20 : 50;
const backends = values.backend === 'both' ? ['postgres', 'pglite'] : [values.backend!];
// As `npm test`: the local PostgreSQL the tests use unless told otherwise.
const databaseUrl = process.env.BENCH_DATABASE_URL ?? TEST_DATABASE_URL;
const redisUrl = process.env.BENCH_REDIS_URL ?? TEST_REDIS_URL;
// The embedded server runs under the start script's Node flags (package.json), as `npm start` serves
// it; the PostgreSQL one as deployed (`npm run start:prod`, docker-compose.yml), with Node's defaults.
const START_FLAGS = (JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start
  .split(/\s+/)
  .filter((word) => word.startsWith('--') && !word.startsWith('--import'));

const SECRET = randomBytes(32).toString('hex');
const ISSUER = 'memory-layer';
const AUDIENCE = 'memory-api';
const TENANT = `ops-${randomBytes(4).toString('hex')}`;
const SCOPE = 'memories:read memories:write memories:delete memories:act_as';

// ---------------------------------------------------------------------------------------------
// Requests

const WORDS = (
  'coffee tea berlin paris nurse teacher guitar piano dog cat allergy peanuts hiking running marathon sister brother ' +
  'birthday october june vegan pasta sushi python rust garden roses book novel movie jazz concert flight tokyo ' +
  'doctor dentist meeting project deadline salary rent apartment bicycle car train beach mountain winter summer'
).split(' ');
function sentence(seed: number): string {
  let x = seed * 2654435761 + 12345;
  const pick = () => {
    x = (x * 1103515245 + 12345) % 2147483648;
    return WORDS[x % WORDS.length]!;
  };
  return `The user mentioned ${pick()} and ${pick()} while talking about ${pick()} near ${pick()}`;
}

interface HttpCall {
  method: 'GET' | 'POST';
  path: string;
  body?: unknown;
  status: number;
}

const addOne = (user: string, tag: string): HttpCall => ({
  method: 'POST',
  path: '/memories',
  body: { user_id: user, memories: [{ content: `${sentence(tag.length)} note ${tag}`, metadata: { source: 'bench' } }] },
  status: 201,
});
const addHundred = (user: string, tag: string): HttpCall => ({
  method: 'POST',
  path: '/memories',
  body: { user_id: user, memories: Array.from({ length: 100 }, (_, i) => ({ content: `${sentence(i)} item ${i} batch ${tag}` })) },
  status: 201,
});
const QUERIES = ['What does the user drink in the morning?', 'Where does the user live?', 'Which pets does the user have?', 'What music does the user like?'];
const recallOf = (user: string, i: number): HttpCall => ({
  method: 'POST',
  path: '/memories/recall',
  body: { user_id: user, query: QUERIES[Math.abs(i) % QUERIES.length], limit: 10 },
  status: 200,
});
// A question only: the accepted job extracts nothing, so the inline worker's share stays small.
const extractOf = (user: string): HttpCall => ({
  method: 'POST',
  path: '/memories/extract',
  body: { user_id: user, messages: [{ role: 'user', content: 'What time is it in Tokyo right now?' }] },
  status: 202,
});

interface Route {
  name: string;
  /** The i-th call (worker w at concurrency 8, else 0); a write's content carries `tag` when given. */
  call: (i: number, worker: number, tag?: string) => HttpCall;
  /** A write replays with fresh ids and content. */
  writes: boolean;
  /** The tag written into the captured call's content, replaced on each replay. */
  captureTag?: string;
}

const uniqueTag = (i: number, w: number) => `h${i}x${w}x${randomBytes(3).toString('hex')}`;

function routes(memoryId: string): Route[] {
  return [
    { name: 'add one', call: (i, w, tag) => addOne(`add1-${w}`, tag ?? uniqueTag(i, w)), writes: true, captureTag: 'capturetag' },
    { name: 'add 100', call: (i, w, tag) => addHundred(`add100-${w}`, tag ?? uniqueTag(i, w)), writes: true, captureTag: 'capturetag' },
    { name: 'recall @100', call: (i) => recallOf('u100', i), writes: false },
    { name: 'recall @1000', call: (i) => recallOf('u1000', i), writes: false },
    { name: 'get', call: () => ({ method: 'GET', path: `/memories/${memoryId}`, status: 200 }), writes: false },
    { name: 'list', call: () => ({ method: 'GET', path: '/memories?user_id=u1000&limit=20', status: 200 }), writes: false },
    { name: 'extract accept', call: (_, w) => extractOf(`ex-${w}`), writes: true },
  ];
}

// ---------------------------------------------------------------------------------------------
// The server

interface Server {
  proc: ChildProcess;
  origin: string;
  logFile: string;
  exited: Promise<void>;
  /** SIGTERM to the server and its worker process, if any. */
  stop: () => void;
}

async function startServer(backend: string, workDir: string, profileDir: string | undefined): Promise<Server> {
  const port = await freePort();
  const logFile = path.join(workDir, `server-${backend}.log`);
  const fd = openSync(logFile, 'w');
  const env: Record<string, string | undefined> = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    EMBEDDINGS: 'lexical',
    AUTH_JWT_SECRET: SECRET,
    LOG_LEVEL: 'info',
    ...(backend === 'postgres'
      ? { DATABASE_URL: databaseUrl, REDIS_URL: redisUrl, QUEUE_PREFIX: TENANT }
      : { DATA_DIR: path.join(workDir, 'data') }),
  };
  const nodeArgs = [...(backend === 'postgres' ? [] : START_FLAGS), ...(profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : [])];
  const proc = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', 'src/main.ts'], {
    cwd: PACKAGE_ROOT,
    env: { ...env, PORT: String(port), ...(backend === 'postgres' ? { WORKER: 'off' } : {}) },
    stdio: ['ignore', fd, fd],
  });
  closeSync(fd);
  const origin = `http://127.0.0.1:${port}`;
  const started = Date.now();
  let worker: ChildProcess | undefined;
  const stop = () => {
    proc.kill('SIGTERM');
    worker?.kill('SIGTERM');
  };
  try {
    await untilReady(proc, origin, logFile, started);
    // The worker once the API is ready (and has migrated the database), so each one's failure to start is told apart.
    if (backend === 'postgres') {
      const workerFd = openSync(logFile, 'a');
      worker = spawn(process.execPath, ['--import', 'tsx', 'workers/extraction.ts'], { cwd: PACKAGE_ROOT, env, stdio: ['ignore', workerFd, workerFd] });
      closeSync(workerFd);
      await new Promise((r) => setTimeout(r, 1500));
      if (worker.exitCode !== null) throw new Error(`the worker exited (${worker.exitCode}):\n${readFileSync(logFile, 'utf8').slice(-2000)}`);
    }
  } catch (error) {
    stop();
    throw error;
  }
  const exited = Promise.all([proc, ...(worker ? [worker] : [])].map((p) => (p.exitCode !== null ? Promise.resolve() : new Promise<void>((resolve) => p.once('exit', () => resolve()))))).then(() => undefined);
  return { proc, origin, logFile, exited, stop };
}

async function untilReady(proc: ChildProcess, origin: string, logFile: string, started: number): Promise<void> {
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`the server exited (${proc.exitCode}):\n${readFileSync(logFile, 'utf8').slice(-2000)}`);
    if (Date.now() - started > 120_000) throw new Error('the server did not become ready within 120 s');
    try {
      if ((await fetch(`${origin}/readyz`)).status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The HTTP stack alone (bench/bare-http.ts), under the same Node flags as the backend's server. */
async function startBareHttp(backend: string): Promise<{ origin: string; stop: () => Promise<void> }> {
  const proc = spawn(process.execPath, [...(backend === 'postgres' ? [] : START_FLAGS), '--import', 'tsx', 'bench/bare-http.ts'], {
    cwd: PACKAGE_ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const port = await new Promise<string>((resolve, reject) => {
    proc.stdout!.once('data', (chunk: Buffer) => resolve(chunk.toString().trim()));
    proc.once('exit', (code) => reject(new Error(`bench/bare-http.ts exited (${code})`)));
  });
  return {
    origin: `http://127.0.0.1:${port}`,
    stop: async () => {
      proc.kill('SIGTERM');
      await exited;
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The client

function client(origin: string, token: string) {
  const pool = new Pool(origin, { connections: 8, pipelining: 1, keepAliveTimeout: 60_000 });
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  return {
    async send(call: HttpCall, answerSize?: number): Promise<string> {
      const res = await pool.request({
        method: call.method,
        path: call.path,
        headers: answerSize === undefined ? headers : { ...headers, 'x-size': String(answerSize) },
        ...(call.body !== undefined ? { body: JSON.stringify(call.body) } : {}),
      });
      const text = await res.body.text();
      if (res.statusCode !== (answerSize === undefined ? call.status : 200)) throw new Error(`${call.method} ${call.path} answered ${res.statusCode}: ${text.slice(0, 300)}`);
      return text;
    },
    close: () => pool.close(),
  };
}

// ---------------------------------------------------------------------------------------------
// The floor

interface Statement {
  text: string;
  parameters: unknown[];
  /** Statements of one round trip share it: the service sent them with no reply read in between. */
  roundTrip: number;
}

/** The statements of one request, as the service sent them, and how to replay them. */
class Floor {
  constructor(
    private readonly sql: postgres.Sql,
    private readonly statements: Statement[],
    private readonly fresh: (() => (value: unknown) => unknown) | undefined,
  ) {}

  /** Round trips the replay takes (the COMMIT of a read-only transaction is not waited for). */
  get roundTrips(): number {
    return new Set(this.statements.map((s) => s.roundTrip)).size;
  }

  /** The replay's parameters, prepared before the clock starts. */
  prepare(): Statement[] {
    if (!this.fresh) return this.statements;
    const map = this.fresh();
    return this.statements.map((s) => ({ ...s, parameters: s.parameters.map(map) }));
  }

  async run(statements: Statement[]): Promise<void> {
    const reserved = await this.sql.reserve();
    try {
      let readOnly = false;
      for (let k = 0; k < statements.length; ) {
        const group: Array<Promise<unknown>> = [];
        const roundTrip = statements[k]!.roundTrip;
        for (; k < statements.length && statements[k]!.roundTrip === roundTrip; k++) {
          const s = statements[k]!;
          if (/^begin/i.test(s.text)) readOnly = /^begin read only/i.test(s.text);
          const sent = reserved.unsafe(s.text, s.parameters as never[], { prepare: s.parameters.length > 0 }).execute();
          // The service does not wait for a read-only transaction's COMMIT.
          if (readOnly && /^commit/i.test(s.text)) sent.catch(() => {});
          else group.push(sent);
        }
        await Promise.all(group);
      }
    } finally {
      reserved.release();
    }
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Fresh ids, and content with the capture's tag replaced (its hash with it), for each replay of a write. */
function freshener(captured: Statement[], tag: string | undefined): () => (value: unknown) => unknown {
  const contents = new Set<string>();
  if (tag) for (const s of captured) for (const p of s.parameters) if (typeof p === 'string' && p.includes(tag) && !p.startsWith('{') && !p.startsWith('[')) contents.add(p);
  let n = 0;
  return () => {
    const next = `r${process.pid}x${n++}x${randomBytes(3).toString('hex')}`;
    const exact = new Map<string, string>();
    if (tag) for (const c of contents) exact.set(contentHash(c), contentHash(c.replaceAll(tag, next)));
    return (value) => {
      if (typeof value !== 'string') return value;
      const hit = exact.get(value);
      if (hit) return hit;
      if (UUID.test(value)) {
        const fresh = randomUUID();
        exact.set(value, fresh);
        return fresh;
      }
      return tag && value.includes(tag) ? value.replaceAll(tag, next) : value;
    };
  };
}

/**
 * Counts the replies read from any socket: a statement sent after a reply was read starts a new
 * round trip. (During capture the only sockets are the database's; the request goes in-process.)
 */
let repliesRead = 0;
function countRepliesRead(): void {
  const emit = Socket.prototype.emit;
  Socket.prototype.emit = function (this: Socket, event: string | symbol, ...args: unknown[]) {
    if (event === 'data') repliesRead++;
    return emit.apply(this, [event, ...args] as Parameters<typeof emit>);
  } as typeof emit;
}

/**
 * An in-process copy of the service on the same database, with postgres.js's statement hook:
 * each route's call once uncaptured (the settings cache warms), then once more, and the
 * statements it sent from its first BEGIN to its last COMMIT before the answer, in round trips.
 */
async function captureFloors(list: Route[], token: string): Promise<Map<string, Floor>> {
  countRepliesRead();
  let recording: Statement[] | undefined;
  let lastRead = -1;
  let roundTrip = 0;
  const database = await openPostgres({
    url: databaseUrl!,
    debug: (_connection, text, parameters) => {
      if (!recording) return;
      if (repliesRead !== lastRead) {
        lastRead = repliesRead;
        roundTrip++;
      }
      recording.push({ text, parameters: [...parameters], roundTrip });
    },
  });
  const config = loadConfig({ DATABASE_URL: databaseUrl, AUTH_JWT_SECRET: SECRET, EMBEDDINGS: 'lexical', MIGRATE_ON_START: 'false' });
  const runtime = await createRuntime(config, { database, logger: pino({ level: 'silent' }) });
  const sql = postgres(databaseUrl!, { max: 4, onnotice: () => {}, connection: { application_name: 'engram-floor' } });
  // The service's client as drizzle sets it up: times and JSON pass through as text, both ways.
  const transparent = (value: unknown) => value;
  for (const type of ['1184', '1082', '1083', '1114', '1182', '1185', '1115', '1231']) {
    sql.options.parsers[type as never] = transparent as never;
    sql.options.serializers[type as never] = transparent as never;
  }
  sql.options.serializers['114' as never] = transparent as never;
  sql.options.serializers['3802' as never] = transparent as never;
  const floors = new Map<string, Floor>();
  const send = async (call: HttpCall, name: string) => {
    const body = call.body;
    const res = await runtime.app.request(call.path, {
      method: call.method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    if (res.status !== call.status) throw new Error(`capture of ${name}: ${res.status} ${await res.text()}`);
  };
  try {
    for (const route of list) {
      await send(route.call(-1000, 0), route.name);
      // The captured write carries the tag (its content is replaced on every replay).
      recording = [];
      await send(route.call(0, 0, route.captureTag), route.name);
      const sent = recording;
      recording = undefined;
      const begin = sent.findIndex((s) => /^begin/i.test(s.text));
      const end = sent.findLastIndex((s) => /^commit/i.test(s.text));
      if (begin < 0 || end < begin) throw new Error(`capture of ${route.name}: no transaction seen`);
      const statements = sent.slice(begin, end + 1);
      floors.set(route.name, new Floor(sql, statements, route.writes ? freshener(statements, route.captureTag) : undefined));
    }
  } finally {
    await runtime.close();
    await database.close();
  }
  return floors;
}

// ---------------------------------------------------------------------------------------------
// Measuring

const percentile = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
};

/** A process's CPU time so far (user + system), in ms, from /proc (clock ticks of 10 ms). */
function processCpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

async function timed(f: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await f();
  return performance.now() - t;
}

interface RouteResult {
  route: string;
  p50: number;
  p95: number;
  p99: number;
  c8_per_s: number;
  /** The server process's CPU per call at concurrency 1 (robust to other load on the machine). */
  server_cpu_ms: number;
  /** This process's CPU per floor call: postgres.js's own share of the work. */
  floor_cpu_ms?: number;
  floor_p50?: number;
  floor_p95?: number;
  /** Round trips to the database the route (and so its floor) takes. */
  floor_round_trips?: number;
  /** The same call to hono on @hono/node-server doing nothing (bench/bare-http.ts), answered with as many bytes. */
  http_p50: number;
  /** p50 − floor p50 − http p50: what the service's own code adds (auth, validation, query building, ranking, JSON, logging). */
  own_ms?: number;
  multiple?: number;
  goal_ms?: number;
  within_goal?: boolean;
}

async function measureBackend(backend: string, workDir: string): Promise<RouteResult[]> {
  const profileDir = values.profile ? path.resolve(values.profile, backend) : undefined;
  if (profileDir) mkdirSync(profileDir, { recursive: true });
  const server = await startServer(backend, workDir, profileDir);
  const bareServer = await startBareHttp(backend);
  const token = await signDevToken({ secret: SECRET, issuer: ISSUER, audience: AUDIENCE, tenantClaim: 'tenant_id', tenant: TENANT, user: 'bench', scope: SCOPE, ttlSeconds: 3600 });
  const http = client(server.origin, token);
  const bare = client(bareServer.origin, token);
  const results: RouteResult[] = [];
  try {
    // Users with 100 and 1,000 memories (a backend's first run in this tenant).
    for (let b = 0; b < 10; b++) {
      const batch = Array.from({ length: 100 }, (_, i) => ({ content: `${sentence(b * 100 + i)} fact ${b * 100 + i}`, importance: 1 + ((b * 100 + i) % 10) }));
      await http.send({ method: 'POST', path: '/memories', body: { user_id: 'u1000', memories: batch }, status: 201 });
      if (b === 0) await http.send({ method: 'POST', path: '/memories', body: { user_id: 'u100', memories: batch }, status: 201 });
    }
    const firstPage = JSON.parse(await http.send({ method: 'GET', path: '/memories?user_id=u100&limit=1', status: 200 })) as { memories: Array<{ id: string }> };
    const wanted = values.routes?.split(',').map((r) => r.trim());
    const list = routes(firstPage.memories[0]!.id).filter((r) => !wanted || wanted.includes(r.name.replace(' ', '-')));
    const floors = backend === 'postgres' ? await captureFloors(list, token) : undefined;

    for (const route of list) {
      const floor = floors?.get(route.name);
      const n = route.name === 'add 100' ? Math.max(20, Math.floor(N / 5)) : N;
      let answerSize = 2;
      for (let i = 0; i < WARMUP; i++) {
        answerSize = Buffer.byteLength(await http.send(route.call(-1 - i, 0)));
        if (floor) await floor.run(floor.prepare());
        await bare.send(route.call(-1 - i, 0), answerSize);
      }
      const httpMs: number[] = [];
      const bareMs: number[] = [];
      const floorMs: number[] = [];
      let floorCpuUs = 0;
      const serverCpuBefore = processCpuMs(server.proc.pid!);
      for (let i = 0; i < n; i++) {
        const call = route.call(i, 0);
        httpMs.push(await timed(() => http.send(call)));
        bareMs.push(await timed(() => bare.send(call, answerSize)));
        if (floor) {
          const statements = floor.prepare();
          const cpu = process.cpuUsage();
          floorMs.push(await timed(() => floor.run(statements)));
          const used = process.cpuUsage(cpu);
          floorCpuUs += used.user + used.system;
        }
      }
      const serverCpuMs = (processCpuMs(server.proc.pid!) - serverCpuBefore) / n;
      const c8Total = route.name === 'add 100' ? Math.floor(C8_REQUESTS / 5) : C8_REQUESTS;
      let next = 0;
      const c8Started = performance.now();
      await Promise.all(
        Array.from({ length: 8 }, async (_, worker) => {
          for (let i = next++; i < c8Total; i = next++) await http.send(route.call(i, worker + 1));
        }),
      );
      const c8PerS = (c8Total / (performance.now() - c8Started)) * 1000;
      const result: RouteResult = {
        route: route.name,
        p50: percentile(httpMs, 0.5),
        p95: percentile(httpMs, 0.95),
        p99: percentile(httpMs, 0.99),
        c8_per_s: Math.round(c8PerS),
        server_cpu_ms: serverCpuMs,
        http_p50: percentile(bareMs, 0.5),
      };
      if (floorMs.length > 0) {
        result.floor_cpu_ms = floorCpuUs / 1000 / n;
        result.floor_p50 = percentile(floorMs, 0.5);
        result.floor_p95 = percentile(floorMs, 0.95);
        result.floor_round_trips = floor?.roundTrips;
        result.multiple = result.p50 / result.floor_p50;
        result.goal_ms = 1.5 * result.floor_p50 + 0.5;
        result.within_goal = result.p50 <= result.goal_ms;
        result.own_ms = result.p50 - result.floor_p50 - result.http_p50;
      }
      results.push(result);
    }
  } finally {
    await http.close();
    await bare.close();
    await bareServer.stop();
    server.stop();
    await server.exited;
  }
  print(backend, results);
  if (profileDir) {
    const files = readdirSync(profileDir).filter((f) => f.endsWith('.cpuprofile'));
    for (const f of files) {
      const summary = summariseProfile(JSON.parse(readFileSync(path.join(profileDir, f), 'utf8')));
      if (!summary) continue;
      console.log(`\nCPU self-time by area, ${backend} server (${path.join(profileDir, f)}), from the first request on:`);
      console.log(summary);
    }
  }
  return results;
}

const ms = (x: number | undefined) => (x === undefined ? '—' : x.toFixed(2));
function print(backend: string, results: RouteResult[]) {
  console.log(`\n${backend} backend, lexical embedder: ${N} calls per route at concurrency 1 (add 100: ${Math.max(20, Math.floor(N / 5))}), throughput at concurrency 8`);
  console.log('(cpu ms: the server process\'s CPU per call at concurrency 1; floor cpu: postgres.js\'s own CPU per replay;');
  console.log(' http p50: the same call to hono + @hono/node-server doing nothing; own: p50 − floor p50 − http p50, the service\'s code)');
  console.log('route            p50 ms  p95 ms  p99 ms   c8 req/s  cpu ms | trips  floor p50  floor p95  floor cpu  p50/floor  goal ms  ok | http p50  own ms');
  for (const r of results) {
    console.log(
      `${r.route.padEnd(15)} ${ms(r.p50).padStart(7)} ${ms(r.p95).padStart(7)} ${ms(r.p99).padStart(7)} ${String(r.c8_per_s).padStart(10)} ${ms(r.server_cpu_ms).padStart(7)} | ` +
        `${String(r.floor_round_trips ?? '—').padStart(5)} ${ms(r.floor_p50).padStart(10)} ${ms(r.floor_p95).padStart(10)} ${ms(r.floor_cpu_ms).padStart(10)} ${(r.multiple === undefined ? '—' : `${r.multiple.toFixed(2)}×`).padStart(10)} ` +
        `${ms(r.goal_ms).padStart(8)}  ${(r.within_goal === undefined ? '—' : r.within_goal ? 'yes' : 'NO').padEnd(3)} | ${ms(r.http_p50).padStart(8)} ${ms(r.own_ms).padStart(7)}`,
    );
  }
}

const workDir = mkdtempSync(path.join(tmpdir(), 'engram-ops-'));
const loadBefore = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
const all: Record<string, RouteResult[]> = {};
try {
  for (const backend of backends) all[backend] = await measureBackend(backend, workDir);
} finally {
  rmSync(workDir, { recursive: true, force: true });
}
const loadAfter = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
console.log(`\nload average before ${loadBefore}, after ${loadAfter}`);
console.log(JSON.stringify({ bench: 'ops', quick: values.quick, calls: N, load_before: loadBefore, load_after: loadAfter, results: all }));
process.exit(0);
