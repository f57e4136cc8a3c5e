/**
 * Recall quality on LoCoMo (Maharana et al., 2024): the retrieval task of the data folder's README.
 * Each conversation is one user; every turn is stored as one memory through `POST /memories`
 * (batches of at most 1,000, `occurred_at` and `metadata.source_id` set, no LLM), then every
 * question goes through `POST /memories/recall` with `as_of` and `limit` = the largest cut-off.
 * Prints recall@k, hit@k and MRR@10 per category and overall, ingest throughput and the
 * server-side recall latency, then writes the figures as JSON.
 *
 * "Unrelated questions": every question asked again at limit 10 against another conversation's
 * user (the next one in the data's order, `as_of` that user's own questions' time), where no
 * memory is the answer: the mean number of memories that come back, and how often none does.
 * That is what the relevance floor (`min_relevance`) is for; without one it is always 10.
 *
 *   npm run bench:locomo -- --data <locomo-dev dir> [--k 5,10,20,50]
 *     [--weights relevance|default|<recency>,<importance>,<relevance>] [--half-life <hours>]
 *     [--min-relevance <0-1>] [--backend postgres|pglite] [--out figures.json]
 *
 * `--weights relevance` sends {recency: 0, importance: 0, relevance: 1}; `default` sends no
 * weights (the service's defaults). `--half-life` sends `recency_half_life_hours` (else the
 * service's default), `--min-relevance` sends `min_relevance` (else the service's default).
 * EMBEDDINGS (`EMBEDDINGS=lexical` or `local`; unset: the service's default), EMBEDDING_DIMENSIONS,
 * EMBEDDING_MODEL, OPENAI_API_KEY, OPENAI_BASE_URL, RECALL_HALF_LIFE_HOURS and RECALL_MIN_RELEVANCE
 * pass through from the environment (so each embedder can be measured); nothing else does. The
 * data is CC BY-NC 4.0: it is read from its folder and never
 * copied here.
 *
 * Backends: `postgres` (default) needs the test services (`bash scripts/test-services.sh`) and
 * runs in a database of its own (cloned from the migrated test template when it exists, migrated
 * either way, dropped at the end); `pglite` runs the embedded database in memory.
 *
 * After the load the table is VACUUM ANALYZEd (as autovacuum would soon do in service). Latency is
 * measured in-process around `app.request()`: auth, validation, query embedding, SQL, scoring and
 * JSON serialisation; no socket, no client-side parsing. It is measured at the run's limit and
 * again, timing only, at the API's default limit 10. The machine's load average is recorded with
 * it, since other work on the machine moves these figures.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pino from 'pino';
import postgres from 'postgres';
import { signDevToken } from '../src/auth/sign.js';
import { loadConfig, minRelevanceFor } from '../src/config.js';
import { contentHash } from '../src/extraction/normalise.js';
import { createRuntime, type Runtime } from '../src/runtime.js';
import { VACUUM_AFTER_LOAD } from './bench-runtime.js';
import { TEMPLATE_DB, adminUrl, databaseUrl } from '../test/support/env.js';

const BATCH = 1000;
const JWT_SECRET = `bench-locomo-${randomUUID()}-${randomUUID()}`;
const TENANT = 'bench-locomo';
const CATEGORY_ORDER = ['single-hop', 'multi-hop', 'temporal', 'open-domain'];

// ---------------------------------------------------------------------------------------------
// Options

const USAGE = `usage: npm run bench:locomo -- --data <dir> [--k 5,10,20,50]
  [--weights relevance|default|<recency>,<importance>,<relevance>] [--half-life <hours>]
  [--min-relevance <0-1>] [--backend postgres|pglite] [--out figures.json]`;

function fail(message: string): never {
  process.stderr.write(`bench:locomo: ${message}\n${USAGE}\n`);
  process.exit(2);
}

function readOptions() {
  try {
    return parseArgs({
      options: {
        data: { type: 'string' },
        k: { type: 'string', default: '5,10,20,50' },
        weights: { type: 'string', default: 'relevance' },
        'half-life': { type: 'string' },
        'min-relevance': { type: 'string' },
        backend: { type: 'string', default: 'postgres' },
        out: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    }).values;
  } catch (error) {
    fail((error as Error).message.split('\n')[0]!);
  }
}

const values = readOptions();
if (values.help) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
if (!values.data) fail('--data <dir> is required: a directory of the LoCoMo dev split');
const dataDir = path.resolve(values.data);
const cutoffs = [...new Set(values.k!.split(',').map((s) => Number(s.trim())))].sort((a, b) => a - b);
if (cutoffs.length === 0 || cutoffs.some((k) => !Number.isInteger(k) || k < 1 || k > 100)) fail('--k must be integers 1-100, e.g. 5,10,20,50');
const maxK = cutoffs[cutoffs.length - 1]!;
const backend = values.backend;
if (backend !== 'postgres' && backend !== 'pglite') fail('--backend must be postgres or pglite');

type Weights = { recency: number; importance: number; relevance: number };
let weights: Weights | undefined;
if (values.weights === 'relevance') weights = { recency: 0, importance: 0, relevance: 1 };
else if (values.weights === 'default') weights = undefined;
else {
  const parts = values.weights!.split(',').map(Number);
  if (parts.length !== 3 || parts.some((n) => !Number.isFinite(n) || n < 0)) fail('--weights must be relevance, default or three numbers r,i,v');
  if (parts.every((n) => n === 0)) fail('--weights must not all be 0 (the service refuses that)');
  weights = { recency: parts[0]!, importance: parts[1]!, relevance: parts[2]! };
}
if (values.out !== undefined && !existsSync(path.dirname(path.resolve(values.out)))) fail(`--out: the folder ${path.dirname(path.resolve(values.out))} does not exist`);
let halfLifeHours: number | undefined;
if (values['half-life'] !== undefined) {
  halfLifeHours = Number(values['half-life']);
  if (!(halfLifeHours > 0)) fail('--half-life must be a positive number of hours');
}
let minRelevance: number | undefined;
if (values['min-relevance'] !== undefined) {
  minRelevance = Number(values['min-relevance']);
  if (!(minRelevance >= 0 && minRelevance <= 1)) fail('--min-relevance must be a number from 0 to 1');
}

// ---------------------------------------------------------------------------------------------
// Data

interface Turn {
  userId: string;
  sourceId: string;
  content: string;
  occurredAt: string;
}

interface Question {
  userId: string;
  qid: string;
  question: string;
  categoryName: string;
  evidence: string[];
  asOf: string;
}

function readJsonl<T>(file: string): T[] {
  let text: string;
  try {
    text = readFileSync(path.join(dataDir, file), 'utf8');
  } catch (error) {
    fail(`cannot read ${path.join(dataDir, file)} (${(error as Error).message}); pass --data <dir>`);
  }
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as T);
}

// ---------------------------------------------------------------------------------------------
// Backends

interface Backend {
  runtime: Runtime;
  /**
   * VACUUM ANALYZE, as autovacuum would soon after a bulk load in service: the planner's statistics,
   * hint bits and visibility map, so that no vacuum of the fresh table runs while recall is timed.
   */
  analyze(): Promise<void>;
  close(): Promise<void>;
}

