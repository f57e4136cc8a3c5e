import { sleep } from './cluster.js';
import { httpRequest } from './http.js';
import type { PlannedJob } from './facts.js';

/**
 * The client an agent would be: it sends each extract once with its own Idempotency-Key and keeps
 * sending it until it gets 202, honouring Retry-After on 503 (and 429), backing off on anything
 * else, giving up at a deadline. Every answer is tallied; the verdict decides what counts.
 */

export interface ClientOptions {
  baseUrl: string;
  token: string;
  /** No answer within this is a timeout (the request is abandoned and sent again). */
  timeoutMs: number;
  /** Jobs started per second. */
  rate: number;
  /** Requests in flight at most. */
  parallel: number;
  /** After this moment no attempt starts: what is still not accepted is given up. */
  giveUpAt: () => number;
}

export interface AttemptRecord {
  at: number;
  /** HTTP status, or 0 for no answer. */
  status: number;
  kind: 'accepted' | 'retry-after' | 'server-error' | 'client-error' | 'connection' | 'timeout';
  retryAfter?: number;
  latencyMs: number;
  /** For no answer: what undici said (ECONNREFUSED, UND_ERR_SOCKET, …). */
  error?: string;
}

export interface JobOutcome {
  job: PlannedJob;
  attempts: AttemptRecord[];
  /** Every job id the service answered for this key (more than one breaks idempotency). */
  jobIds: Set<string>;
  acceptedAt?: number;
}

export class ExtractClient {
  readonly outcomes: JobOutcome[] = [];
  private sent = 0;

  constructor(private readonly options: ClientOptions) {}

  get acceptedCount(): number {
    return this.outcomes.filter((o) => o.acceptedAt !== undefined).length;
  }

  get sentCount(): number {
    return this.sent;
  }

  /**
   * Sends the plan, `rate` jobs a second with at most `parallel` in flight. `groups` sends each
   * group's jobs at the same instant (the near-duplicate pairs); default one job per group.
   */
  async run(jobs: readonly PlannedJob[], groupOf: (job: PlannedJob) => number = (job) => job.index): Promise<void> {
    const groups = new Map<number, PlannedJob[]>();
    for (const job of jobs) {
      const key = groupOf(job);
      groups.set(key, [...(groups.get(key) ?? []), job]);
    }
    const started = Date.now();
    const inFlight = new Set<Promise<void>>();
    let i = 0;
    for (const group of groups.values()) {
      const due = started + (i * 1000 * group.length) / this.options.rate;
      i += 1;
      if (due > Date.now()) await sleep(due - Date.now());
      while (inFlight.size + group.length > this.options.parallel) await Promise.race(inFlight);
      for (const job of group) {
        this.sent += 1;
        const p = this.submit(job).finally(() => inFlight.delete(p));
        inFlight.add(p);
      }
    }
    await Promise.all(inFlight);
  }

  private async submit(job: PlannedJob): Promise<void> {
    const outcome: JobOutcome = { job, attempts: [], jobIds: new Set() };
    this.outcomes.push(outcome);
    const body = JSON.stringify({
      user_id: job.userId,
      messages: [
        { role: 'user', content: job.fact },
        { role: 'assistant', content: 'Noted, thank you for telling me.' },
      ],
    });
    let backoff = 200;
    while (Date.now() < this.options.giveUpAt()) {
      const started = Date.now();
      let record: AttemptRecord;
      let wait = 0;
      try {
        const res = await httpRequest(`${this.options.baseUrl}/memories/extract`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${this.options.token}`,
            'content-type': 'application/json',
            'idempotency-key': `chaos-${job.userId}-${job.index}`,
          },
          body,
          timeoutMs: this.options.timeoutMs,
        });
        const text = res.body;
        const latencyMs = Date.now() - started;
        const retryAfter = parseRetryAfter(headerValue(res.headers['retry-after']));
        if (res.status === 202) {
          const jobId = (JSON.parse(text) as { job_id: string }).job_id;
          outcome.jobIds.add(jobId);
          outcome.acceptedAt ??= Date.now();
          outcome.attempts.push({ at: started, status: 202, kind: 'accepted', latencyMs });
          return;
        }
        if ((res.status === 503 || res.status === 429) && retryAfter !== undefined) {
          record = { at: started, status: res.status, kind: 'retry-after', retryAfter, latencyMs };
          wait = Math.max(100, retryAfter * 1000);
        } else if (res.status >= 500) {
          record = { at: started, status: res.status, kind: 'server-error', latencyMs };
        } else {
          // A 4xx for a request the harness built correctly: a harness or service bug either way.
          record = { at: started, status: res.status, kind: 'client-error', latencyMs };
        }
      } catch (error) {
        const timedOut = (error as Error).name === 'TimeoutError' || (error as Error).name === 'AbortError';
        record = {
          at: started,
          status: 0,
          kind: timedOut ? 'timeout' : 'connection',
          latencyMs: Date.now() - started,
          error: (error as NodeJS.ErrnoException).code ?? (error as Error).message,
        };
      }
      outcome.attempts.push(record);
      if (wait === 0) {
        wait = backoff;
        backoff = Math.min(backoff * 2, 3000);
      }
      await sleep(Math.min(wait, Math.max(0, this.options.giveUpAt() - Date.now())));
    }
  }
}

function headerValue(value: string | string[] | undefined): string | null {
  return Array.isArray(value) ? (value[0] ?? null) : (value ?? null);
}

/** Retry-After in seconds (delta-seconds or an HTTP date); undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null): number | undefined {
  if (value === null) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, (date - Date.now()) / 1000);
}
