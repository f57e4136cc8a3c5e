import type postgres from 'postgres';
import { sleep, type PgCluster, type RedisServer } from './cluster.js';
import type { ExtractClient } from './client.js';
import type { ServiceProcess } from './services.js';

/** What a scenario's fault gets to work with. */
export interface FaultContext {
  api: ServiceProcess;
  workers: ServiceProcess[];
  redis: RedisServer;
  pg: PgCluster;
  /** The harness's own connection to the scenario's database (spared by backend termination). */
  admin: postgres.Sql;
  database: string;
  tenantId: string;
  client: ExtractClient;
  concurrency: number;
  note(text: string): void;
}

/** When the fault began and ended (ms since epoch); "stuck" and "recovery" count from `end`. */
export interface FaultWindow {
  start: number;
  end: number;
}

export interface Scenario {
  name: string;
  summary: string;
  /** Near-duplicate pairs instead of unique facts. */
  race?: boolean;
  /** The API itself is down for a while: connection errors inside the window are expected. */
  apiOutage?: boolean;
  inject?(ctx: FaultContext): Promise<FaultWindow>;
}

/** Jobs in `running` right now for the scenario's tenant. */
async function runningJobs(ctx: FaultContext): Promise<number> {
  try {
    const [row] = await ctx.admin<{ n: number }[]>`
      select count(*)::int as n from extraction_jobs where tenant_id = ${ctx.tenantId} and status = 'running'`;
    return row?.n ?? 0;
  } catch {
    return 0;
  }
}

/**
 * Waits (up to 15 s) until more jobs run than one worker can hold, so each of the two workers has
 * at least one in hand when the fault strikes; says so when that never happened.
 */
async function whenBothWorkersBusy(ctx: FaultContext): Promise<void> {
  const needed = ctx.concurrency + 1;
  const deadline = Date.now() + 15_000;
  let seen = 0;
  while (Date.now() < deadline) {
    seen = await runningJobs(ctx);
    if (seen >= needed) {
      ctx.note(`${seen} jobs running at the fault`);
      return;
    }
    await sleep(25);
  }
  ctx.note(`only ${seen} jobs running at the fault (wanted ${needed}): the victim may have held none`);
}

async function restartLater(ctx: FaultContext, process: ServiceProcess, delayMs: number): Promise<void> {
  await sleep(delayMs);
  // A scenario that ended during the delay tore the process down: starting it now would outlive the run.
  if (process.retired) return;
  await process.start().catch((error: unknown) => {
    if (!process.retired) ctx.note(`${process.name} did not come back: ${(error as Error).message}`);
  });
}

export const SCENARIOS: readonly Scenario[] = [
  {
    name: 'worker-sigkill',
    summary: 'one of two workers SIGKILLed with jobs in hand, restarted 1 s later',
    async inject(ctx) {
      await whenBothWorkersBusy(ctx);
      const start = Date.now();
      await ctx.workers[0]!.kill('SIGKILL');
      void restartLater(ctx, ctx.workers[0]!, 1000);
      return { start, end: start };
    },
  },
  {
    name: 'redis-restart',
    summary: 'Redis SIGKILLed, down 3 s, restarted empty (no persistence)',
    async inject(ctx) {
      const start = Date.now();
      await ctx.redis.kill();
      await sleep(3000);
      await ctx.redis.start();
      return { start, end: Date.now() };
    },
  },
  {
    name: 'pg-restart',
    summary: 'pg_ctl restart -m fast of the suite\'s own cluster',
    async inject(ctx) {
      await whenBothWorkersBusy(ctx);
      const start = Date.now();
      await ctx.pg.restart();
      const end = Date.now();
      ctx.note(`PostgreSQL down for ${((end - start) / 1000).toFixed(1)} s`);
      return { start, end };
    },
  },
  {
    name: 'backend-termination',
    summary: 'pg_terminate_backend of every service session, three times 300 ms apart',
    async inject(ctx) {
      await whenBothWorkersBusy(ctx);
      const start = Date.now();
      let terminated = 0;
      for (let round = 0; round < 3; round++) {
        if (round > 0) await sleep(300);
        const rows = await ctx.admin<{ ok: boolean }[]>`
          select pg_terminate_backend(pid) as ok from pg_stat_activity
          where datname = ${ctx.database} and application_name = 'engram' and pid <> pg_backend_pid()`;
        terminated += rows.filter((r) => r.ok).length;
      }
      ctx.note(`${terminated} backends terminated`);
      return { start, end: Date.now() };
    },
  },
  {
    name: 'api-sigkill',
    summary: 'the API SIGKILLed mid-stream and started again at once',
    apiOutage: true,
    async inject(ctx) {
      const start = Date.now();
      await ctx.api.kill('SIGKILL');
      const end = Date.now();
      await ctx.api.start().catch((error: unknown) => ctx.note(`API did not come back: ${(error as Error).message}`));
      ctx.note(`API back after ${((Date.now() - start) / 1000).toFixed(1)} s (process start-up included)`);
      return { start, end };
    },
  },
  {
    name: 'worker-sigterm',
    summary: 'one of two workers sent SIGTERM with jobs in hand, restarted 1 s after it exits',
    async inject(ctx) {
      await whenBothWorkersBusy(ctx);
      const start = Date.now();
      const exit = await ctx.workers[0]!.kill('SIGTERM');
      const end = Date.now();
      ctx.note(`SIGTERMed worker exited after ${((end - start) / 1000).toFixed(1)} s with ${exit?.code ?? exit?.signal ?? '?'}`);
      void restartLater(ctx, ctx.workers[0]!, 1000);
      return { start, end };
    },
  },
  {
    name: 'near-duplicate-race',
    summary: 'two workers, three users, near-identical facts sent as concurrent pairs',
    race: true,
  },
];

export function findScenario(name: string): Scenario | undefined {
  return SCENARIOS.find((s) => s.name === name);
}
