/**
 * `npm run bench -- hostile`: one tenant's costly recalls against everyone else's latency.
 *
 * A real server (the runtime behind @hono/node-server, on loopback, PostgreSQL of the test
 * services in a database of its own) holds an attacker with --memories memories (default 10,000)
 * and a victim tenant with --victim-memories (default 600). The attacker sends recalls whose query
 * is 8,000 characters of ~850 distinct words at `limit` 100, --concurrency at once (default 20),
 * for --seconds (default 20); meanwhile the victim, one request at a time, alternates an ordinary
 * `GET /memories` and a short recall. The victim's latencies are reported for a quiet phase first
 * and then under attack, with the event loop's delay over each phase (perf_hooks'
 * monitorEventLoopDelay: the longest time the server could not run anything else).
 *
 *   npm run bench -- hostile [--memories 10000] [--victim-memories 600] [--concurrency 20]
 *     [--seconds 20] [--quiet-seconds 5] [--out figures.json]
 *
 * The server, the attacker and the victim share one process, so the event loop measured is the
 * server's (the clients' own work is a few JSON parses per request). The memories are made-up words
 * from a fixed seed, so every run sees the same text.
 */
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { VACUUM_AFTER_LOAD } from './bench-runtime.js';
import { startBenchServer } from './bench-server.js';

const { values } = parseArgs({
  options: {
    memories: { type: 'string', default: '10000' },
    'victim-memories': { type: 'string', default: '600' },
    concurrency: { type: 'string', default: '20' },
    seconds: { type: 'string', default: '20' },
    'quiet-seconds': { type: 'string', default: '5' },
    out: { type: 'string' },
    /** Leave the database in place (its name is printed) to look at plans afterwards. */
    keep: { type: 'boolean', default: false },
    /** Load the data and stop, before the runs. */
    'load-only': { type: 'boolean', default: false },
  },
  strict: true,
});
const positive = (name: string, text: string | undefined) => {
  const n = Number(text);
  if (!(Number.isFinite(n) && n > 0)) {
    process.stderr.write(`bench:hostile: --${name} must be a positive number\n`);
    process.exit(2);
  }
  return n;
};
const attackerMemories = Math.round(positive('memories', values.memories));
const victimMemories = Math.round(positive('victim-memories', values['victim-memories']));
const concurrency = Math.round(positive('concurrency', values.concurrency));
const attackMs = positive('seconds', values.seconds) * 1000;
const quietMs = positive('quiet-seconds', values['quiet-seconds']) * 1000;

// ---------------------------------------------------------------------------------------------
// Text: made-up words (so PostgreSQL's stemmer and stop list leave them alone), Zipf-like use.

let seed = 42;
const random = () => {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed / 2147483648;
};
const SYLLABLES = ['ka', 'lo', 'mi', 'ren', 'tu', 'vas', 'po', 'ri', 'zel', 'na', 'dor', 'qui', 'fe', 'sol', 'bra', 'ne'];
const VOCABULARY = [
  ...new Set(Array.from({ length: 6000 }, () => Array.from({ length: 2 + Math.floor(random() * 2) }, () => SYLLABLES[Math.floor(random() * SYLLABLES.length)]).join(''))),
].slice(0, 4000);
/** A word index skewed towards the common end, as in real text. */
const word = () => VOCABULARY[Math.floor(VOCABULARY.length * random() ** 2.5)]!;
const sentence = (words: number) => Array.from({ length: words }, word).join(' ');

/** ~850 distinct words of the common end (each in many memories), repeated up to 8,000 characters. */
function attackQuery(): string {
  const distinct = VOCABULARY.slice(0, 850);
  let text = distinct.join(' ');
  while (text.length < 8000) text += ` ${distinct[Math.floor(random() * distinct.length)]}`;
  return text.slice(0, 8000).replace(/\s\S*$/, '');
}

// ---------------------------------------------------------------------------------------------

function summary(samples: number[]) {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN;
  const r = (n: number) => Math.round(n * 10) / 10;
  return { n: sorted.length, p50: r(at(50)), p95: r(at(95)), max: r(sorted[sorted.length - 1] ?? Number.NaN) };
}

