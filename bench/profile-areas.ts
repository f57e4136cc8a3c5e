/**
 * A V8 CPU profile (`node --cpu-prof`) as self-time by area of the service: logging, metrics,
 * validation, JSON, auth, the HTTP layer, the database driver, query building, the embedder, recall,
 * GC. A sample counts for the innermost frame that belongs to a named area; Node's own frames
 * (sockets, streams, crypto) count for the package that called them, or as Node's when none did.
 * Only samples from the first request on (the first one under @hono/node-server) are counted, so
 * start-up's module loading is left out.
 */
export interface CpuProfile {
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string }; children?: number[] }>;
  samples: number[];
  timeDeltas: number[];
}

const AREAS: Array<[string, RegExp]> = [
  ['logging (pino)', /node_modules\/(pino|sonic-boom|thread-stream|pino-std-serializers|fast-redact|quick-format-unescaped|on-exit-leak-free)\//],
  ['metrics (prom-client)', /node_modules\/(prom-client|tdigest|bintrees)\//],
  ['validation (zod, input.ts)', /node_modules\/zod\/|src\/http\/input\.ts|src\/[a-z]+\/schemas\.ts/],
  ['auth (jose, verifier)', /node_modules\/jose\/|src\/auth\//],
  ['hono + node-server', /node_modules\/(hono|@hono)\//],
  ['middleware, problem', /src\/http\//],
  ['db driver (postgres.js)', /node_modules\/postgres\//],
  ['query building (drizzle)', /node_modules\/drizzle-orm\//],
  ['transactions (src/db)', /src\/db\//],
  ['embedder (src/llm)', /src\/llm\//],
  ['recall (src/recall)', /src\/recall\//],
  ['memories, extraction (src)', /src\/(memories|extraction|shared|queue|observability)\//],
  ['pglite (WASM)', /node_modules\/@electric-sql\//],
  ['other packages', /node_modules\//],
];

function area(frame: { functionName: string; url: string }): string | undefined {
  const { url, functionName } = frame;
  if (functionName === '(garbage collector)') return 'GC';
  if (functionName === '(idle)') return 'idle';
  if (functionName === '(program)') return 'V8/native (program)';
  if (!url && (functionName === 'stringify' || functionName === 'parse')) return 'JSON (native)';
  for (const [name, pattern] of AREAS) if (pattern.test(url)) return name;
  return undefined;
}

function nodeArea(url: string): string {
  if (/node:_http|node:net|node:internal\/(streams|net|http|stream_base)|node:stream/.test(url)) return 'node http/net/streams';
  if (/crypto/.test(url)) return 'node crypto';
  return 'node other';
}

/** The table, or '' when the profile has no sample from a request on. */
export function summariseProfile(profile: CpuProfile): string {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const areaOf = new Map<number, string>();
  const firstRequest = new Map<number, boolean>();
  const resolve = (id: number): string => {
    const cached = areaOf.get(id);
    if (cached) return cached;
    let fallback: string | undefined;
    let result: string | undefined;
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const frame = byId.get(cur)!.callFrame;
      const named = area(frame);
      if (named) {
        result = named;
        break;
      }
      if (!fallback && frame.url.startsWith('node:')) fallback = nodeArea(frame.url);
    }
    const value = result ?? fallback ?? 'other';
    areaOf.set(id, value);
    return value;
  };
  const underServer = (id: number): boolean => {
    const cached = firstRequest.get(id);
    if (cached !== undefined) return cached;
    let found = false;
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      if (/node_modules\/@hono\/node-server\//.test(byId.get(cur)!.callFrame.url)) {
        found = true;
        break;
      }
    }
    firstRequest.set(id, found);
    return found;
  };
  const totals = new Map<string, number>();
  let started = false;
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i]!;
    if (!started && !underServer(id)) continue;
    started = true;
    const name = resolve(id);
    totals.set(name, (totals.get(name) ?? 0) + (profile.timeDeltas[i] ?? 0));
  }
  const busy = [...totals].filter(([name]) => name !== 'idle').reduce((sum, [, us]) => sum + us, 0);
  // A thread that served no request (e.g. a worker thread's own profile) has nothing to say.
  if (busy === 0) return '';
  const lines = [...totals]
    .filter(([name]) => name !== 'idle')
    .sort((a, b) => b[1] - a[1])
    .map(([name, us]) => `  ${name.padEnd(30)} ${(us / 1000).toFixed(0).padStart(7)} ms  ${((us / busy) * 100).toFixed(1).padStart(5)} %`);
  lines.push(`  ${'(busy total)'.padEnd(30)} ${(busy / 1000).toFixed(0).padStart(7)} ms; idle ${((totals.get('idle') ?? 0) / 1000).toFixed(0)} ms`);
  return lines.join('\n');
}
