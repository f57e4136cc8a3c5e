import { randomUUID } from 'node:crypto';
import { signDevToken } from '../src/auth/sign.js';
import { freePort, sleep, RedisServer, type PgCluster } from './cluster.js';
import { ExtractClient, type JobOutcome } from './client.js';
import { httpRequest } from './http.js';
import { checkPlan, nearDuplicateJobs, normalise, seededRandom, storedFact, uniqueFactJobs, type PlannedJob } from './facts.js';
import type { FaultContext, FaultWindow, Scenario } from './scenarios.js';
import { ServiceProcess } from './services.js';

export interface RunSettings {
  jobs: number;
  seed: number;
  /** Jobs a second the client starts. */
  rate: number;
  parallel: number;
  /** A job accepted but unfinished this long after the fault ended (and no longer draining) is stuck. */
  stuckAfterMs: number;
  timeoutMs: number;
  workers: number;
  concurrency: number;
  /** Environment of every service process (config variables only). */
  serviceEnv: Record<string, string>;
  workDir: string;
  verbose: boolean;
}

export interface ScenarioResult {
  name: string;
  planned: number;
  accepted: number;
  succeeded: number;
  failed: number;
  stuck: number;
  missing: number;
  duplicated: number;
  /** 5xx answers that count as failures (see `tally`). */
  serverErrors: number;
  /** 503/429 with Retry-After whose request was then accepted on a later attempt. */
  retried503: number;
  connectionErrors: number;
  unexpectedConnectionErrors: number;
  timeouts: number;
  clientErrors: number;
  crashes: number;
  idempotencyViolations: number;
  unexpectedMemories: number;
  slowestMs: number;
  /** Fault end → first good probe (0 when the API never stopped answering); undefined: never. */
  recoveryMs: number | undefined;
  /** Fault end → last accepted job finished; undefined while any is stuck. */
  drainMs: number | undefined;
  notes: string[];
  failures: string[];
  /** The harness could not run the scenario (set up, start-up): no verdict on the service. */
  error?: string;
}

/** The row of a scenario the harness could not run to its end. */
export function notRun(name: string, error: Error): ScenarioResult {
  return {
    name, planned: 0, accepted: 0, succeeded: 0, failed: 0, stuck: 0, missing: 0, duplicated: 0, serverErrors: 0,
    retried503: 0, connectionErrors: 0, unexpectedConnectionErrors: 0, timeouts: 0, clientErrors: 0, crashes: 0,
    idempotencyViolations: 0, unexpectedMemories: 0, slowestMs: 0, recoveryMs: 0, drainMs: 0, notes: [],
    failures: [`did not run: ${error.message}`], error: error.message,
  };
}

const PROBE_INTERVAL_MS = 250;
const PROBE_TIMEOUT_MS = 2000;
/** A stuck bound is extended while jobs still finish (a slow machine draining its backlog), up to this. */
const DRAIN_EXTENSION_MS = 120_000;
const QUIET_MS = 10_000;
/** Starting a tsx process takes seconds, and on a machine shared by many, over a minute. */
const START_TIMEOUT_MS = 180_000;
/** The client keeps sending a job this long after the plan's (or the fault's) end: a restart on a busy machine can take a minute. */
const GIVE_UP_AFTER_MS = 120_000;

interface Probe {
  at: number;
  ok: boolean;
}

/** GET /memories of a probe user: authenticated and reads the database, like any real request. */
function startProbe(baseUrl: string, token: string): { probes: Probe[]; stop: () => void } {
  const probes: Probe[] = [];
  let stopped = false;
  void (async () => {
    while (!stopped) {
      const at = Date.now();
      let ok = false;
      try {
        const res = await httpRequest(`${baseUrl}/memories?user_id=chaos-probe&limit=1`, {
          headers: { authorization: `Bearer ${token}` },
          timeoutMs: PROBE_TIMEOUT_MS,
        });
        ok = res.status === 200;
      } catch {
        ok = false;
      }
      probes.push({ at, ok });
      await sleep(Math.max(0, PROBE_INTERVAL_MS - (Date.now() - at)));
    }
  })();
  return { probes, stop: () => (stopped = true) };
}

interface JobRowState {
  id: string;
  status: string;
  finished_at: Date | null;
}