async function main(): Promise<void> {
  const bench = await startBenchServer();
  const { base } = bench;
  const token = (tenant: string, user: string) => bench.token(tenant, user, 'memories:read memories:write');
  const attacker = await token('bench-attacker', 'mallory');
  const victim = await token('bench-victim', 'alice');
  const call = async (auth: string, method: string, route: string, body?: unknown) => {
    const res = await fetch(`${base}${route}`, {
      method,
      headers: { authorization: `Bearer ${auth}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${route} answered ${res.status}: ${text.slice(0, 300)}`);
    return text;
  };

  try {
    const load = async (auth: string, count: number) => {
      for (let i = 0; i < count; i += 1000) {
        const batch = Array.from({ length: Math.min(1000, count - i) }, (_, j) => ({ content: `${sentence(8 + Math.floor(random() * 10))} ${i + j}` }));
        await call(auth, 'POST', '/memories', { memories: batch });
      }
    };
    await load(attacker, attackerMemories);
    await load(victim, victimMemories);
    await bench.owner.unsafe(VACUUM_AFTER_LOAD);

    if (values['load-only']) return;
    const query = attackQuery();
    const distinctWords = new Set(query.split(' ')).size;
    const victimRecall = { query: `${VOCABULARY[3]} ${VOCABULARY[40]} ${VOCABULARY[700]}?`, limit: 10 };
    for (let i = 0; i < 5; i++) {
      await call(victim, 'GET', '/memories?limit=20');
      await call(victim, 'POST', '/memories/recall', victimRecall);
    }
    const attackLone: number[] = [];
    for (let i = 0; i < 3; i++) {
      const started = performance.now();
      await call(attacker, 'POST', '/memories/recall', { query, limit: 100 });
      attackLone.push(performance.now() - started);
    }

    /** The victim, one request at a time, until stopped: its latencies per route. */
    const victimLoop = async (until: () => boolean) => {
      const list: number[] = [];
      const recall: number[] = [];
      while (!until()) {
        let started = performance.now();
        await call(victim, 'GET', '/memories?limit=20');
        list.push(performance.now() - started);
        started = performance.now();
        await call(victim, 'POST', '/memories/recall', victimRecall);
        recall.push(performance.now() - started);
        await new Promise((r) => setTimeout(r, 20));
      }
      return { list, recall };
    };
    const delay = monitorEventLoopDelay({ resolution: 5 });
    const loopDelay = () => ({ max_ms: Math.round(delay.max / 1e5) / 10, p99_ms: Math.round(delay.percentile(99) / 1e5) / 10 });

    delay.enable();
    let end = performance.now() + quietMs;
    const quiet = await victimLoop(() => performance.now() > end);
    delay.disable();
    const quietLoop = loopDelay();

    delay.reset();
    delay.enable();
    let attacking = true;
    const attackLatencies: number[] = [];
    const attackers = Array.from({ length: concurrency }, async () => {
      while (attacking) {
        const started = performance.now();
        await call(attacker, 'POST', '/memories/recall', { query, limit: 100 });
        attackLatencies.push(performance.now() - started);
      }
    });
    end = performance.now() + attackMs;
    const attacked = await victimLoop(() => performance.now() > end);
    attacking = false;
    delay.disable();
    const attackLoop = loopDelay();
    await Promise.all(attackers);

    const figures = {
      bench: 'hostile',
      attacker: { memories: attackerMemories, query_chars: query.length, query_distinct_words: distinctWords, limit: 100, concurrency, alone_ms: summary(attackLone), under_attack_ms: summary(attackLatencies) },
      victim: { memories: victimMemories },
      quiet: { list_ms: summary(quiet.list), recall_ms: summary(quiet.recall), event_loop_delay: quietLoop },
      attack: { seconds: attackMs / 1000, list_ms: summary(attacked.list), recall_ms: summary(attacked.recall), event_loop_delay: attackLoop },
      load_average: loadavg().map((n) => Math.round(n * 100) / 100),
      node: process.version,
      at: new Date().toISOString(),
    };
    const line = (label: string, s: ReturnType<typeof summary>) => `  ${label.padEnd(22)} n ${String(s.n).padStart(5)}  p50 ${String(s.p50).padStart(8)} ms  p95 ${String(s.p95).padStart(8)} ms  max ${String(s.max).padStart(8)} ms`;
    process.stdout.write(
      [
        `hostile recall: attacker ${attackerMemories} memories, ${query.length}-character queries of ${distinctWords} distinct words at limit 100, ${concurrency} at once for ${attackMs / 1000} s; victim ${victimMemories} memories`,
        line('attack recall, alone', figures.attacker.alone_ms),
        line('attack recall, 20 on', figures.attacker.under_attack_ms),
        'quiet:',
        line('victim GET /memories', figures.quiet.list_ms),
        line('victim recall', figures.quiet.recall_ms),
        `  event-loop delay       max ${quietLoop.max_ms} ms, p99 ${quietLoop.p99_ms} ms`,
        'under attack:',
        line('victim GET /memories', figures.attack.list_ms),
        line('victim recall', figures.attack.recall_ms),
        `  event-loop delay       max ${attackLoop.max_ms} ms, p99 ${attackLoop.p99_ms} ms`,
        `load average ${figures.load_average.join(' ')}`,
        '',
      ].join('\n'),
    );
    if (values.out) writeFileSync(values.out, `${JSON.stringify(figures, null, 2)}\n`);
  } finally {
    await bench.close({ keepDatabase: values.keep });
    if (values.keep) process.stdout.write(`database ${bench.database} kept\n`);
  }
}

try {
  await main();
} catch (error) {
  process.stderr.write(`bench:hostile: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
}
