/**
 * `npm run bench:startup`: the embedded default as a developer meets it. Times `npm start`
 * (src/main.ts) from spawn to the first 200 from /readyz, on a fresh DATA_DIR (first start) and
 * again on the same one (warm restart, median of --restarts), then adds --memories memories
 * through the API. The process's resident memory is read when the first start and the last
 * restart are ready, and after the memories. Prints a table and a JSON line.
 */
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { freePort, runEntry, stop, waitForStatus } from '../test/support/process.js';

const { values } = parseArgs({
  options: { restarts: { type: 'string', default: '3' }, memories: { type: 'string', default: '1000' } },
});
const restarts = Number(values.restarts);
const memoryCount = Number(values.memories);

function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0);
  return Math.round(kb / 1024);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;

const dataDir = mkdtempSync(path.join(tmpdir(), 'engram-startup-'));
try {
  const port = await freePort();
  const env = { DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: 'warn' };
  const readyz = `http://127.0.0.1:${port}/readyz`;

  let proc = runEntry('src/main.ts', env);
  const firstStartMs = await waitForStatus(readyz, 200, proc, 180_000);
  const rssFirstStart = rssMiB(proc.child.pid!);
  await stop(proc);

  const warm: number[] = [];
  for (let i = 0; i < restarts; i++) {
    proc = runEntry('src/main.ts', env);
    warm.push(await waitForStatus(readyz, 200, proc, 180_000));
    if (i < restarts - 1) await stop(proc);
  }

  const tokenCli = runEntry('src/auth/token-cli.ts', { DATA_DIR: dataDir }, ['--tenant', 'bench', '--user', 'alice']);
  await tokenCli.exited;
  const token = tokenCli.output().trim();
  const rssBefore = rssMiB(proc.child.pid!);
  const addStarted = Date.now();
  for (let offset = 0; offset < memoryCount; offset += 100) {
    const batch = Array.from({ length: Math.min(100, memoryCount - offset) }, (_, i) => ({
      content: `Memory number ${offset + i}: the user mentioned topic ${(offset + i) % 37} and detail ${(offset + i) * 7919}`,
    }));
    const res = await fetch(`http://127.0.0.1:${port}/memories`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ memories: batch }),
    });
    if (res.status !== 201) throw new Error(`POST /memories answered ${res.status}`);
  }
  const addMs = Date.now() - addStarted;
  const rssAfter = rssMiB(proc.child.pid!);
  await stop(proc);

  const result = {
    bench: 'startup',
    first_start_to_ready_ms: firstStartMs,
    warm_restart_to_ready_ms_median: median(warm),
    warm_restarts_ms: warm,
    memories_added: memoryCount,
    add_memories_per_s: Math.round((memoryCount / addMs) * 1000),
    rss_mib_first_start: rssFirstStart,
    rss_mib_ready: rssBefore,
    rss_mib_after_memories: rssAfter,
    load_average: readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' '),
  };
  console.log(`first start → /readyz 200     ${firstStartMs} ms`);
  console.log(`warm restart → /readyz 200    ${median(warm)} ms (median of ${warm.join(', ')})`);
  console.log(`RSS after the first start     ${rssFirstStart} MiB`);
  console.log(`RSS when ready (restart)      ${rssBefore} MiB`);
  console.log(`RSS after ${memoryCount} memories        ${rssAfter} MiB  (${result.add_memories_per_s} memories/s through POST /memories)`);
  console.log(JSON.stringify(result));
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