export async function runScenario(scenario: Scenario, pg: PgCluster, template: string, settings: RunSettings): Promise<ScenarioResult> {
  const notes: string[] = [];
  const note = (text: string) => {
    notes.push(text);
    if (settings.verbose) process.stderr.write(`  [${scenario.name}] ${text}\n`);
  };
  const database = `chaos_${scenario.name.replace(/-/g, '_')}`;
  const setup = pg.admin();
  await setup.unsafe(`drop database if exists ${database} with (force)`);
  await setup.unsafe(`create database ${database} template ${template}`);
  await setup.end();

  const redis = await RedisServer.create(settings.workDir, scenario.name);
  const secret = randomUUID() + randomUUID();
  const tenantId = randomUUID();
  const apiPort = await freePort();
  const env = {
    DATABASE_URL: pg.url(database),
    REDIS_URL: redis.url,
    AUTH_JWT_SECRET: secret,
    MIGRATE_ON_START: 'false',
    DATA_DIR: `${settings.workDir}/data`,
    LOG_LEVEL: 'info',
    WORKER_CONCURRENCY: String(settings.concurrency),
    ...settings.serviceEnv,
  };
  const api = new ServiceProcess(`${scenario.name}-api`, 'src/main.ts', { ...env, WORKER: 'off', PORT: String(apiPort) }, apiPort, settings.workDir);
  const workers: ServiceProcess[] = [];
  for (let i = 0; i < settings.workers; i++) {
    const port = await freePort();
    workers.push(new ServiceProcess(`${scenario.name}-worker${i + 1}`, 'workers/extraction.ts', { ...env, WORKER_METRICS_PORT: String(port) }, port, settings.workDir));
  }
  const admin = pg.admin(database);
  const baseUrl = `http://127.0.0.1:${apiPort}`;
  const token = await signDevToken({
    secret,
    issuer: 'memory-layer',
    audience: 'memory-api',
    tenantClaim: 'tenant_id',
    tenant: tenantId,
    scope: 'memories:read memories:write memories:act_as',
    ttlSeconds: 3600,
    ...tokenClaims(settings.serviceEnv),
  });

  const random = seededRandom(settings.seed + scenario.name.length * 7919);
  const plan: PlannedJob[] = scenario.race
    ? nearDuplicateJobs(Math.max(3, Math.floor(settings.jobs / 2)), 3, scenario.name, random)
    : uniqueFactJobs(settings.jobs, Math.max(3, Math.ceil(settings.jobs / 10)), scenario.name, random);
  const planProblem = checkPlan(plan);
  if (planProblem) throw new Error(`harness: the generated plan is unusable: ${planProblem}`);

  const services = [api, ...workers];
  let probe: ReturnType<typeof startProbe> | undefined;
  try {
    await Promise.all(services.map((s) => s.start(START_TIMEOUT_MS)));
    probe = startProbe(baseUrl, token);
    await warmUp(probe.probes);

    const submitSeconds = plan.length / settings.rate;
    let giveUpAt = Date.now() + submitSeconds * 1000 + GIVE_UP_AFTER_MS;
    const client = new ExtractClient({ baseUrl, token, timeoutMs: settings.timeoutMs, rate: settings.rate, parallel: settings.parallel, giveUpAt: () => giveUpAt });
    const sending = client.run(plan, scenario.race ? (job) => job.pair! : undefined);

    let window: FaultWindow | undefined;
    if (scenario.inject) {
      const trigger = Math.floor(plan.length * 0.4);
      while (client.acceptedCount < trigger && client.sentCount < plan.length) await sleep(20);
      const ctx: FaultContext = { api, workers, redis, pg, admin, database, tenantId, client, concurrency: settings.concurrency, note };
      note(`fault at ${client.acceptedCount}/${plan.length} accepted`);
      window = await scenario.inject(ctx);
      // However long the fault took, the client keeps trying for a while after it ended.
      giveUpAt = Math.max(giveUpAt, window.end + GIVE_UP_AFTER_MS);
    }
    await sending;
    const sentAllAt = Date.now();
    window ??= { start: sentAllAt, end: sentAllAt };

    const accepted = client.outcomes.filter((o) => o.acceptedAt !== undefined);
    const acceptedIds = new Set(accepted.map((o) => [...o.jobIds][0]!));
    const deadline = window.end + settings.stuckAfterMs;
    let lastFinished = -1;
    let lastProgressAt = Date.now();
    for (;;) {
      const rows = await jobRows(admin, tenantId);
      const open = rows.filter((r) => acceptedIds.has(r.id) && (r.status === 'queued' || r.status === 'running')).length;
      const finished = rows.filter((r) => r.status === 'succeeded' || r.status === 'failed').length;
      if (finished !== lastFinished) {
        lastFinished = finished;
        lastProgressAt = Date.now();
      }
      const now = Date.now();
      if (open === 0 && rows.length > 0) break;
      if (now >= deadline && (now - lastProgressAt >= QUIET_MS || now >= deadline + DRAIN_EXTENSION_MS)) break;
      await sleep(500);
    }
    probe.stop();
    return await tally({ scenario, plan, outcomes: client.outcomes, admin, tenantId, window, probes: probe.probes, services, notes });
  } finally {
    probe?.stop();
    await Promise.all(services.map((s) => s.stop()));
    await admin.end({ timeout: 2 }).catch(() => {});
    await redis.kill();
  }
}

