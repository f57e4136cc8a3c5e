/**
 * Recall for one user with many memories, end to end: the service's strategy switch (the exact
 * scan up to RECALL_SCAN_LIMIT memories in scope, the indexes past it) against the exact answer.
 *
 *   npm run bench -- biguser [--sizes 1000,2000,10000,100000] [--queries 200] [--data <locomo dir>]
 *     [--backend postgres|pglite] [--database <name>] [--exact <file>] [--warm 300]
 *   (--data: the LoCoMo split's folder, as bench:locomo reads it; --database: a PostgreSQL database
 *   of that name, made if missing and kept afterwards, its memories already loaded not loaded again,
 *   so that one large load serves several runs; --exact: a file that keeps the exact answers of a
 *   kept database between runs, as the scans take minutes at 100,000; --warm: how many other
 *   questions are asked first, untimed, so that the pool's database sessions are measured as a
 *   running service's are, not as new ones: a PostgreSQL backend's first touch of each page of
 *   shared buffers is a page fault, ~7 µs each on the 2-core VM the README's figures come from;
 *   --against <checkout>: another build's checkout, opened in this process on the same --database
 *   and asked each measured question in turn with this one, the order alternating, so that both
 *   meet the same moments of the machine: runs drift by a third within the hour here)
 *
 * One user's memories are LoCoMo's turns (all conversations, cycled, each copy numbered so that no
 * two are the same fact), stored through `POST /memories` in batches of 1,000 with the service's
 * embedder (EMBEDDINGS, default lexical; EMBEDDING_DIMENSIONS passes through): the bulk insert
 * throughput with every index recall uses. Then LoCoMo's questions are asked of that user:
 * latency in-process around `app.request` (auth, validation, embedding, SQL, ranking, JSON) at
 * limit 10, and recall@10 against the exact answer (the same ranking from a scan of every memory
 * in scope, with no scan limit): the share of the exact top 10 that the service's answer holds.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { signDevToken } from '../src/auth/sign.js';
import { minRelevanceFor } from '../src/config.js';
import { sql } from 'drizzle-orm';
import { query } from '../src/db/client.js';
import { withTenant } from '../src/db/tenant.js';
import { CANDIDATES_PER_ARM, RECALL_MAX_TERMS, collectCandidates, rankRecallCandidates } from '../src/recall/service.js';
import { DEFAULT_WEIGHTS, TEXT_RELEVANCE_WEIGHTS } from '../src/recall/scoring.js';
import { queryWordForms } from '../src/recall/word-forms.js';
import { openBenchRuntime } from './bench-runtime.js';

const { values } = parseArgs({
  options: {
    sizes: { type: 'string', default: '1000,2000,10000,100000' },
    queries: { type: 'string', default: '200' },
    data: { type: 'string' },
    backend: { type: 'string', default: 'postgres' },
    database: { type: 'string' },
    exact: { type: 'string' },
    warm: { type: 'string', default: '300' },
    against: { type: 'string' },
  },
});
if (!values.data) {
  process.stderr.write('bench biguser: --data <folder of the LoCoMo split> is required\n');
  process.exit(2);
}
if (values.against && !values.database) {
  process.stderr.write('bench biguser: --against needs --database, the one both builds read\n');
  process.exit(2);
}
if (!/^\d+$/.test(values.warm!)) {
  process.stderr.write('bench biguser: --warm takes a number of questions\n');
  process.exit(2);
}
const sizes = values.sizes!.split(',').map(Number).sort((a, b) => a - b);
const read = <T>(f: string) => readFileSync(path.join(values.data!, f), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as T);
const turns = read<{ content: string }>('memories.jsonl');
const allQuestions = read<{ question: string }>('queries.jsonl');
const questions = allQuestions.slice(0, Number(values.queries));
// Asked first and not timed: the split's last questions, none of them among those measured unless
// there are too few, so the warm-up does not hand the measured ones the pages they will read.
const warmUp = allQuestions.slice(Math.max(questions.length, allQuestions.length - Number(values.warm)));

const secret = `bench-biguser-${randomUUID()}-${randomUUID()}`;
const env = { AUTH_JWT_SECRET: secret, LOG_LEVEL: 'silent', REQUEST_TIMEOUT_MS: '600000', EMBEDDINGS: process.env.EMBEDDINGS ?? 'lexical', EMBEDDING_DIMENSIONS: process.env.EMBEDDING_DIMENSIONS };
// The service's clock is the benchmark's: each size is asked at the hour after its newest memory, as
// an agent asks of what it has stored, with no as_of.
const start = Date.UTC(2020, 0, 1);
let benchNow = new Date(start);
const { runtime, vacuum: analyze, close } = await openBenchRuntime(env, { backend: values.backend!, database: values.database, clock: () => benchNow });

// The other build's runtime, from its own checkout, on the same database.
const against = values.against
  ? await ((await import(pathToFileURL(path.resolve(values.against, 'bench/bench-runtime.ts')).href)) as typeof import('./bench-runtime.js')).openBenchRuntime(env, {
      backend: values.backend!,
      database: values.database,
      clock: () => benchNow,
    })
  : undefined;

const tenant = 'bench-biguser';
const user = 'u';
const token = await signDevToken({ secret, issuer: 'memory-layer', audience: 'memory-api', tenantClaim: 'tenant_id', tenant, user, scope: 'memories:read memories:write', ttlSeconds: 86400 });
const requestOf = (app: typeof runtime.app) => (route: string, body: unknown) => {
  const json = JSON.stringify(body);
  return app.request(route, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(json)) }, body: json });
};
const request = requestOf(runtime.app);
const requestAgainst = against ? requestOf(against.runtime.app) : undefined;
/** One recall's time and the ids it answered. */
const recallOnce = async (ask: typeof request, question: string) => {
  const t = performance.now();
  const res = await ask('/memories/recall', { query: question, limit: 10 });
  const body = (await res.json()) as { memories: Array<{ id: string }> };
  return { ms: performance.now() - t, ids: new Set(body.memories.map((m) => m.id)) };
};
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;

