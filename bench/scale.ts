/**
 * The vector arm of recall for one user with many memories: which way of finding a query's nearest
 * memories holds at 1,000, 10,000 and 100,000 memories, at 512 and 1,536 dimensions.
 *
 *   npm run bench -- scale [--sizes 1000,10000,100000] [--dims 512,1536] [--queries 100]
 *     [--strategies exact,binary,hnswbits,hnsw,ivfflat] [--out figures.json]
 *
 * Each size gets a fresh table shaped like `memories` where it matters (tenant and user leading the
 * keys, the vector inline in the row as migration 0003 keeps it, a stored `bit` column from
 * `binary_quantize` covered by a (tenant, user) index as migration 0009 adds), in a database of its
 * own on the server of TEST_DATABASE_URL, dropped at the end. The vectors are synthetic but not
 * uniform: unit vectors around 256 random centres (a memory's cosine to its centre ~0.7), queries
 * a stored vector plus as much noise again, which is how real embeddings cluster by topic; uniform
 * random vectors would be the worst case for every index. One user holds every row (so no index
 * is made selective by other users' rows).
 *
 * Strategies, each reported with p50/p95 latency over the queries and recall@10 against the exact
 * answer (the same ORDER BY without an index):
 * - exact: the scan recall does today;
 * - binary (n): the `bit` column's Hamming distance scanned exactly through the covering index
 *   (an index-only scan, no ANN index), the best n re-ranked by the full vectors' cosine;
 * - hnsw on bits (n): an HNSW index (bit_hamming_ops) on the `bit` column, its n nearest re-ranked
 *   by the full vectors (ef_search n, iterative scan);
 * - hnsw (ef): pgvector's HNSW (m 16, ef_construction 64) with `hnsw.iterative_scan =
 *   relaxed_order`, as an expression index on `embedding::vector(d)`;
 * - ivfflat (probes): lists = rows / 1000 (at least 10), `ivfflat.iterative_scan = relaxed_order`.
 * Bulk insert throughput (batches of 500 rows, vectors sent as text as the API does): the load
 * itself (bit column and covering index maintained), then a sample inserted with each ANN index.
 */
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import postgres from 'postgres';
import { adminUrl, databaseUrl } from '../test/support/env.js';

const { values } = parseArgs({
  options: {
    sizes: { type: 'string', default: '1000,10000,100000' },
    dims: { type: 'string', default: '512,1536' },
    queries: { type: 'string', default: '100' },
    strategies: { type: 'string', default: 'exact,binary,hnswbits,hnsw,ivfflat' },
    out: { type: 'string' },
  },
});
const sizes = values.sizes!.split(',').map(Number);
const dimsList = values.dims!.split(',').map(Number);
const queryCount = Number(values.queries);
const strategies = new Set(values.strategies!.split(','));
const BATCH = 500;
const CENTRES = 256;

// A seeded generator, so that two runs measure the same data.
let seed = 0x9e3779b9;
function random(): number {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
function gaussian(): number {
  return Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
}
function unit(v: Float64Array): Float64Array {
  let n = 0;
  for (const x of v) n += x * x;
  n = Math.sqrt(n) || 1;
  return v.map((x) => x / n);
}
function noisy(base: Float64Array, sigma: number): Float64Array {
  return unit(base.map((x) => x + sigma * gaussian()));
}
const text = (v: Float64Array) => `[${Array.from(v, (x) => x.toFixed(4)).join(',')}]`;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}
const round = (n: number, d = 2) => Math.round(n * 10 ** d) / 10 ** d;

