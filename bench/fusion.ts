/**
 * The text arm / vector arm split of recall's relevance and the relevance floor, tuned on LoCoMo:
 * the turns are stored once (embedded PGlite in memory, `POST /memories`), each question's
 * candidates and both arms' signals are read once, and the ranking is replayed for every text share
 * and floor, relevance only and with weights 0.1/0.1/0.8. Each question is also asked, as the
 * "unrelated questions" figure of bench:locomo does, of the next conversation's user: the mean
 * number of memories a limit-10 recall returns there. Prints recall@10 overall and per category;
 * quality only (latency: bench:locomo).
 *
 *   EMBEDDINGS=local npm run bench -- fusion [--data <dir>] [--text-weights 0.3,0.5,0.8]
 *     [--floors 0,0.17,0.3]
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
    floors: { type: 'string', default: '0' },
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
const runtime = await createRuntime({ ...loadConfig({ AUTH_JWT_SECRET: secret, LOG_LEVEL: 'silent', EMBEDDINGS: kind, REQUEST_TIMEOUT_MS: '600000' }), migrateOnStart: true }, { logger: pino({ level: 'silent' }), database });
const token = await signDevToken({ secret, issuer: 'memory-layer', audience: 'memory-api', tenantClaim: 'tenant_id', tenant: 't', user: 'a', scope: 'memories:read memories:write memories:act_as', ttlSeconds: 86400 });
const req = async (route: string, body: unknown) => (await runtime.app.request(route, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })).json() as Promise<{ memories: Array<{ id: string }> }>;
const idsOf = new Map<string, Set<string>>();
const users = [...new Set(turns.map((t) => t.userId))];
const t0 = performance.now();
for (const user of users) {
  const own = turns.filter((t) => t.userId === user);
  const res = await req('/memories', { user_id: user, memories: own.map((t) => ({ content: t.content, occurred_at: t.occurredAt })) });
  if (!res.memories) throw new Error(`POST /memories: ${JSON.stringify(res).slice(0, 300)}`);
  const byContent = new Map<string, Set<string>>();
  res.memories.forEach((m, i) => { const c = own[i]!.content.trim().toLowerCase(); byContent.set(c, (byContent.get(c) ?? new Set()).add(m.id)); });
  own.forEach((t) => idsOf.set(`${user}\u0000${t.sourceId}`, byContent.get(t.content.trim().toLowerCase())!));
}
console.log(`ingest ${kind}: ${Math.round(turns.length / ((performance.now() - t0) / 1000))}/s`);
const grids = values['text-weights']!.split(',').map(Number);
const floors = values.floors!.split(',').map(Number);
const t1 = performance.now();
const qEmb = await runtime.services.embedder.embed(questions.map((q) => q.question));
console.log(`query embeddings: ${((performance.now() - t1) / questions.length).toFixed(1)} ms each in batches`);
const asOfOf = new Map(questions.map((q) => [q.userId, q.asOf]));
const poolOf = (userId: string, i: number, now: Date) =>
  withTenant(database, 't', (tx) =>
    collectCandidates(tx, { tenantId: 't', userId, embedding: qEmb[i]!, text: questions[i]!.question, wordForms: queryWordForms(questions[i]!.question), asOf: now, now, poolSize: CANDIDATES_PER_ARM, maxTerms: RECALL_MAX_TERMS, scanLimit: RECALL_SCAN_LIMIT }),
  );
const prepared: Array<{ q: (typeof questions)[number]; pool: CandidatePool; now: Date; unrelated: CandidatePool; unrelatedNow: Date }> = [];
for (const [i, q] of questions.entries()) {
  const now = new Date(q.asOf);
  const other = users[(users.indexOf(q.userId) + 1) % users.length]!;
  const unrelatedNow = new Date(asOfOf.get(other) ?? q.asOf);
  prepared.push({ q, pool: await poolOf(q.userId, i, now), now, unrelated: await poolOf(other, i, unrelatedNow), unrelatedNow });
}
const mean = (a: number[]) => a.reduce((s, x) => s + x, 0) / Math.max(1, a.length);
for (const [label, weights] of [['relevance', { recency: 0, importance: 0, relevance: 1 }], ['0.1/0.1/0.8', { recency: 0.1, importance: 0.1, relevance: 0.8 }]] as const) {
  for (const w of grids) {
    for (const floor of floors) {
      const byCat = new Map<string, number[]>();
      const returned: number[] = [];
      for (const { q, pool, now, unrelated, unrelatedNow } of prepared) {
        const options = { weights, halfLifeHours: 720, minScore: undefined, minRelevance: floor, limit: 10 };
        const rank = new Set(rankRecallCandidates(pool, { ...options, now }, w).map((c) => c.id));
        const found = q.evidence.filter((e) => [...(idsOf.get(`${q.userId}\u0000${e}`) ?? [])].some((id) => rank.has(id))).length;
        byCat.set(q.categoryName, [...(byCat.get(q.categoryName) ?? []), q.evidence.length ? found / q.evidence.length : 0]);
        returned.push(rankRecallCandidates(unrelated, { ...options, now: unrelatedNow }, w).length);
      }
      const all = [...byCat.values()].flat();
      console.log(`${kind} ${label} text ${w} floor ${floor}: R@10 ${mean(all).toFixed(4)}  ${[...byCat].map(([c, a]) => `${c} ${mean(a).toFixed(3)}`).join('  ')}  unrelated ${mean(returned).toFixed(2)}`);
    }
  }
}
await runtime.close();
await database.close();