/**
 * Fresh processes answer their first requests slowly (module compilation, pools filling); on a
 * busy machine that alone can exceed the client's timeout. The load starts once the probe has
 * had five good answers in a row (or after 20 s, whatever they were).
 */
async function warmUp(probes: Probe[]): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const last = probes.slice(-5);
    if (last.length === 5 && last.every((p) => p.ok)) return;
    await sleep(100);
  }
}

/** Issuer, audience and tenant claim as the services will check them (the defaults unless overridden). */
function tokenClaims(env: Record<string, string>): { issuer?: string; audience?: string; tenantClaim?: string } {
  return {
    ...(env.AUTH_ISSUER ? { issuer: env.AUTH_ISSUER } : {}),
    ...(env.AUTH_AUDIENCE ? { audience: env.AUTH_AUDIENCE } : {}),
    ...(env.AUTH_TENANT_CLAIM ? { tenantClaim: env.AUTH_TENANT_CLAIM } : {}),
  };
}

async function jobRows(admin: FaultContext['admin'], tenantId: string): Promise<JobRowState[]> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      return await admin<JobRowState[]>`select id, status, finished_at from extraction_jobs where tenant_id = ${tenantId}`;
    } catch (error) {
      // The database restarting: the harness waits like everyone else, but not forever.
      if (Date.now() > deadline) throw new Error(`harness: cannot read the jobs: ${(error as Error).message}`);
      await sleep(500);
    }
  }
}

interface TallyInput {
  scenario: Scenario;
  plan: PlannedJob[];
  outcomes: JobOutcome[];
  admin: FaultContext['admin'];
  tenantId: string;
  window: FaultWindow;
  probes: Probe[];
  services: ServiceProcess[];
  notes: string[];
}

/**
 * Counting rules (the README's "Chaos suite" section states them for users of the table):
 * - accepted: the client got 202 for the job (on any attempt).
 * - 5xx: every answer ≥ 500, except a 503 (or 429) with Retry-After for a request the client then
 *   got accepted by retrying: that is the service shedding load correctly, counted as "503 retried".
 * - connection errors (refused, reset) count as failures, except in a scenario that kills the API,
 *   for a request that failed after the kill and was sent before the first good probe after it
 *   (+1 s). Timeouts always count.
 * - stuck: accepted, and still queued or running when the wait ended (see runScenario).
 * - missing: an accepted job that finished (not stuck: that is counted apart) left no current
 *   memory of its fact; in the race, a finished pair of which neither fact is current. duplicated: the same fact current more than once; in the race, a
 *   pair whose two near-identical facts are both current.
 */
