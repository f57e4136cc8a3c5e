/**
 * `npm run bench:startup`: the embedded default as a developer meets it. Runs `npm start` itself
 * (npm, its shell and the package's start script, in a process group of their own as in a
 * terminal) from spawn to the first 200 from /readyz, on a fresh DATA_DIR (first start) and again
 * on the same one (warm restart, median of --restarts), then adds --memories memories through the
 * API. Resident memory is read for the server (the Node process running src/main.ts) and for the
 * whole `npm start` tree (npm, sh and the server), when the first start and the last restart are
 * ready, --settle-ms later, and after the memories. Prints a table and a JSON line.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, readdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { PACKAGE_ROOT } from '../src/db/paths.js';
import { freePort, runEntry, waitForStatus, type ServiceProcess } from '../test/support/process.js';

const { values } = parseArgs({
  options: {
    restarts: { type: 'string', default: '3' },
    memories: { type: 'string', default: '1000' },
    'settle-ms': { type: 'string', default: '3000' },
  },
});
const restarts = Number(values.restarts);
const memoryCount = Number(values.memories);
const settleMs = Number(values['settle-ms']);

function rssMiB(pid: number): number {
  try {
    const kb = Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
    return kb / 1024;
  } catch {
    return 0; // exited between the listing and the read
  }
}

/** The process and all its descendants, each with its command line. */
function processTree(root: number): { pid: number; cmdline: string }[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // The parent pid is the second field after the parenthesised command name.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // gone
    }
  }
  const tree: { pid: number; cmdline: string }[] = [];
  const walk = (pid: number) => {
    let cmdline = '';
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
    } catch {
      return;
    }
    tree.push({ pid, cmdline });
    for (const child of children.get(pid) ?? []) walk(child);
  };
  walk(root);
  return tree;
}

interface Sample {
  server: number;
  tree: number;
  processes: string[];
}

/** The server's RSS and the whole tree's, in MiB. */
function sample(proc: ServiceProcess): Sample {
  const tree = processTree(proc.child.pid!);
  // The innermost one: the shell and a wrapper (tsx's CLI) name the entry too.
  const server = tree.findLast((p) => p.cmdline.includes('src/main.ts') || p.cmdline.includes('dist/src/main.js'));
  if (!server) throw new Error(`no server process under npm start: ${JSON.stringify(tree)}`);
  const perProcess = tree.map((p) => ({ ...p, rss: rssMiB(p.pid) }));
  return {
    server: Math.round(rssMiB(server.pid)),
    tree: Math.round(perProcess.reduce((sum, p) => sum + p.rss, 0)),
    processes: perProcess.map((p) => `${Math.round(p.rss)} MiB ${p.cmdline.slice(0, 100)}`),
  };
}

/** `npm start` in a process group of its own, as a terminal runs it. */
function npmStart(env: Record<string, string>): ServiceProcess {
  const child = spawn('npm', ['start', '--silent'], {
    cwd: PACKAGE_ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

/** SIGTERM to the whole group (as Ctrl-C reaches every process of a terminal's foreground job), then waits for all of it. */
async function stopGroup(proc: ServiceProcess): Promise<void> {
  const members = processTree(proc.child.pid!).map((p) => p.pid);
  try {
    process.kill(-proc.child.pid!, 'SIGTERM');
  } catch {
    // already gone
  }
  await proc.exited;
  for (const pid of members) {
    while (processTree(pid).length > 0 && readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z') {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

const settle = () => new Promise((r) => setTimeout(r, settleMs));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;

const dataDir = mkdtempSync(path.join(tmpdir(), 'engram-startup-'));
try {
  const port = await freePort();
  const env = { DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: 'warn' };
  const readyz = `http://127.0.0.1:${port}/readyz`;

  let proc = npmStart(env);
  const firstStartMs = await waitForStatus(readyz, 200, proc, 180_000);
  const firstReady = sample(proc);
  await settle();
  const firstSettled = sample(proc);
  await stopGroup(proc);

  const warm: number[] = [];
  const warmReady: Sample[] = [];
  for (let i = 0; i < restarts; i++) {
    proc = npmStart(env);
    warm.push(await waitForStatus(readyz, 200, proc, 180_000));
    warmReady.push(sample(proc));
    if (i < restarts - 1) await stopGroup(proc);
  }
  await settle();
  const warmSettled = sample(proc);

  const tokenCli = runEntry('src/auth/token-cli.ts', { DATA_DIR: dataDir }, ['--tenant', 'bench', '--user', 'alice']);
  await tokenCli.exited;
  const token = tokenCli.output().trim();
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
  const afterMemories = sample(proc);
  await stopGroup(proc);

  const result = {
    bench: 'startup',
    command: 'npm start',
    first_start_to_ready_ms: firstStartMs,
    warm_restart_to_ready_ms_median: median(warm),
    warm_restarts_ms: warm,
    memories_added: memoryCount,
    add_memories_per_s: Math.round((memoryCount / addMs) * 1000),
    rss_mib_first_start: firstReady.server,
    rss_mib_first_start_settled: firstSettled.server,
    rss_mib_ready: median(warmReady.map((s) => s.server)),
    rss_mib_ready_each: warmReady.map((s) => s.server),
    rss_mib_ready_settled: warmSettled.server,
    rss_mib_after_memories: afterMemories.server,
    tree_rss_mib_first_start: firstReady.tree,
    tree_rss_mib_ready: median(warmReady.map((s) => s.tree)),
    tree_rss_mib_after_memories: afterMemories.tree,
    settle_ms: settleMs,
    load_average: readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' '),
  };
  const both = (s: number, t: number) => `${String(s).padStart(4)} MiB  (npm start tree ${t} MiB)`;
  console.log('`npm start` processes when ready:');
  for (const line of warmReady.at(-1)!.processes) console.log(`  ${line}`);
  console.log(`first start → /readyz 200           ${firstStartMs} ms`);
  console.log(`warm restart → /readyz 200          ${median(warm)} ms (median of ${warm.join(', ')})`);
  console.log(`server RSS, first start ready       ${both(firstReady.server, firstReady.tree)}; ${settleMs} ms later ${firstSettled.server} MiB`);
  console.log(`server RSS, restart ready (median)  ${both(result.rss_mib_ready, result.tree_rss_mib_ready)}; ${settleMs} ms later ${warmSettled.server} MiB`);
  console.log(`server RSS after ${memoryCount} memories      ${both(afterMemories.server, afterMemories.tree)}  (${result.add_memories_per_s} memories/s through POST /memories)`);
  console.log(JSON.stringify(result));
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