interface Row {
  dims: number;
  size: number;
  strategy: string;
  p50_ms?: number;
  p95_ms?: number;
  recall_at_10?: number;
  insert_per_s?: number;
  build_s?: number;
  index_mb?: number;
}
const rows: Row[] = [];
const print = (r: Row) => {
  rows.push(r);
  const parts = [`d ${r.dims}`, `n ${r.size}`, r.strategy.padEnd(18)];
  if (r.p50_ms !== undefined) parts.push(`p50 ${r.p50_ms} ms`, `p95 ${r.p95_ms} ms`, `recall@10 ${r.recall_at_10}`);
  if (r.insert_per_s !== undefined) parts.push(`bulk insert ${r.insert_per_s}/s`);
  if (r.build_s !== undefined) parts.push(`index build ${r.build_s} s`);
  if (r.index_mb !== undefined) parts.push(`index ${r.index_mb} MB`);
  process.stdout.write(`${parts.join('  ')}\n`);
};

const name = `engram_bench_scale_${randomUUID().replaceAll('-', '').slice(0, 10)}`;
const admin = postgres(adminUrl(), { max: 1, onnotice: () => {} });
await admin.unsafe(`create database ${name}`);
await admin.end();
const sql = postgres(databaseUrl(name), { max: 1, onnotice: () => {} });

async function insert(table: string, vectors: Float64Array[], from: number): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < vectors.length; i += BATCH) {
    const batch = vectors.slice(i, i + BATCH).map(text);
    const times = batch.map((_, j) => new Date(Date.UTC(2024, 0, 1) + (from + i + j) * 60_000).toISOString());
    await sql.unsafe(
      `insert into ${table} (tenant_id, user_id, occurred_at, embedding)
       select 't', 'u', o::timestamptz, e::vector from unnest($1::text[], $2::text[]) as x(e, o)`,
      [batch, times],
    );
  }
  return vectors.length / ((performance.now() - started) / 1000);
}

async function timed(queries: Float64Array[], run: (q: string) => Promise<string[]>, exact: string[][] | undefined) {
  const latencies: number[] = [];
  const answers: string[][] = [];
  for (const q of queries.slice(0, 5)) await run(text(q)); // warm-up
  for (const q of queries) {
    const t = performance.now();
    answers.push(await run(text(q)));
    latencies.push(performance.now() - t);
  }
  latencies.sort((a, b) => a - b);
  const recall = exact
    ? answers.reduce((s, a, i) => s + a.filter((id) => exact[i]!.includes(id)).length / Math.max(1, exact[i]!.length), 0) / answers.length
    : 1;
  return { p50_ms: round(percentile(latencies, 50)), p95_ms: round(percentile(latencies, 95)), recall_at_10: round(recall, 3), answers };
}

const ids = (r: postgres.RowList<postgres.Row[]>) => r.map((x) => String(x.id));

