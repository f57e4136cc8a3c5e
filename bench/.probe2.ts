import { readFileSync } from 'node:fs';
import pino from 'pino';
import { loadConfig } from '../src/config.js';
import { createRuntime } from '../src/runtime.js';
import { withTenant } from '../src/db/tenant.js';
import { findLargeScopeSignals, findRecallSignals } from '../src/recall/repository.js';
import { candidatesFromSignals } from '../src/recall/service.js';
import { queryWordForms } from '../src/recall/word-forms.js';
const runtime = await createRuntime(loadConfig({ AUTH_JWT_SECRET: 'probe-secret-0123456789-0123456789-abcdef', LOG_LEVEL: 'silent', EMBEDDINGS: 'lexical', DATABASE_URL: process.env.TEST_DATABASE_URL }), { logger: pino({ level: 'silent' }) });
const qs = readFileSync('/work/shared/data/locomo-dev/queries.jsonl', 'utf8').split('\n').filter(Boolean).slice(0, 15).map((l) => JSON.parse(l).question as string);
for (const text of qs) {
  const [embedding] = await runtime.services.embedder.embed([text]);
  const q = { tenantId: 'probe', userId: 'u', embedding: embedding!, text, wordForms: queryWordForms(text), asOf: undefined, now: new Date(), poolSize: 100, maxTerms: 32, scanLimit: 2000, skipWhenCapped: true };
  const t0 = performance.now();
  const a = await withTenant(runtime.services.database, 'probe', (tx) => findRecallSignals(tx, q), { readOnly: true });
  const t1 = performance.now();
  const b = await withTenant(runtime.services.database, 'probe', (tx) => findLargeScopeSignals(tx, q), { readOnly: true });
  const t2 = performance.now();
  const c = candidatesFromSignals(b, 100);
  const t3 = performance.now();
  console.log(`skip-scan ${(t1 - t0).toFixed(1)} ms (capped ${a.capped}); large ${(t2 - t1).toFixed(1)} ms rows ${b.rows.length} docs ${b.documents}; js ${(t3 - t2).toFixed(1)} ms; ${text.slice(0, 40)}`);
}
await runtime.close();
