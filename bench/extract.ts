/**
 * Extraction throughput: the engine's own overhead, not a model's. N jobs (one per user, so every
 * fact is new) go through the real API (in-process app.request), the real queue (BullMQ on Redis,
 * or the database-backed runner) and the real worker, against a scripted OpenAI-compatible server
 * that answers at once over real HTTP with canned facts and vectors. Prints jobs per second and the accept-to-succeeded latency
 * (accepted = the 202 arrived; succeeded = the job row's finished_at), then one JSON line.
 *
 *   npm run bench:extract -- [--jobs 500] [--concurrency 4] [--queue bullmq|database] [--parallel 16]
 *
 * Needs the test services (PostgreSQL with pgvector, and Redis for --queue bullmq): `npm test`
 * or `bash scripts/test-services.sh` brings them up. Runs in a database of its own, cloned from
 * the migrated test template and dropped at the end; BullMQ keys live under a prefix of its own.
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import postgres from 'postgres';
import { openPostgres } from '../src/db/postgres.js';
import { TEMPLATE_DB, TEST_REDIS_URL, adminUrl, databaseUrl } from '../test/support/env.js';
import { startTestApp, tokenFor, uniqueTenant } from '../test/support/harness.js';
import { deleteQueueKeys, factsReply, uniqueQueuePrefix } from '../test/support/jobs.js';
import { startScriptedLlm } from '../test/support/scripted-llm.js';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '500' },
    concurrency: { type: 'string', default: '4' },
    queue: { type: 'string', default: 'bullmq' },
    parallel: { type: 'string', default: '16' },
  },
});
const jobs = positiveInt('--jobs', values.jobs);
const concurrency = positiveInt('--concurrency', values.concurrency);
const parallel = positiveInt('--parallel', values.parallel);
const queueKind = values.queue;
if (queueKind !== 'bullmq' && queueKind !== 'database') fail('--queue must be bullmq or database');
if (concurrency > 64) fail('--concurrency must be at most 64 (WORKER_CONCURRENCY)');

function positiveInt(name: string, value: string | undefined): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) fail(`${name} must be a positive integer, got ${value}`);
  return n;
}

function fail(message: string): never {
  process.stderr.write(`bench:extract: ${message}\n`);
  process.exit(2);
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

const DIMENSIONS = 256;

function unitVector(dimensions: number): number[] {
  const v = Array.from({ length: dimensions }, () => Math.random() - 0.5);
  const norm = Math.hypot(...v);
  return v.map((x) => x / norm);
}

/** The template the test harness clones: created and migrated here when no test run made it yet. */
async function ensureTemplate(): Promise<void> {
  const admin = postgres(adminUrl(), { max: 1, onnotice: () => {} });
  try {
    const [exists] = await admin`select 1 as one from pg_database where datname = ${TEMPLATE_DB}`;
    if (!exists) await admin.unsafe(`create database ${TEMPLATE_DB}`);
  } finally {
    await admin.end();
  }
  const template = await openPostgres({ url: databaseUrl(TEMPLATE_DB), maxConnections: 1 });
  try {
    await template.migrate();
  } finally {
    await template.close();
  }
}