/** The service's settings that change what is measured pass through from the environment. */
const PASSED_THROUGH = ['EMBEDDINGS', 'EMBEDDING_DIMENSIONS', 'EMBEDDING_MODEL', 'OPENAI_API_KEY', 'OPENAI_BASE_URL', 'RECALL_HALF_LIFE_HOURS', 'RECALL_MIN_RELEVANCE'];
const baseEnv: Record<string, string | undefined> = {
  ...Object.fromEntries(PASSED_THROUGH.map((key) => [key, process.env[key]])),
  AUTH_JWT_SECRET: JWT_SECRET,
  LOG_LEVEL: 'silent',
  // A batch of 1,000 turns through the local model takes ~20 s on an idle core: no request deadline.
  REQUEST_TIMEOUT_MS: '600000',
};

/**
 * A database of its own. Not named `engram_iso_*`: the test suite's global setup drops those as
 * leftovers, and other people run tests on this machine while a benchmark runs.
 */
async function startPostgres(): Promise<Backend> {
  const name = `engram_bench_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const admin = postgres(adminUrl(), { max: 1, onnotice: () => {} });
  try {
    const [template] = await admin`select 1 as one from pg_database where datname = ${TEMPLATE_DB}`;
    let cloned = false;
    for (let attempt = 0; template && !cloned && attempt < 40; attempt++) {
      try {
        await admin.unsafe(`create database ${name} template ${TEMPLATE_DB}`);
        cloned = true;
      } catch (error) {
        if (!/being accessed by other users/.test(String(error))) throw error;
        await new Promise((r) => setTimeout(r, 100 + Math.random() * 200));
      }
    }
    // No template (or it stayed busy): an empty database; the runtime migrates it below.
    if (!cloned) await admin.unsafe(`create database ${name}`);
  } finally {
    await admin.end();
  }
  const drop = async () => {
    const a = postgres(adminUrl(), { max: 1, onnotice: () => {} });
    try {
      await a.unsafe(`drop database if exists ${name} with (force)`);
    } finally {
      await a.end();
    }
  };
  try {
    const config = loadConfig({ ...baseEnv, DATABASE_URL: databaseUrl(name), MIGRATE_ON_START: 'true' });
    const runtime = await createRuntime(config, { logger: pino({ level: 'silent' }) });
    return {
      runtime,
      async analyze() {
        const owner = postgres(databaseUrl(name), { max: 1, onnotice: () => {} });
        try {
          await owner.unsafe(VACUUM_AFTER_LOAD);
        } finally {
          await owner.end();
        }
      },
      async close() {
        await runtime.close();
        await drop();
      },
    };
  } catch (error) {
    await drop();
    throw error;
  }
}

/** The embedded backend as the tests run it (TEST_BACKEND=pglite): in-memory PGlite, no Redis. */
async function startPglite(): Promise<Backend> {
  const { openPglite } = await import('../src/db/pglite.js');
  const database = await openPglite({ dataDir: undefined });
  const config = loadConfig({ ...baseEnv });
  const runtime = await createRuntime({ ...config, migrateOnStart: true }, { logger: pino({ level: 'silent' }), database });
  return {
    runtime,
    async analyze() {
      await database.client.query(VACUUM_AFTER_LOAD);
    },
    async close() {
      await runtime.close();
      await database.close();
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Metrics

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

const round = (n: number, digits = 3) => Math.round(n * 10 ** digits) / 10 ** digits;

function latencySummary(samples: number[]) {
  const sorted = [...samples].sort((a, b) => a - b);
  return {
    n: sorted.length,
    p50: round(percentile(sorted, 50), 2),
    p95: round(percentile(sorted, 95), 2),
    p99: round(percentile(sorted, 99), 2),
    max: round(sorted[sorted.length - 1]!, 2),
    mean: round(sorted.reduce((a, b) => a + b, 0) / sorted.length, 2),
  };
}

interface QuestionResult {
  category: string;
  recall: Record<number, number>;
  hit: Record<number, number>;
  rr10: number;
}

interface Summary {
  n: number;
  recall: Record<string, number>;
  hit: Record<string, number>;
  mrr10: number;
}

function summarise(results: QuestionResult[]): Summary {
  const n = results.length;
  const mean = (f: (r: QuestionResult) => number) => (n === 0 ? Number.NaN : round(results.reduce((s, r) => s + f(r), 0) / n));
  return {
    n,
    recall: Object.fromEntries(cutoffs.map((k) => [`@${k}`, mean((r) => r.recall[k]!)])),
    hit: Object.fromEntries(cutoffs.map((k) => [`@${k}`, mean((r) => r.hit[k]!)])),
    mrr10: mean((r) => r.rr10),
  };
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const turns = readJsonl<Turn>('memories.jsonl');
  const questions = readJsonl<Question>('queries.jsonl');
  const users = [...new Set(turns.map((t) => t.userId))];
  const load = { start: loadavg().map((n) => round(n, 2)), end: [] as number[] };

  const server = backend === 'postgres' ? await startPostgres() : await startPglite();
  const { app, config } = server.runtime;
  try {
    const token = await signDevToken({
      secret: JWT_SECRET,
      issuer: config.auth.issuer,
      audience: config.auth.audience,
      tenantClaim: config.auth.tenantClaim,
      tenant: TENANT,
      user: 'bench-agent',
      scope: 'memories:read memories:write memories:act_as',
      ttlSeconds: 24 * 3600,
    });
    // With Content-Length, as every HTTP client sends it and as the Node adapter passes it on: without
    // it Hono's body limit reads the body through a counting stream, which a real request never pays.
    const request = (route: string, body: unknown) => {
      const json = JSON.stringify(body);
      return app.request(route, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(json)) },
        body: json,
      });
    };

    // Ingest. A turn whose (normalised) text repeats another's is one fact to the service: it may
    // answer with the existing memory, or store a new one that supersedes it. Either way evidence
    // is matched through the returned ids, and a turn counts as found when any memory returned for
    // a turn of the same text is.
    const memoriesOf = new Map<string, Set<string>>(); // `${user}\u0000${sourceId}` -> memory ids
    const memoryIds = new Set<string>();
    let repeated = 0;
    const ingestStart = performance.now();
    for (const user of users) {
      const own = turns.filter((t) => t.userId === user);
      const byText = new Map<string, Set<string>>(); // content hash -> memory ids
      const textOf = new Map<string, string>(); // source id -> content hash
      for (let i = 0; i < own.length; i += BATCH) {
        const batch = own.slice(i, i + BATCH);
        const res = await request('/memories', {
          user_id: user,
          memories: batch.map((t) => ({ content: t.content, occurred_at: t.occurredAt, metadata: { source_id: t.sourceId } })),
        });
        const body = (await res.json()) as { memories?: Array<{ id: string; user_id: string }> };
        if (res.status !== 201 || body.memories?.length !== batch.length) {
          throw new Error(`POST /memories for ${user} answered ${res.status}: ${JSON.stringify(body).slice(0, 500)}`);
        }
        body.memories.forEach((m, j) => {
          if (m.user_id !== user) throw new Error(`POST /memories for ${user} returned a memory of ${m.user_id}`);
          const turn = batch[j]!;
          const hash = contentHash(turn.content);
          const ids = byText.get(hash) ?? new Set<string>();
          if (ids.size > 0) repeated++;
          byText.set(hash, ids.add(m.id));
          textOf.set(turn.sourceId, hash);
          memoryIds.add(m.id);
        });
      }
      for (const [sourceId, hash] of textOf) memoriesOf.set(`${user}\u0000${sourceId}`, byText.get(hash)!);
    }
    const ingestMs = performance.now() - ingestStart;
    // A freshly loaded table has no statistics yet (the planner may then scan the whole table) and
    // autovacuum would soon start on it; in service that has long happened.
    await server.analyze();

    const recallBody = (q: Question, limit = maxK) => ({
      user_id: q.userId,
      query: q.question,
      limit,
      as_of: q.asOf,
      ...(weights ? { weights } : {}),
      ...(halfLifeHours !== undefined ? { recency_half_life_hours: halfLifeHours } : {}),
      ...(minRelevance !== undefined ? { min_relevance: minRelevance } : {}),
    });

    // Warm-up (connections, JIT, plan caches): not measured.
    for (const q of questions.slice(0, 30)) await (await request('/memories/recall', recallBody(q))).text();

    const results: QuestionResult[] = [];
    const latencies: number[] = [];
    let missingEvidence = 0;
    let foreign = 0;
    for (const q of questions) {
      const started = performance.now();
      const res = await request('/memories/recall', recallBody(q));
      latencies.push(performance.now() - started);
      const body = (await res.json()) as { memories?: Array<{ id: string; user_id: string }> };
      if (res.status !== 200 || !body.memories) throw new Error(`recall for ${q.qid} answered ${res.status}: ${JSON.stringify(body).slice(0, 500)}`);
      for (const m of body.memories) {
        if (m.user_id !== q.userId) {
          foreign++;
          process.stderr.write(`bench:locomo: FAILURE: question ${q.qid} (user ${q.userId}) got memory ${m.id} of user ${m.user_id}\n`);
        }
      }
      const rankOfId = new Map(body.memories.map((m, i) => [m.id, i]));
      const wanted = q.evidence.map((e) => memoriesOf.get(`${q.userId}\u0000${e}`));
      missingEvidence += wanted.filter((ids) => ids === undefined).length;
      // An evidence turn's rank: the best of the memories standing for its text, -1 when none came back.
      const rankOf = (ids: Set<string> | undefined) => Math.min(...[...(ids ?? [])].map((id) => rankOfId.get(id) ?? Infinity), Infinity);
      const ranks = wanted.map(rankOf).map((r) => (r === Infinity ? -1 : r));
      const first = Math.min(...ranks.filter((r) => r >= 0), Number.POSITIVE_INFINITY);
      const recall: Record<number, number> = {};
      const hit: Record<number, number> = {};
      for (const k of cutoffs) {
        const found = ranks.filter((r) => r >= 0 && r < k).length;
        recall[k] = wanted.length === 0 ? 0 : found / wanted.length;
        hit[k] = found > 0 ? 1 : 0;
      }
      results.push({ category: q.categoryName, recall, hit, rr10: first < 10 ? 1 / (first + 1) : 0 });
    }
    if (foreign > 0) {
      process.stderr.write(`bench:locomo: FAILED: ${foreign} results belonged to another user\n`);
      process.exitCode = 1;
      return;
    }
    // The same questions again at the API's default limit (10), timed only: what an agent's
    // everyday call costs. Results are still checked for the user.
    const latencies10: number[] = [];
    if (maxK !== 10) {
      for (const q of questions) {
        const started = performance.now();
        const res = await request('/memories/recall', recallBody(q, 10));
        latencies10.push(performance.now() - started);
        const body = (await res.json()) as { memories?: Array<{ user_id: string }> };
        if (res.status !== 200 || body.memories?.some((m) => m.user_id !== q.userId)) {
          throw new Error(`recall (limit 10) for ${q.qid} answered ${res.status} or another user's memory`);
        }
      }
    }
    // Unrelated questions: each asked of the next conversation's user, as of that user's questions.
    const asOfOf = new Map(questions.map((q) => [q.userId, q.asOf]));
    const unrelatedCounts: number[] = [];
    for (const q of questions) {
      const other = users[(users.indexOf(q.userId) + 1) % users.length]!;
      if (other === q.userId) break; // one conversation only: no other user to ask
      const res = await request('/memories/recall', { ...recallBody(q, 10), user_id: other, as_of: asOfOf.get(other) ?? q.asOf });
      const body = (await res.json()) as { memories?: Array<{ user_id: string }> };
      if (res.status !== 200 || !body.memories || body.memories.some((m) => m.user_id !== other)) {
        throw new Error(`unrelated recall for ${q.qid} answered ${res.status} or another user's memory`);
      }
      unrelatedCounts.push(body.memories.length);
    }
    const unrelated = {
      questions: unrelatedCounts.length,
      mean_returned_at_limit_10: round(unrelatedCounts.reduce((a, b) => a + b, 0) / Math.max(1, unrelatedCounts.length), 2),
      share_empty: round(unrelatedCounts.filter((n) => n === 0).length / Math.max(1, unrelatedCounts.length)),
    };
    load.end = loadavg().map((n) => round(n, 2));

    const categories = [...CATEGORY_ORDER.filter((c) => results.some((r) => r.category === c)), ...new Set(results.map((r) => r.category).filter((c) => !CATEGORY_ORDER.includes(c)))];
    const byCategory = Object.fromEntries(categories.map((c) => [c, summarise(results.filter((r) => r.category === c))]));
    const overall = summarise(results);
    const memoriesPerUser = users.map((u) => new Set(turns.filter((t) => t.userId === u).flatMap((t) => [...memoriesOf.get(`${u}\u0000${t.sourceId}`)!])).size);
    const figures = {
      bench: 'locomo',
      data: dataDir,
      backend,
      embedder: server.runtime.services.embedder.name,
      weights: weights ?? 'default',
      half_life_hours: halfLifeHours ?? config.recall.halfLifeHours,
      min_relevance: minRelevance ?? minRelevanceFor(config, server.runtime.services.embedder.kind),
      users: users.length,
      turns: turns.length,
      memories: memoryIds.size,
      memories_per_user: { mean: Math.round(memoryIds.size / users.length), max: Math.max(...memoriesPerUser) },
      repeated_turns: repeated,
      questions: questions.length,
      missing_evidence: missingEvidence,
      cutoffs,
      categories: byCategory,
      overall,
      unrelated,
      ingest: { seconds: round(ingestMs / 1000, 2), memories_per_s: Math.round(turns.length / (ingestMs / 1000)) },
      recall_latency_ms: {
        measured: 'server side: in-process around app.request(), auth + validation + embedding + SQL + scoring + JSON',
        [`limit_${maxK}`]: latencySummary(latencies),
        ...(latencies10.length ? { limit_10: latencySummary(latencies10) } : {}),
      },
      load_average: load,
      node: process.version,
      at: new Date().toISOString(),
    };

    const pad = (s: string, n: number) => s.padEnd(n);
    const num = (n: number) => n.toFixed(3).padStart(7);
    const header = `${pad('category', 12)} ${'n'.padStart(5)} ${cutoffs.map((k) => `R@${k}`.padStart(7)).join(' ')} ${cutoffs.map((k) => `hit@${k}`.padStart(7)).join(' ')} ${'MRR@10'.padStart(7)}`;
    const line = (label: string, s: Summary) =>
      `${pad(label, 12)} ${String(s.n).padStart(5)} ${cutoffs.map((k) => num(s.recall[`@${k}`]!)).join(' ')} ${cutoffs.map((k) => num(s.hit[`@${k}`]!)).join(' ')} ${num(s.mrr10)}`;
    process.stdout.write(
      [
        `LoCoMo recall (${dataDir}): ${users.length} users, ${turns.length} turns -> ${memoryIds.size} memories (${repeated} turns repeat another's text; ${figures.memories_per_user.mean} per user on average, ${figures.memories_per_user.max} at most), ${questions.length} questions`,
        `backend ${backend}, embedder ${figures.embedder}, weights ${weights ? JSON.stringify(weights) : 'default (none sent)'}, half-life ${figures.half_life_hours} h, min_relevance ${figures.min_relevance}${minRelevance === undefined ? ' (default)' : ''}, limit ${maxK}`,
        header,
        ...categories.map((c) => line(c, byCategory[c]!)),
        line('overall', overall),
        `unrelated questions (another user's, limit 10): ${unrelated.mean_returned_at_limit_10} memories returned on average, none for ${round(unrelated.share_empty * 100, 1)}% of ${unrelated.questions}`,
        `ingest: ${turns.length} memories in ${figures.ingest.seconds} s = ${figures.ingest.memories_per_s} memories/s`,
        ...[[maxK, latencies] as const, [10, latencies10] as const]
          .filter(([, l]) => l.length > 0)
          .map(([limit, l]) => {
            const t = latencySummary(l);
            return `recall latency, limit ${limit} (server side, in-process app.request): p50 ${t.p50} ms, p95 ${t.p95} ms, p99 ${t.p99} ms`;
          }),
        `load average: start ${load.start.join(' ')}, end ${load.end.join(' ')}` + (missingEvidence ? `; ${missingEvidence} evidence ids had no turn` : ''),
        '',
      ].join('\n'),
    );
    if (values.out) {
      writeFileSync(path.resolve(values.out), `${JSON.stringify(figures, null, 2)}\n`);
      process.stdout.write(`figures written to ${path.resolve(values.out)}\n`);
    }
  } finally {
    await server.close();
  }
}

try {
  await main();
} catch (error) {
  process.stderr.write(`bench:locomo: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
}
