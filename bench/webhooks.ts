/**
 * `npm run bench -- webhooks`: delivery latency and throughput of the webhook outbox.
 *
 * The real service on loopback (PostgreSQL, the dispatcher running in-process as with
 * `npm start`) and a receiver on loopback that verifies every signature with standardwebhooks.
 * Latency: --events memories added one at a time, --interval ms apart; each event's latency is
 * from its `timestamp` (taken inside the committing transaction, just before COMMIT: so slightly
 * more than commit-to-receiver) to its arrival. Throughput: --burst events committed at once
 * (batches of 100) over --endpoints tenants with one endpoint each, first commit to last arrival.
 *
 *   npm run bench -- webhooks [--events 300] [--interval 20] [--burst 2000] [--endpoints 4]
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { Webhook } from 'standardwebhooks';
import { startBenchServer } from './bench-server.js';

const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '300' },
    interval: { type: 'string', default: '20' },
    burst: { type: 'string', default: '2000' },
    endpoints: { type: 'string', default: '4' },
  },
  strict: true,
});
const events = Number(values.events);
const intervalMs = Number(values.interval);
const burst = Number(values.burst);
const endpoints = Math.max(1, Number(values.endpoints));

const verifiers = new Map<string, Webhook>();
const arrivals: Array<{ at: number; timestamp: string; tenant: string }> = [];
let bad = 0;
const receiver = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const at = Date.now();
    const raw = Buffer.concat(chunks).toString('utf8');
    const tenant = new URL(req.url ?? '/', 'http://x').searchParams.get('t') ?? '';
    try {
      verifiers.get(tenant)!.verify(raw, req.headers as Record<string, string>);
      arrivals.push({ at, timestamp: (JSON.parse(raw) as { timestamp: string }).timestamp, tenant });
    } catch {
      bad += 1;
    }
    res.writeHead(204).end();
  });
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', () => resolve()));
const hookBase = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

const bench = await startBenchServer({ WEBHOOK_ALLOW_PRIVATE: 'true', EMBEDDING_DIMENSIONS: '256' });
bench.runtime.startWorker();
const post = async (token: string, route: string, body: unknown) => {
  const res = await fetch(`${bench.base}${route}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const json = (await res.json()) as Record<string, unknown>;
  if (!res.ok) throw new Error(`${route} answered ${res.status}: ${JSON.stringify(json)}`);
  return json;
};
async function tenantWithHook(tenant: string): Promise<string> {
  const token = await bench.token(tenant, 'vic');
  const created = await post(token, '/webhooks', { url: `${hookBase}?t=${tenant}`, events: ['memory.created'] });
  verifiers.set(tenant, new Webhook(created.secret as string));
  return token;
}
const waitFor = async (n: number) => {
  const deadline = Date.now() + 600_000;
  while (arrivals.length < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
};
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

try {
  const token = await tenantWithHook('bench-latency');
  for (let i = 0; i < events; i++) {
    await post(token, '/memories', { memories: [{ content: `Vic noted event ${i} of the latency run` }] });
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  await waitFor(events);
  const latencies = arrivals.map((a) => a.at - Date.parse(a.timestamp)).sort((a, b) => a - b);
  process.stdout.write(
    `latency (commit to receiver), ${latencies.length} events one at a time: p50 ${percentile(latencies, 50)} ms, p95 ${percentile(latencies, 95)} ms, max ${latencies[latencies.length - 1]} ms\n`,
  );

  arrivals.length = 0;
  const tokens = await Promise.all(Array.from({ length: endpoints }, (_, i) => tenantWithHook(`bench-burst-${i}`)));
  const started = Date.now();
  const perEndpoint = Math.ceil(burst / endpoints);
  await Promise.all(
    tokens.map(async (t, e) => {
      for (let i = 0; i < perEndpoint; i += 100) {
        await post(t, '/memories', { memories: Array.from({ length: Math.min(100, perEndpoint - i) }, (_, j) => ({ content: `Vic burst fact ${e}-${i + j}` })) });
      }
    }),
  );
  const committed = Date.now();
  await waitFor(perEndpoint * endpoints);
  const seconds = (Date.now() - started) / 1000;
  process.stdout.write(
    `throughput: ${arrivals.length} events over ${endpoints} endpoint(s) in ${seconds.toFixed(1)} s = ${Math.round(arrivals.length / seconds)} events/s ` +
      `(all committed after ${((committed - started) / 1000).toFixed(1)} s); bad signatures: ${bad}\n`,
  );
} finally {
  await bench.close();
  receiver.close();
}
