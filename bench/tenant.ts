/**
 * One tenant with many users: `--users` users of `--per-user` memories each (default 1,000 × 1,000:
 * a million memories), loaded through the bulk path (`POST /memories`, 1,000 a request, acting for
 * each user in turn), then recall for a random user at a time.
 *
 *   npm run bench -- tenant --data <locomo dir> [--users 1000] [--per-user 1000] [--queries 200]
 *     [--backend postgres|pglite] [--database <name>]
 *
 * Reports the load's time and rate, the sizes of the memories table (heap, TOAST) and of each of
 * its indexes, of the lexeme counts and of the text arm's copies, and recall's p50/p95/p99 at
 * limit 10 (in-process around `app.request`: auth, validation, embedding, SQL, ranking, JSON) over
 * `--queries` LoCoMo questions, each asked of a user drawn at random. The memories are LoCoMo's
 * turns, cycled, each copy numbered (as `bench biguser`). `--database`: a PostgreSQL database of
 * that name, made if missing and kept, the users already loaded not loaded again.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { sql } from 'drizzle-orm';
import { signDevToken } from '../src/auth/sign.js';
import { query } from '../src/db/client.js';
import { VACUUM_AFTER_LOAD, openBenchRuntime } from './bench-runtime.js';

const { values } = parseArgs({
  options: {
    users: { type: 'string', default: '1000' },
    'per-user': { type: 'string', default: '1000' },
    queries: { type: 'string', default: '200' },
    data: { type: 'string' },
    backend: { type: 'string', default: 'postgres' },
    database: { type: 'string' },
  },
});
if (!values.data) {
  process.stderr.write('bench tenant: --data <folder of the LoCoMo split> is required\n');
  process.exit(2);
}
const users = Number(values.users);
const perUser = Number(values['per-user']);
const read = <T>(f: string) => readFileSync(path.join(values.data!, f), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as T);
const turns = read<{ content: string }>('memories.jsonl');
const questions = read<{ question: string }>('queries.jsonl');

const secret = `bench-tenant-${randomUUID()}-${randomUUID()}`;
const env = { AUTH_JWT_SECRET: secret, LOG_LEVEL: 'silent', REQUEST_TIMEOUT_MS: '600000', EMBEDDINGS: process.env.EMBEDDINGS ?? 'lexical', EMBEDDING_DIMENSIONS: process.env.EMBEDDING_DIMENSIONS };
const { runtime, database, vacuum, close } = await openBenchRuntime(env, { backend: values.backend!, database: values.database });
/** As the owner (past row-level security): sizes and counts across the tenant. */
const owner = <T>(statement: ReturnType<typeof sql>) => database.inTransaction([], (tx) => query<T>(tx, statement));

const tenant = 'bench-tenant';
const token = await signDevToken({ secret, issuer: 'memory-layer', audience: 'memory-api', tenantClaim: 'tenant_id', tenant, user: 'bench', scope: 'memories:read memories:write memories:act_as', ttlSeconds: 86400 });
const request = (route: string, body: unknown) => {
  const json = JSON.stringify(body);
  return runtime.app.request(route, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(json)) }, body: json });
};
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
const load = () => loadavg().map((n) => n.toFixed(1)).join(' ');
const mb = (bytes: number | string) => `${(Number(bytes) / 1024 / 1024).toFixed(0)} MB`;
const start = Date.UTC(2020, 0, 1);
const userId = (u: number) => `user-${u}`;

try {
  process.stdout.write(`embedder ${runtime.services.embedder.name}, backend ${values.backend}, ${users} users × ${perUser} memories\n`);
  const loaded = new Set(
    (await owner<{ user_id: string }>(sql`select user_id from memories where tenant_id = ${tenant} group by user_id having count(*) >= ${perUser}`)).map((r) => r.user_id),
  );
  const t0 = performance.now();
  let stored = 0;
  for (let u = 0; u < users; u++) {
    if (loaded.has(userId(u))) continue;
    for (let i = 0; i < perUser; i += 1000) {
      const n = Math.min(1000, perUser - i);
      const memories = Array.from({ length: n }, (_, j) => {
        const k = u * perUser + i + j;
        return { content: `${turns[k % turns.length]!.content} (copy ${Math.floor(k / turns.length)})`, occurred_at: new Date(start + (i + j) * 3_600_000).toISOString() };
      });
      const res = await request('/memories', { user_id: userId(u), memories });
      if (res.status !== 201) throw new Error(`POST /memories answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
      stored += n;
    }
    if ((u + 1) % 50 === 0) process.stdout.write(`  ${u + 1} users: ${stored} memories in ${((performance.now() - t0) / 1000).toFixed(0)} s, load average ${load()}\n`);
  }
  const seconds = (performance.now() - t0) / 1000;
  if (stored > 0) process.stdout.write(`load: ${stored} memories in ${seconds.toFixed(0)} s, ${Math.round(stored / seconds)}/s, load average ${load()}\n`);
  const tv = performance.now();
  await vacuum();
  process.stdout.write(`${VACUUM_AFTER_LOAD}: ${((performance.now() - tv) / 1000).toFixed(0)} s\n`);
  const [total] = await owner<{ n: number | string }>(sql`select count(*) as n from memories`);
  const [sizes] = await owner<{ heap: string; toast: string; indexes: string; total: string; stats: string; copies: string; events: string }>(sql`
    select pg_relation_size('memories') as heap,
           coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0) as toast,
           pg_indexes_size('memories') as indexes, pg_total_relation_size('memories') as total,
           pg_total_relation_size('memory_lexeme_stats') as stats, pg_total_relation_size('memory_search') as copies,
           pg_total_relation_size('memory_events') as events
    from pg_class c where c.oid = 'memories'::regclass`);
  const indexes = await owner<{ name: string; size: string }>(sql`
    select i.relname as name, pg_relation_size(i.oid) as size from pg_index x join pg_class i on i.oid = x.indexrelid
    where x.indrelid = 'memories'::regclass order by pg_relation_size(i.oid) desc`);
  process.stdout.write(
    `${total!.n} memories: table ${mb(sizes!.total)} (heap ${mb(sizes!.heap)}, TOAST ${mb(sizes!.toast)}, indexes ${mb(sizes!.indexes)}); ` +
      `lexeme counts ${mb(sizes!.stats)}; text arm's copies (memory_search, with its indexes) ${mb(sizes!.copies)}; memory_events ${mb(sizes!.events)}\n  indexes: ${indexes.map((i) => `${i.name} ${mb(i.size)}`).join(', ')}\n`,
  );
  // A seeded draw, so that two runs ask the same users the same questions.
  let seed = 12345;
  const next = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  const asked = Array.from({ length: Number(values.queries) }, () => ({ user: userId(next(users)), question: questions[next(questions.length)]!.question }));
  for (const a of asked.slice(0, 10)) await (await request('/memories/recall', { user_id: a.user, query: a.question, limit: 10 })).text();
  const latencies: number[] = [];
  for (const a of asked) {
    const t = performance.now();
    const res = await request('/memories/recall', { user_id: a.user, query: a.question, limit: 10 });
    if (res.status !== 200) throw new Error(`recall answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
    await res.json();
    latencies.push(performance.now() - t);
  }
  latencies.sort((a, b) => a - b);
  process.stdout.write(
    `recall limit 10, a random user each (${latencies.length}): p50 ${percentile(latencies, 50).toFixed(1)} ms, p95 ${percentile(latencies, 95).toFixed(1)} ms, p99 ${percentile(latencies, 99).toFixed(1)} ms; load average ${load()}\n`,
  );
} finally {
  await close();
}
