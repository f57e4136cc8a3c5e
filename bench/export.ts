/**
 * `npm run bench -- export`: streams one user's memories out of GET /memories/export and reports
 * rows/s and how far the server process's RSS rose above where it stood before the export (sampled
 * every 20 ms; the client is curl, in its own process), then imports the file back into another tenant (POST /memories/import) and reports its
 * rows/s. The memories are inserted straight into PostgreSQL (the export is measured, not the add).
 *
 *   npm run bench -- export [--memories 100000] [--no-import]
 */
import { spawn } from 'node:child_process';
import { parseArgs } from 'node:util';
import { VACUUM_AFTER_LOAD } from './bench-runtime.js';
import { startBenchServer } from './bench-server.js';

const { values } = parseArgs({
  options: { memories: { type: 'string', default: '100000' }, 'no-import': { type: 'boolean', default: false } },
  strict: true,
});
const count = Math.max(1, Math.round(Number(values.memories)));
const MB = 1024 * 1024;

const bench = await startBenchServer({ EMBEDDING_DIMENSIONS: '256' });
try {
  const tenant = 'bench-export';
  const token = await bench.token(tenant, 'una');
  // Seeds through the API first, so the database records its embedder, then in bulk.
  await fetch(`${bench.base}/memories`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ memories: [{ content: 'Una keeps a diary' }] }),
  });
  const started = performance.now();
  await bench.owner.unsafe(
    `insert into memories (tenant_id, user_id, content, content_hash, embedding, importance, category, metadata, occurred_at, created_at, updated_at)
     select $1, 'una', 'Una remembers fact number ' || g || ': the meeting on the ' || (g % 28 + 1) || 'th was about budget line ' || (g * 7919 % 100000),
            md5('bench' || g), (select ('[' || array_to_string(array_fill(0.0625::real, array[256]), ',') || ']')::vector),
            1 + g % 10, case when g % 3 = 0 then 'work' end, jsonb_build_object('n', g), now() - g * interval '1 minute',
            now() - g * interval '1 second', now()
     from generate_series(1, $2::int) g`,
    [tenant, count],
  );
  await bench.owner.unsafe(VACUUM_AFTER_LOAD);
  process.stdout.write(`seeded ${count} memories in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);

  (globalThis as { gc?: () => void }).gc?.();
  // The client is curl, in a process of its own: the RSS measured is the server's alone.
  const before = process.memoryUsage().rss;
  let peak = before;
  const heapBefore = process.memoryUsage().heapUsed;
  let heapPeak = heapBefore;
  let buffersPeak = 0;
  const sampler = setInterval(() => {
    const m = process.memoryUsage();
    peak = Math.max(peak, m.rss);
    heapPeak = Math.max(heapPeak, m.heapUsed);
    buffersPeak = Math.max(buffersPeak, m.arrayBuffers);
  }, 20);
  const t0 = performance.now();
  const curl = spawn('sh', ['-c', 'curl -sS -H "Authorization: Bearer $TOKEN" "$URL" | wc -lc'], {
    env: { ...process.env, TOKEN: token, URL: `${bench.base}/memories/export?include_superseded=true` },
  });
  let curlOut = '';
  curl.stdout.on('data', (d: Buffer) => (curlOut += d.toString()));
  const code = await new Promise<number | null>((resolve) => curl.on('exit', resolve));
  const seconds = (performance.now() - t0) / 1000;
  clearInterval(sampler);
  if (code !== 0) throw new Error(`curl exited ${code}`);
  const [lines, bytes] = curlOut.trim().split(/\s+/).map(Number) as [number, number];
  process.stdout.write(
    `export: ${lines} rows, ${(bytes / MB).toFixed(1)} MB in ${seconds.toFixed(2)} s = ${Math.round(lines / seconds)} rows/s; ` +
      `server RSS ${(before / MB).toFixed(0)} MB before, peak +${((peak - before) / MB).toFixed(1)} MB ` +
      `(JS heap peak +${((heapPeak - heapBefore) / MB).toFixed(1)} MB, array buffers peak ${(buffersPeak / MB).toFixed(1)} MB)\n`,
  );

  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc) {
    gc();
    process.stdout.write(`after a full GC: JS heap ${((process.memoryUsage().heapUsed - heapBefore) / MB).toFixed(1)} MB above where it stood before the export\n`);
  }

  if (!values['no-import']) {
    // A second export, kept whole this time (not measured), is the file to import.
    const file = await (await fetch(`${bench.base}/memories/export?include_superseded=true`, { headers: { authorization: `Bearer ${token}` } })).blob();
    const target = await bench.token('bench-import', 'una');
    const t1 = performance.now();
    const imported = await fetch(`${bench.base}/memories/import`, {
      method: 'POST',
      headers: { authorization: `Bearer ${target}`, 'content-type': 'application/x-ndjson' },
      body: file,
    });
    const result = (await imported.json()) as { imported: number; skipped: number; errors: unknown[] };
    const s = (performance.now() - t1) / 1000;
    process.stdout.write(`import: ${result.imported} imported, ${result.skipped} skipped, ${result.errors.length} errors in ${s.toFixed(1)} s = ${Math.round(result.imported / s)} rows/s (lexical embedder, 256 dimensions)\n`);
  }
} finally {
  await bench.close();
}