async function tally(input: TallyInput): Promise<ScenarioResult> {
  const { scenario, plan, outcomes, admin, tenantId, window, probes, services, notes } = input;
  const rows = await jobRows(admin, tenantId);
  const statusById = new Map(rows.map((r) => [r.id, r]));
  const memories = await admin<{ user_id: string; content: string }[]>`
    select user_id, content from memories where tenant_id = ${tenantId} and valid_to is null`;

  const accepted = outcomes.filter((o) => o.acceptedAt !== undefined);
  const idOf = (o: JobOutcome) => [...o.jobIds][0]!;
  const statusOf = (o: JobOutcome) => statusById.get(idOf(o))?.status ?? 'gone';
  const succeeded = accepted.filter((o) => statusOf(o) === 'succeeded').length;
  const failed = accepted.filter((o) => statusOf(o) === 'failed').length;
  const isOpen = (o: JobOutcome) => statusOf(o) === 'queued' || statusOf(o) === 'running';
  const stuck = accepted.filter(isOpen).length;
  const gone = accepted.filter((o) => statusOf(o) === 'gone').length;
  if (gone > 0) notes.push(`${gone} accepted jobs have no row`);

  const current = new Map<string, number>();
  for (const m of memories) {
    const key = `${m.user_id}\u0000${normalise(m.content)}`;
    current.set(key, (current.get(key) ?? 0) + 1);
  }
  const keyOf = (job: PlannedJob) => `${job.userId}\u0000${storedFact(job)}`;
  const planned = new Set(plan.map(keyOf));
  let missing = 0;
  let duplicated = 0;
  if (scenario.race) {
    const pairs = new Map<number, PlannedJob[]>();
    for (const o of accepted) pairs.set(o.job.pair!, [...(pairs.get(o.job.pair!) ?? []), o.job]);
    const stuckPairs = new Set(accepted.filter(isOpen).map((o) => o.job.pair!));
    for (const [pair, acceptedJobs] of pairs) {
      const members = plan.filter((j) => j.pair === pair);
      const present = members.reduce((n, j) => n + (current.get(keyOf(j)) ?? 0), 0);
      if (present === 0 && acceptedJobs.length > 0 && !stuckPairs.has(pair)) missing += 1;
      if (present > 1) duplicated += 1;
    }
  } else {
    for (const o of accepted) if (!isOpen(o) && (current.get(keyOf(o.job)) ?? 0) === 0) missing += 1;
    for (const count of current.values()) if (count > 1) duplicated += count - 1;
  }
  let unexpectedMemories = 0;
  for (const [key, count] of current) if (!planned.has(key)) unexpectedMemories += count;

  // The API's outage, as its probes saw it: up to the first good probe after the last failed one
  // since the fault began (a process that dies a few seconds after the fault is part of it).
  const lastFailed = probes.findLast((p) => p.at >= window.start && !p.ok);
  const firstGood = lastFailed ? probes.find((p) => p.at > lastFailed.at && p.ok) : undefined;
  const recoveryMs = !lastFailed ? 0 : firstGood ? Math.max(0, firstGood.at - window.end) : undefined;
  const outageEnd = (lastFailed ? (firstGood?.at ?? Number.POSITIVE_INFINITY) : window.end) + 1000;

  let serverErrors = 0;
  let retried503 = 0;
  let connectionErrors = 0;
  let unexpectedConnectionErrors = 0;
  let timeouts = 0;
  let clientErrors = 0;
  let slowestMs = 0;
  const unexpectedCauses = new Map<string, number>();
  for (const o of outcomes) {
    for (const a of o.attempts) {
      slowestMs = Math.max(slowestMs, a.latencyMs);
      if (a.kind === 'server-error') serverErrors += 1;
      if (a.kind === 'retry-after') {
        if (o.acceptedAt !== undefined) retried503 += 1;
        else serverErrors += 1;
      }
      if (a.kind === 'timeout') timeouts += 1;
      if (a.kind === 'client-error') clientErrors += 1;
      if (a.kind === 'connection') {
        connectionErrors += 1;
        // When the error happened, not when the attempt began: a request in flight at the kill fails then.
        const failedAt = a.at + a.latencyMs;
        const inOutage = scenario.apiOutage && failedAt >= window.start && a.at <= outageEnd;
        if (!inOutage) {
          unexpectedConnectionErrors += 1;
          const cause = a.error ?? 'unknown';
          unexpectedCauses.set(cause, (unexpectedCauses.get(cause) ?? 0) + 1);
        }
      }
    }
  }
  if (unexpectedCauses.size > 0) notes.push(`connection errors: ${[...unexpectedCauses].map(([c, n]) => `${n}× ${c}`).join(', ')}`);
  const idempotencyViolations = outcomes.filter((o) => o.jobIds.size > 1).length;
  const crashes = services.reduce((n, s) => n + s.crashes.length, 0);
  for (const s of services) {
    for (const c of s.crashes) notes.push(`${s.name} died unasked (${c.signal ?? `exit ${c.code}`}) ${((c.at - window.start) / 1000).toFixed(1)} s after the fault; see ${s.logFile}`);
  }
  const finishedTimes = accepted.map((o) => statusById.get(idOf(o))?.finished_at?.getTime() ?? 0);
  const drainMs = stuck === 0 && accepted.length > 0 ? Math.max(0, Math.max(...finishedTimes) - window.end) : undefined;

  const result: ScenarioResult = {
    name: scenario.name,
    planned: plan.length,
    accepted: accepted.length,
    succeeded,
    failed,
    stuck,
    missing,
    duplicated,
    serverErrors,
    retried503,
    connectionErrors,
    unexpectedConnectionErrors,
    timeouts,
    clientErrors,
    crashes,
    idempotencyViolations,
    unexpectedMemories,
    slowestMs,
    recoveryMs,
    drainMs,
    notes,
    failures: [],
  };
  result.failures = verdict(result);
  return result;
}

function verdict(r: ScenarioResult): string[] {
  const failures: string[] = [];
  const check = (count: number, what: string) => {
    if (count > 0) failures.push(`${count} ${what}`);
  };
  check(r.planned - r.accepted, 'jobs never accepted (the client gave up)');
  check(r.missing, 'facts missing');
  check(r.duplicated, 'facts duplicated');
  check(r.stuck, 'jobs stuck');
  check(r.failed, 'jobs failed');
  check(r.serverErrors, '5xx answers');
  check(r.timeouts, 'requests without an answer in time');
  check(r.unexpectedConnectionErrors, 'connection errors outside an API outage');
  check(r.clientErrors, '4xx answers to valid requests');
  check(r.crashes, 'service processes died unasked');
  check(r.idempotencyViolations, 'Idempotency-Keys answered with two job ids');
  check(r.unexpectedMemories, 'memories nobody sent');
  if (r.recoveryMs === undefined) failures.push('the API never answered again');
  return failures;
}
