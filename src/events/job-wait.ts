import { z } from 'zod';
import { getJob } from '../extraction/service.js';
import type { JobDto } from '../extraction/schemas.js';
import type { RequestContext } from '../shared/context.js';
import { detachedFromRequest } from '../shared/timeout.js';
import { CHANNELS, type Notifier } from './notifier.js';

/** `?wait=S` of GET /jobs/{id}: whole or fractional seconds, 0 to 30. */
export const MAX_WAIT_SECONDS = 30;
export const jobQuery = z.strictObject({
  wait: z.coerce
    .number()
    .min(0)
    .max(MAX_WAIT_SECONDS)
    .optional()
    .meta({ description: 'Seconds (0–30, fractions allowed) to wait for the job to finish before answering.', example: 10 }),
});

/** How often a waiter looks again while the listener is down (the fallback only). */
const FALLBACK_POLL_MS = 1000;

const finished = (job: JobDto) => job.status === 'succeeded' || job.status === 'failed';

/**
 * Reads in progress, by job and caller: waiters of one job woken together share one query, so a
 * crowd of waiters costs the pool one connection per wake-up, not one each.
 */
const reads = new Map<string, Promise<JobDto>>();

function sharedRead(ctx: RequestContext, id: string): Promise<JobDto> {
  const { tenantId, subject, scopes } = ctx.principal;
  const key = [tenantId, id, subject ?? '', [...scopes].sort().join(' ')].join('\u001f');
  let read = reads.get(key);
  if (!read) {
    // Shared by every waiter of the job: bound to none of their request deadlines.
    read = detachedFromRequest(() => getJob(ctx, id)).finally(() => reads.delete(key));
    reads.set(key, read);
  }
  return read;
}

/**
 * GET /jobs/{id}?wait=S: the job as soon as it has finished, or after S seconds as it is then.
 * Between looks the waiter holds no database connection: it sleeps until the job's NOTIFY (sent
 * at commit by the jobs trigger) or the deadline; it polls only while the listener is down.
 */
export async function waitForJob(ctx: RequestContext, id: string, waitSeconds: number, notifier: Notifier | undefined): Promise<JobDto> {
  const deadline = Date.now() + waitSeconds * 1000;
  const key = `${ctx.principal.tenantId}\u001f${id}`;
  let wake: () => void = () => {};
  // Subscribed before the first look, so a job finishing in between is not missed.
  const unsubscribe = notifier?.subscribe(CHANNELS.jobs, (payload) => {
    if (payload === key || payload === '') wake();
  });
  try {
    for (;;) {
      const job = await sharedRead(ctx, id);
      const remaining = deadline - Date.now();
      if (finished(job) || remaining <= 0) return job;
      const sleepMs = notifier?.ready ? remaining : Math.min(remaining, FALLBACK_POLL_MS);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, sleepMs);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  } finally {
    unsubscribe?.();
  }
}