async function main(): Promise<void> {
  await ensureTemplate();
  const llm = await startScriptedLlm();
  // Canned answers, so the scripted server's own work (the heuristic extractor, the lexical
  // embedder it uses by default) is not billed to the engine: three facts per transcript.
  const facts = ['User lives in a city by the sea', 'User loves cycling on Sundays', 'User works as a bench tester'];
  const extraction = factsReply(facts.map((content, i) => ({ content, importance: 5 + i, category: 'personal' })));
  llm.onChat(() => extraction);
  const vectors = Array.from({ length: 16 }, () => unitVector(DIMENSIONS));
  llm.onEmbeddings((inputs) => inputs.map((_, i) => vectors[i % vectors.length]!));
  const prefix = uniqueQueuePrefix('bench');
  const app = await startTestApp(
    {
      OPENAI_BASE_URL: llm.url,
      OPENAI_API_KEY: 'bench',
      EMBEDDING_DIMENSIONS: String(DIMENSIONS),
      WORKER_CONCURRENCY: String(concurrency),
      QUEUE_PREFIX: prefix,
      LLM_TIMEOUT_MS: '30000',
      ...(queueKind === 'bullmq' ? { REDIS_URL: TEST_REDIS_URL } : {}),
    },
    { isolated: true },
  );
  const owner = app.ownerSql();
  try {
    if (app.runtime.queue.kind !== queueKind) throw new Error(`expected the ${queueKind} queue, got ${app.runtime.queue.kind}`);
    const tenant = uniqueTenant('bench');
    const agent = await tokenFor({ tenant, user: 'bench-agent', scope: 'memories:read memories:write memories:act_as' });
    const transcript = (i: number) => [
      { role: 'user', content: `Hi! My name is Bench User ${i}. I live in City ${i % 97}. I love cycling on Sundays.` },
      { role: 'assistant', content: 'Nice to meet you!' },
    ];

    // Straight to the Hono app (no HTTP socket, no test-side response checks): what is measured is the engine.
    const post = async (body: unknown): Promise<{ status: number; body: { job_id: string } }> => {
      const res = await app.runtime.app.request('/memories/extract', {
        method: 'POST',
        headers: { authorization: `Bearer ${agent}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as { job_id: string } };
    };

    // Warm-up: the first job pays for connections and lazy imports; it is not measured.
    const warm = await post({ user_id: `warm-${randomUUID()}`, messages: transcript(0) });
    app.runtime.startWorker();
    for (;;) {
      const [row] = await owner`select status from extraction_jobs where id = ${warm.body.job_id}`;
      if (row?.status === 'succeeded') break;
      if (row?.status === 'failed') throw new Error('the warm-up job failed');
      await new Promise((r) => setTimeout(r, 20));
    }

    const accepted = new Map<string, number>();
    const start = Date.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(parallel, jobs) }, async () => {
        while (next < jobs) {
          const i = next++;
          const res = await post({ user_id: `bench-user-${i}-${randomUUID().slice(0, 8)}`, messages: transcript(i + 1) });
          if (res.status !== 202) throw new Error(`POST /memories/extract answered ${res.status}: ${JSON.stringify(res.body)}`);
          accepted.set(res.body.job_id, Date.now());
        }
      }),
    );
    const acceptedAll = Date.now();

    const ids = [...accepted.keys()];
    const deadline = Date.now() + Math.max(60_000, jobs * 500);
    for (;;) {
      const [row] = await owner`select count(*) filter (where status in ('succeeded', 'failed'))::int as done from extraction_jobs where id = any(${ids}::uuid[])`;
      if (row!.done >= ids.length) break;
      if (Date.now() > deadline) throw new Error(`only ${row!.done} of ${ids.length} jobs finished in time`);
      await new Promise((r) => setTimeout(r, 50));
    }

    const rows = await owner<Array<{ id: string; status: string; finished_at: Date; attempts: number; result: { usage?: { llm_calls: number; embedding_calls: number } } | null }>>`
      select id, status, finished_at, attempts, result from extraction_jobs where id = any(${ids}::uuid[])`;
    const failed = rows.filter((r) => r.status !== 'succeeded').length;
    const latencies = rows
      .filter((r) => r.status === 'succeeded')
      .map((r) => r.finished_at.getTime() - accepted.get(r.id)!)
      .sort((a, b) => a - b);
    const lastFinished = Math.max(...rows.map((r) => r.finished_at.getTime()));
    const wallMs = lastFinished - start;
    const [memoryCount] = await owner`select count(*)::int as n from memories where tenant_id = ${tenant}`;
    const llmCalls = rows.reduce((n, r) => n + (r.result?.usage?.llm_calls ?? 0), 0);
    const retries = rows.reduce((n, r) => n + Math.max(0, r.attempts - 1), 0);

    const p50 = percentile(latencies, 50);
    const p95 = percentile(latencies, 95);
    const figures = {
      bench: 'extract',
      queue: queueKind,
      jobs,
      concurrency,
      parallel_clients: parallel,
      succeeded: rows.length - failed,
      failed,
      retries,
      memories_written: memoryCount!.n as number,
      llm_calls_per_job: round(llmCalls / rows.length, 2),
      wall_s: round(wallMs / 1000, 2),
      accepts_per_s: round(jobs / ((acceptedAll - start) / 1000)),
      jobs_per_s: round(jobs / (wallMs / 1000)),
      latency_ms: { p50, p95, median: p50, max: latencies[latencies.length - 1] ?? Number.NaN, mean: round(latencies.reduce((a, b) => a + b, 0) / latencies.length) },
      p95_over_p50: round(p95 / p50, 2),
      succeeded_ratio: round((rows.length - failed) / rows.length, 4),
      node: process.version,
    };
    process.stdout.write(
      [
        `extraction bench: ${jobs} jobs, queue ${queueKind}, worker concurrency ${concurrency}, ${parallel} parallel clients`,
        `  accepted in ${((acceptedAll - start) / 1000).toFixed(2)} s (${figures.accepts_per_s} accepts/s)`,
        `  all finished in ${figures.wall_s} s: ${figures.jobs_per_s} jobs/s (${figures.failed} failed, ${retries} retries, ${figures.memories_written} memories)`,
        `  accept-to-succeeded latency: p50 ${p50} ms, p95 ${p95} ms, max ${figures.latency_ms.max} ms (p95/p50 ${figures.p95_over_p50})`,
        JSON.stringify(figures),
        '',
      ].join('\n'),
    );
    if (failed > 0) process.exitCode = 1;
  } finally {
    await owner.end();
    await app.close();
    await llm.close();
    if (queueKind === 'bullmq') await deleteQueueKeys(prefix);
  }
}

try {
  await main();
} catch (error) {
  process.stderr.write(`bench:extract failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
process.exit(process.exitCode ?? 0);
