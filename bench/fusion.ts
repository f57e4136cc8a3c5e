/**
 * The text arm / vector arm split of recall's relevance, tuned on LoCoMo: the turns are stored once
 * (embedded PGlite in memory, `POST /memories`), each question's candidates and both arms' signals
 * are read once, and the ranking is replayed for every text share, relevance only and with weights
 * 0.1/0.1/0.8. Prints recall@10 overall and per category; quality only (latency: bench:locomo).
 *
 *   EMBEDDINGS=local npm run bench -- fusion [--data <dir>] [--text-weights 0.3,0.5,0.8]
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { signDevToken } from '../src/auth/sign.js';
import { loadConfig } from '../src/config.js';
import { openPglite } from '../src/db/pglite.js';
import { createRuntime } from '../src/runtime.js';
import { withTenant } from '../src/db/tenant.js';
import { CANDIDATES_PER_ARM, RECALL_MAX_TERMS, RECALL_SCAN_LIMIT, collectCandidates, rankRecallCandidates, type CandidatePool } from '../src/recall/service.js';
import { queryWordForms } from '../src/recall/word-forms.js';

const { values } = parseArgs({
  options: {
    data: { type: 'string' },
    'text-weights': { type: 'string', default: '0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1' },
  },
});
if (!values.data) {
  process.stderr.write('bench fusion: --data <dir> is required: a LoCoMo dev split, as bench:locomo reads it\n');
  process.exit(2);
}
const dir = values.data;
const read = <T>(f: string) => readFileSync(`${dir}/${f}`, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as T);
const turns = read<{ userId: string; sourceId: string; content: string; occurredAt: string }>('memories.jsonl');
const questions = read<{ userId: string; qid: string; question: string; categoryName: string; evidence: string[]; asOf: string }>('queries.jsonl');
const secret = `tune-${randomUUID()}-${randomUUID()}`;
const database = await openPglite({ dataDir: undefined });
const kind = process.env.EMBEDDINGS === 'local' ? 'local' : 'lexical';
const runtime = await createRuntime({ ...loadConfig({ AUTH_JWT_SECRET: secret, LOG_LEVEL: 'silent', EMBEDDINGS: kind }), migrateOnStart: true }, { logger: pino({ level: 'silent' }), database });
const token = await signDevToken({ secret, issuer: 'memory-layer', audience: 'memory-api', tenantClaim: 'tenant_id', tenant: 't', user: 'a', scope: 'memories:read memories:write memories:act_as', ttlSeconds: 86400 });
const req = async (route: string, body: unknown) => (await runtime.app.request(route, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })).json() as Promise<any>;
const idsOf = new Map<string, Set<string>>();
const t0 = performance.now();
for (const user of new Set(turns.map((t) => t.userId))) {
  const own = turns.filter((t) => t.userId === user);
  const res = await req('/memories', { user_id: user, memories: own.map((t) => ({ content: t.content, occurred_at: t.occurredAt })) });
  const byContent = new Map<string, Set<string>>();
  res.memories.forEach((m: any, i: number) => { const c = own[i]!.content.trim().toLowerCase(); byContent.set(c, (byContent.get(c) ?? new Set()).add(m.id)); });
  own.forEach((t) => idsOf.set(`${user}\u0000${t.sourceId}`, byContent.get(t.content.trim().toLowerCase())!));
}
console.log(`ingest ${kind}: ${Math.round(turns.length / ((performance.now() - t0) / 1000))}/s`);
const grids = values['text-weights']!.split(',').map(Number);
const prepared: Array<{ q: (typeof questions)[number]; pool: CandidatePool; now: Date }> = [];
const t1 = performance.now();
const qEmb = await runtime.services.embedder.embed(questions.map((q) => q.question));
console.log(`query embeddings: ${((performance.now() - t1) / questions.length).toFixed(1)} ms each in batches`);
for (const [i, q] of questions.entries()) {
  const now = new Date(q.asOf);
  const pool = await withTenant(database, 't', (tx) =>
    collectCandidates(tx, { tenantId: 't', userId: q.userId, embedding: qEmb[i]!, text: q.question, wordForms: queryWordForms(q.question), asOf: now, now, poolSize: CANDIDATES_PER_ARM, maxTerms: RECALL_MAX_TERMS, scanLimit: RECALL_SCAN_LIMIT }),
  );
  prepared.push({ q, pool, now });
}
for (const [label, weights] of [['relevance', { recency: 0, importance: 0, relevance: 1 }], ['0.1/0.1/0.8', { recency: 0.1, importance: 0.1, relevance: 0.8 }]] as const) {
  for (const w of grids) {
    const byCat = new Map<string, number[]>();
    for (const { q, pool, now } of prepared) {
      const ranked = rankRecallCandidates(pool, { weights, halfLifeHours: 720, now, minScore: undefined, minRelevance: 0, limit: 10 }, w);
      const rank = new Set(ranked.map((c) => c.id));
      const found = q.evidence.filter((e) => [...(idsOf.get(`${q.userId}\u0000${e}`) ?? [])].some((id) => rank.has(id))).length;
      byCat.set(q.categoryName, [...(byCat.get(q.categoryName) ?? []), q.evidence.length ? found / q.evidence.length : 0]);
    }
    const all = [...byCat.values()].flat();
    const mean = (a: number[]) => (a.reduce((s, x) => s + x, 0) / a.length).toFixed(3);
    console.log(`${kind} ${label} text ${w}: R@10 ${mean(all)}  ${[...byCat].map(([c, a]) => `${c} ${mean(a)}`).join('  ')}`);
  }
}
await runtime.close();
await database.close();