try {
  await sql`create extension if not exists vector`;
  await sql`set maintenance_work_mem = '1GB'`;
  for (const dims of dimsList) {
    const centres = Array.from({ length: CENTRES }, () => unit(Float64Array.from({ length: dims }, gaussian)));
    // sigma: the noise's norm relative to the centre's: cosine to the centre about 1 / sqrt(1 + sigma² d).
    const sigma = 1 / Math.sqrt(dims);
    let loaded = 0;
    const all: Float64Array[] = [];
    await sql.unsafe(`drop table if exists items`);
    await sql.unsafe(`create table items (
      tenant_id text not null, user_id text not null, id uuid primary key default gen_random_uuid(),
      occurred_at timestamptz not null, valid_to timestamptz, expires_at timestamptz,
      embedding vector not null, embedding_bits bit varying generated always as (binary_quantize(embedding)) stored
    ) with (toast_tuple_target = 8160)`);
    await sql.unsafe(`create index items_user_occurred on items (tenant_id, user_id, occurred_at desc, id desc)`);
    await sql.unsafe(`create index items_user_bits on items (tenant_id, user_id) include (id, embedding_bits, occurred_at, valid_to, expires_at)`);
    for (const size of sizes) {
      const more = Array.from({ length: size - loaded }, () => noisy(centres[Math.floor(random() * CENTRES)]!, sigma));
      const rate = await insert('items', more, loaded);
      all.push(...more);
      loaded = size;
      print({ dims, size, strategy: 'load (bits + index)', insert_per_s: Math.round(rate) });
      await sql.unsafe('vacuum (analyze) items');
      const queries = Array.from({ length: queryCount }, () => noisy(all[Math.floor(random() * all.length)]!, sigma));

      const exact = await timed(queries, async (q) => ids(await sql.unsafe(`select id from items where tenant_id = 't' and user_id = 'u' and valid_to is null order by embedding <=> $1::vector, id limit 10`, [q])), undefined);
      if (strategies.has('exact')) print({ dims, size, strategy: 'exact', ...exact, answers: undefined } as Row);

      if (strategies.has('binary')) {
        const [bits] = await sql.unsafe(`select pg_relation_size('items_user_bits') as b`);
        for (const n of [100, 200, 400]) {
          const r = await timed(queries, async (q) => ids(await sql.unsafe(
            `with near as materialized (
               select id from items where tenant_id = 't' and user_id = 'u' and valid_to is null
               order by embedding_bits <~> binary_quantize($1::vector) limit ${n})
             select m.id from items m where m.id in (select id from near) and m.tenant_id = 't'
             order by m.embedding <=> $1::vector, m.id limit 10`, [q])), exact.answers);
          print({ dims, size, strategy: `binary (${n})`, p50_ms: r.p50_ms, p95_ms: r.p95_ms, recall_at_10: r.recall_at_10, index_mb: round(Number(bits!.b) / 2 ** 20, 1) });
        }
      }

      if (strategies.has('hnsw')) {
        let t = performance.now();
        await sql.unsafe(`create index items_hnsw on items using hnsw ((embedding::vector(${dims})) vector_cosine_ops)`);
        const build = (performance.now() - t) / 1000;
        const [s] = await sql.unsafe(`select pg_relation_size('items_hnsw') as b`);
        for (const ef of [40, 100]) {
          const r = await timed(queries, async (q) => ids(await sql.begin(async (tx) => {
            await tx.unsafe(`set local hnsw.ef_search = ${ef}; set local hnsw.iterative_scan = relaxed_order`);
            return tx.unsafe(`select id from (select id, embedding::vector(${dims}) <=> $1::vector(${dims}) as d from items
              where tenant_id = 't' and user_id = 'u' and valid_to is null order by embedding::vector(${dims}) <=> $1::vector(${dims}) limit 10) s order by d, id`, [q]);
          })), exact.answers);
          print({ dims, size, strategy: `hnsw (ef ${ef})`, p50_ms: r.p50_ms, p95_ms: r.p95_ms, recall_at_10: r.recall_at_10, build_s: round(build, 1), index_mb: round(Number(s!.b) / 2 ** 20, 1) });
        }
        t = performance.now();
        const sample = Array.from({ length: 300 }, () => noisy(centres[Math.floor(random() * CENTRES)]!, sigma));
        const rate = await insert('items', sample, 10_000_000);
        print({ dims, size, strategy: 'insert with hnsw', insert_per_s: Math.round(rate) });
        await sql.unsafe(`delete from items where occurred_at >= $1::timestamptz`, [new Date(Date.UTC(2024, 0, 1) + 10_000_000 * 60_000).toISOString()]);
        await sql.unsafe('drop index items_hnsw');
      }

      if (strategies.has('hnswbits')) {
        const t = performance.now();
        await sql.unsafe(`create index items_hnsw_bits on items using hnsw ((embedding_bits::bit(${dims})) bit_hamming_ops)`);
        const build = (performance.now() - t) / 1000;
        const [s] = await sql.unsafe(`select pg_relation_size('items_hnsw_bits') as b`);
        for (const n of [200, 400]) {
          const r = await timed(queries, async (q) => ids(await sql.begin(async (tx) => {
            await tx.unsafe(`set local hnsw.ef_search = ${n}; set local hnsw.iterative_scan = relaxed_order`);
            return tx.unsafe(`with near as materialized (
                select id from items where tenant_id = 't' and user_id = 'u' and valid_to is null
                order by embedding_bits::bit(${dims}) <~> binary_quantize($1::vector)::bit(${dims}) limit ${n})
              select m.id from items m where m.id in (select id from near) and m.tenant_id = 't'
              order by m.embedding <=> $1::vector, m.id limit 10`, [q]);
          })), exact.answers);
          print({ dims, size, strategy: `hnsw on bits (${n})`, p50_ms: r.p50_ms, p95_ms: r.p95_ms, recall_at_10: r.recall_at_10, build_s: round(build, 1), index_mb: round(Number(s!.b) / 2 ** 20, 1) });
        }
        const sample = Array.from({ length: 2000 }, () => noisy(centres[Math.floor(random() * CENTRES)]!, sigma));
        const rate = await insert('items', sample, 10_000_000);
        print({ dims, size, strategy: 'insert with hnsw on bits', insert_per_s: Math.round(rate) });
        await sql.unsafe(`delete from items where occurred_at >= $1::timestamptz`, [new Date(Date.UTC(2024, 0, 1) + 10_000_000 * 60_000).toISOString()]);
        await sql.unsafe('drop index items_hnsw_bits');
        await sql.unsafe('vacuum items');
      }

      if (strategies.has('ivfflat')) {
        const lists = Math.max(10, Math.round(size / 1000));
        let t = performance.now();
        await sql.unsafe(`create index items_ivf on items using ivfflat ((embedding::vector(${dims})) vector_cosine_ops) with (lists = ${lists})`);
        const build = (performance.now() - t) / 1000;
        const [s] = await sql.unsafe(`select pg_relation_size('items_ivf') as b`);
        for (const probes of [Math.max(1, Math.round(Math.sqrt(lists))), Math.min(lists, 3 * Math.max(1, Math.round(Math.sqrt(lists))))]) {
          const r = await timed(queries, async (q) => ids(await sql.begin(async (tx) => {
            await tx.unsafe(`set local ivfflat.probes = ${probes}; set local ivfflat.iterative_scan = relaxed_order`);
            return tx.unsafe(`select id from (select id, embedding::vector(${dims}) <=> $1::vector(${dims}) as d from items
              where tenant_id = 't' and user_id = 'u' and valid_to is null order by embedding::vector(${dims}) <=> $1::vector(${dims}) limit 10) s order by d, id`, [q]);
          })), exact.answers);
          print({ dims, size, strategy: `ivfflat (${lists}/${probes})`, p50_ms: r.p50_ms, p95_ms: r.p95_ms, recall_at_10: r.recall_at_10, build_s: round(build, 1), index_mb: round(Number(s!.b) / 2 ** 20, 1) });
        }
        t = performance.now();
        const sample = Array.from({ length: 2000 }, () => noisy(centres[Math.floor(random() * CENTRES)]!, sigma));
        const rate = await insert('items', sample, 10_000_000);
        print({ dims, size, strategy: 'insert with ivfflat', insert_per_s: Math.round(rate) });
        await sql.unsafe(`delete from items where occurred_at >= $1::timestamptz`, [new Date(Date.UTC(2024, 0, 1) + 10_000_000 * 60_000).toISOString()]);
        await sql.unsafe('drop index items_ivf');
        await sql.unsafe('vacuum items');
      }
    }
  }
  process.stdout.write(`load average ${loadavg().map((n) => n.toFixed(2)).join(' ')}\n`);
  if (values.out) writeFileSync(path.resolve(values.out), `${JSON.stringify({ bench: 'scale', rows, at: new Date().toISOString() }, null, 2)}\n`);
} finally {
  await sql.end();
  const a = postgres(adminUrl(), { max: 1, onnotice: () => {} });
  await a.unsafe(`drop database if exists ${name} with (force)`);
  await a.end();
}
