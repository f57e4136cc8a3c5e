/**
 * `npm run bench -- <name> [options]`: runs one benchmark, the same as `npm run bench:<name>`.
 *
 *   npm run bench -- locomo --weights relevance     recall quality and latency on LoCoMo
 *   npm run bench -- extract --jobs 500             extraction throughput through the queue
 *   npm run bench -- startup                        `npm start` to a ready API, embedded mode
 *   npm run bench -- fusion                         recall's text/vector split per embedder (EMBEDDINGS)
 *   npm run bench -- hostile                        one tenant's costly recalls against another's latency
 *   npm run bench -- scale                          recall's vector arm at 1,000-100,000 memories per user
 *   npm run bench -- biguser                        recall end to end for one user with 1,000-100,000 memories
 *   npm run bench -- tenant                         one tenant of 1,000 users × 1,000 memories: load, sizes, recall
 *   npm run bench -- redact                         the PII redactor's throughput over transcript text
 *   npm run bench -- ops --quick                    each route's latency over HTTP against its database floor
 *   npm run bench -- export                         export rows/s and RSS growth at 100,000 memories, then import rows/s
 *   npm run bench -- webhooks                       webhook delivery latency (commit to receiver) and events/s
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const BENCHMARKS = ['locomo', 'extract', 'startup', 'fusion', 'hostile', 'scale', 'biguser', 'tenant', 'redact', 'ops', 'export', 'webhooks'];
const [name, ...args] = process.argv.slice(2);
if (!name || !BENCHMARKS.includes(name)) {
  process.stderr.write(`usage: npm run bench -- <${BENCHMARKS.join('|')}> [options]\n`);
  process.exit(2);
}
const script = path.join(path.dirname(fileURLToPath(import.meta.url)), `${name}.ts`);
if (!existsSync(script)) {
  process.stderr.write(`bench: ${script} is missing\n`);
  process.exit(2);
}
const run = spawnSync(process.execPath, ['--import', 'tsx', script, ...args], { stdio: 'inherit' });
process.exit(run.status ?? 1);
