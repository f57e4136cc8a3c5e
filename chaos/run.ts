/**
 * The chaos suite: `npm run chaos [-- --scenario NAME] [--jobs N] …`. Each scenario runs the real
 * API (WORKER=off) and two real workers as separate processes against a PostgreSQL cluster and a
 * Redis of the suite's own (never the machine's), sends a few hundred extract jobs with unique
 * facts, injects its fault mid-stream, then counts what was lost, duplicated, stuck or answered
 * 5xx. Exits 1 when any scenario fails, 2 when the harness could not run one (and none failed). See the README's "Chaos suite".
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { PACKAGE_ROOT } from '../src/db/paths.js';
import { findPgBin, makeWorkDir, PgCluster, removeWorkDir } from './cluster.js';
import { renderTable } from './report.js';
import { notRun, runScenario, type RunSettings, type ScenarioResult } from './runner.js';
import { SCENARIOS, findScenario, type Scenario } from './scenarios.js';

const HELP = `npm run chaos -- [options]

Runs fault-injection scenarios against the real API and workers, each on a PostgreSQL cluster and
a Redis started for the run (on free ports, in a temporary directory, removed afterwards).

  --scenario NAME    run only this scenario (repeatable); default: all
  --jobs N           extract jobs per scenario (default 300; the race sends N/2 pairs)
  --rate R           jobs the client starts per second (default 20)
  --parallel P       requests in flight at most (default 16)
  --stuck-after S    seconds after a fault ends by which every accepted job must have finished
                     (default 75: a killed worker's jobs must resume within 60 s with the default
                     settings, plus 15 s to run on a busy machine); the wait goes on while jobs
                     still finish (a backlog draining), up to 120 s more
  --timeout-ms MS    a request without an answer this long is a timeout (default 10000)
  --seed N           seed of the generated facts (default 1)
  --env KEY=VALUE    extra environment for every API and worker process (repeatable)
  --pg-bin DIR       directory of initdb and pg_ctl (default: pg_config --bindir)
  --keep             keep the temporary directory (logs, cluster) afterwards; the logs are kept
                     anyway when a scenario fails
  --verbose          print progress notes as they happen
  --list             list the scenarios
  --help             this text

Service settings used unless --env overrides them: QUEUE_SWEEP_INTERVAL_MS=5000 and
QUEUE_STALE_AFTER_MS=15000 (so a job Redis lost is swept up well inside the stuck bound), and
the defaults for everything else, JOB_LEASE_MS and WORKER_CONCURRENCY included.
`;

function fail(message: string): never {
  process.stderr.write(`chaos: ${message}\n`);
  process.exit(2);
}

function positive(name: string, value: string | undefined): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) fail(`${name} must be a positive number, got ${value}`);
  return n;
}

const { values } = parseArgs({
  options: {
    scenario: { type: 'string', multiple: true },
    jobs: { type: 'string', default: '300' },
    rate: { type: 'string', default: '20' },
    parallel: { type: 'string', default: '16' },
    'stuck-after': { type: 'string', default: '75' },
    'timeout-ms': { type: 'string', default: '10000' },
    seed: { type: 'string', default: '1' },
    env: { type: 'string', multiple: true },
    'pg-bin': { type: 'string' },
    keep: { type: 'boolean', default: false },
    verbose: { type: 'boolean', default: false },
    list: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
  strict: true,
});

if (values.help) {
  process.stdout.write(HELP);
  process.exit(0);
}
if (values.list) {
  for (const s of SCENARIOS) process.stdout.write(`${s.name.padEnd(22)} ${s.summary}\n`);
  process.exit(0);
}

const scenarios: Scenario[] = (values.scenario ?? SCENARIOS.map((s) => s.name)).map(
  (name) => findScenario(name) ?? fail(`no scenario "${name}"; --list shows them`),
);
const serviceEnv: Record<string, string> = { QUEUE_SWEEP_INTERVAL_MS: '5000', QUEUE_STALE_AFTER_MS: '15000' };
for (const pair of values.env ?? []) {
  const at = pair.indexOf('=');
  if (at < 1) fail(`--env wants KEY=VALUE, got ${pair}`);
  serviceEnv[pair.slice(0, at)] = pair.slice(at + 1);
}
const concurrency = Number(serviceEnv.WORKER_CONCURRENCY ?? 4);

const workDir = makeWorkDir();
const settings: RunSettings = {
  jobs: Math.floor(positive('--jobs', values.jobs)),
  seed: Math.floor(positive('--seed', values.seed)),
  rate: positive('--rate', values.rate),
  parallel: Math.floor(positive('--parallel', values.parallel)),
  stuckAfterMs: positive('--stuck-after', values['stuck-after']) * 1000,
  timeoutMs: positive('--timeout-ms', values['timeout-ms']),
  workers: 2,
  concurrency,
  serviceEnv,
  workDir,
  verbose: values.verbose,
};

let cluster: PgCluster | undefined;
/** Everything goes, unless asked to keep it; the service logs stay when something failed. */
const cleanUp = (keepLogs: boolean) => {
  cluster?.stop();
  if (values.keep) return;
  if (keepLogs) removeWorkDir(join(workDir, 'pg', 'pgdata'));
  else removeWorkDir(workDir);
};
process.on('SIGINT', () => {
  cleanUp(false);
  process.exit(130);
});

const results: ScenarioResult[] = [];
let harnessError: Error | undefined;
try {
  const started = Date.now();
  cluster = await PgCluster.create(findPgBin(values['pg-bin']), workDir);
  const template = 'chaos_template';
  const admin = cluster.admin();
  await admin.unsafe(`create database ${template}`);
  await admin.end();
  const migrated = spawnSync(process.execPath, ['--import', 'tsx', 'src/db/migrate-cli.ts'], {
    cwd: PACKAGE_ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', DATABASE_URL: cluster.url(template), AUTH_JWT_SECRET: 'x'.repeat(32), LOG_LEVEL: 'warn' },
    encoding: 'utf8',
  });
  if (migrated.status !== 0) throw new Error(`migrations failed: ${migrated.stderr}`);
  process.stderr.write(`chaos: PostgreSQL on ${cluster.port}, work directory ${workDir}\n`);
  for (const scenario of scenarios) {
    const t0 = Date.now();
    process.stderr.write(`chaos: ${scenario.name}: ${scenario.summary}\n`);
    const result = await runScenario(scenario, cluster, template, settings).catch((error: unknown) => notRun(scenario.name, error as Error));
    results.push(result);
    process.stderr.write(
      `chaos: ${scenario.name}: ${result.failures.length === 0 ? 'PASS' : `FAIL (${result.failures.join('; ')})`} in ${((Date.now() - t0) / 1000).toFixed(0)} s\n`,
    );
  }
  process.stderr.write(`chaos: done in ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
} catch (error) {
  harnessError = error as Error;
} finally {
  if (results.length > 0) process.stdout.write(`${renderTable(results, settings)}\n`);
  if (harnessError) process.stderr.write(`chaos: harness error: ${harnessError.stack ?? harnessError.message}\n`);
  const failed = harnessError !== undefined || results.some((r) => r.failures.length > 0);
  cleanUp(failed);
  if (values.keep || failed) process.stderr.write(`chaos: logs kept in ${workDir}\n`);
}
// 1: the service failed a scenario; 2: the harness could not judge (and nothing failed).
const serviceFailed = results.some((r) => r.error === undefined && r.failures.length > 0);
process.exit(serviceFailed ? 1 : harnessError || results.some((r) => r.error !== undefined) ? 2 : 0);