try {
  process.stdout.write(`embedder ${runtime.services.embedder.name}, backend ${values.backend}, ${questions.length} questions\n`);
  // Memories of the user already there (a kept --database): loaded once, by an earlier run.
  let loaded = await withTenant(runtime.services.database, tenant, async (tx) => {
    const [row] = await query<{ n: number | string }>(tx, sql`select count(*) as n from memories where tenant_id = ${tenant} and user_id = ${user}`);
    return Number(row?.n ?? 0);
  });
  for (const size of sizes) {
    if (size < loaded) throw new Error(`the user already has ${loaded} memories, more than ${size}`);
    const now = new Date(start + size * 3_600_000);
    benchNow = now;
    const t0 = performance.now();
    for (let i = loaded; i < size; i += 1000) {
      const n = Math.min(1000, size - i);
      const memories = Array.from({ length: n }, (_, j) => ({ content: `${turns[(i + j) % turns.length]!.content} (copy ${Math.floor((i + j) / turns.length)})`, occurred_at: new Date(start + (i + j) * 3_600_000).toISOString() }));
      const res = await request('/memories', { memories });
      if (res.status !== 201) throw new Error(`POST /memories answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
    }
    const rate = size === loaded ? Number.NaN : (size - loaded) / ((performance.now() - t0) / 1000);
    loaded = size;
    await analyze();
    const latencies: number[] = [];
    let overlap = 0;
    const embeddings = await runtime.services.embedder.embed(questions.map((q) => q.question));
    // The exact answers first, untimed: the reference scan reads every wide row of the user, and
    // run between timed requests it would leave each of them a cache emptied by a measurement.
    // Kept only for the same data (the database, its size, the embedder, the questions); not for
    // another ranking: delete the file after changing the scoring.
    const cacheKey = `${values.database}:${size}:${runtime.services.embedder.name}:${runtime.services.embedder.dimensions}:${questions.map((q) => q.question).join('|')}`;
    const cached = values.exact && existsSync(values.exact) ? (JSON.parse(readFileSync(values.exact, 'utf8')) as Record<string, string[][]>)[cacheKey] : undefined;
    const exacts: Array<Set<string>> = (cached ?? []).map((ids) => new Set(ids));
    const scans: number[] = [];
    for (const [i, q] of cached ? [] : questions.entries()) {
      const t = performance.now();
      const exact = await withTenant(runtime.services.database, tenant, async (tx) => {
        const pool = await collectCandidates(tx, { tenantId: tenant, userId: user, embedding: embeddings[i]!, text: q.question, wordForms: queryWordForms(q.question), asOf: undefined, now, poolSize: CANDIDATES_PER_ARM, maxTerms: RECALL_MAX_TERMS, scanLimit: size + 1 }, undefined, 'scan');
        return rankRecallCandidates(pool, { weights: DEFAULT_WEIGHTS, halfLifeHours: runtime.config.recall.halfLifeHours, now, minRelevance: minRelevanceFor(runtime.config, runtime.services.embedder.kind), limit: 10 }, TEXT_RELEVANCE_WEIGHTS[runtime.services.embedder.kind]);
      }, { readOnly: true });
      scans.push(performance.now() - t);
      exacts.push(new Set(exact.map((c) => c.id)));
    }
    if (values.exact && !cached && values.database) {
      const all = existsSync(values.exact) ? (JSON.parse(readFileSync(values.exact, 'utf8')) as Record<string, string[][]>) : {};
      writeFileSync(values.exact, JSON.stringify({ ...all, [cacheKey]: exacts.map((e) => [...e]) }));
    }
    for (const q of warmUp.length > 0 ? warmUp : questions.slice(0, Number(values.warm))) {
      await recallOnce(request, q.question);
      if (requestAgainst) await recallOnce(requestAgainst, q.question);
    }
    const share = (exact: Set<string>, got: Set<string>) => (exact.size === 0 ? 1 : [...exact].filter((id) => got.has(id)).length / exact.size);
    const otherLatencies: number[] = [];
    const ratios: number[] = [];
    let otherOverlap = 0;
    for (const [i, q] of questions.entries()) {
      // With another build, each question goes to both, the first of the pair alternating.
      const otherFirst = requestAgainst !== undefined && i % 2 === 1;
      const before = otherFirst ? await recallOnce(requestAgainst, q.question) : undefined;
      const mine = await recallOnce(request, q.question);
      const theirs = before ?? (requestAgainst ? await recallOnce(requestAgainst, q.question) : undefined);
      latencies.push(mine.ms);
      overlap += share(exacts[i]!, mine.ids);
      if (theirs) {
        otherLatencies.push(theirs.ms);
        ratios.push(mine.ms / theirs.ms);
        otherOverlap += share(exacts[i]!, theirs.ids);
      }
    }
    latencies.sort((a, b) => a - b);
    scans.sort((a, b) => a - b);
    process.stdout.write(
      `${String(size).padStart(7)} memories: ${Number.isNaN(rate) ? 'already loaded' : `bulk insert ${Math.round(rate)}/s`}; recall limit 10 p50 ${percentile(latencies, 50).toFixed(2)} ms, p95 ${percentile(latencies, 95).toFixed(2)} ms; recall@10 vs exact ${(overlap / questions.length).toFixed(3)}; ${scans.length === 0 ? 'exact answers from --exact' : `the exact scan (in-process, no HTTP) p50 ${percentile(scans, 50).toFixed(2)} ms, p95 ${percentile(scans, 95).toFixed(2)} ms`}\n`,
    );
    if (against) {
      otherLatencies.sort((a, b) => a - b);
      ratios.sort((a, b) => a - b);
      process.stdout.write(
        `         against ${values.against}: p50 ${percentile(otherLatencies, 50).toFixed(2)} ms, p95 ${percentile(otherLatencies, 95).toFixed(2)} ms; recall@10 vs exact ${(otherOverlap / questions.length).toFixed(3)}; this build's time over that one's, question by question, median ${percentile(ratios, 50).toFixed(3)}\n`,
      );
    }
  }
  process.stdout.write(`load average ${loadavg().map((n) => n.toFixed(2)).join(' ')}\n`);
} finally {
  await against?.close();
  await close();
}
