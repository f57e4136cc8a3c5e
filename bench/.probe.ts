import { readFileSync } from 'node:fs';
import pino from 'pino';
import { signDevToken } from '../src/auth/sign.js';
import { loadConfig } from '../src/config.js';
import { createRuntime } from '../src/runtime.js';
const secret = 'probe-secret-0123456789-0123456789-abcdef';
const runtime = await createRuntime(loadConfig({ AUTH_JWT_SECRET: secret, LOG_LEVEL: 'silent', REQUEST_TIMEOUT_MS: '600000', EMBEDDINGS: 'lexical', DATABASE_URL: process.env.TEST_DATABASE_URL, MIGRATE_ON_START: 'true' }), { logger: pino({ level: 'silent' }) });
const token = await signDevToken({ secret, issuer: 'memory-layer', audience: 'memory-api', tenantClaim: 'tenant_id', tenant: 'probe', user: 'u', scope: 'memories:read memories:write', ttlSeconds: 86400 });
const turns = readFileSync('/work/shared/data/locomo-dev/memories.jsonl', 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l).content as string);
for (let i = 0; i < 10000; i += 1000) {
  const memories = Array.from({ length: 1000 }, (_, j) => ({ content: `${turns[(i + j) % turns.length]} (copy ${Math.floor((i + j) / turns.length)})`, occurred_at: new Date(Date.UTC(2020, 0, 1) + (i + j) * 3600_000).toISOString() }));
  const res = await runtime.app.request('/memories', { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ memories }) });
  if (res.status !== 201) throw new Error(String(res.status));
}
await runtime.close();
