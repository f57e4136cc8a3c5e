import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import type { Logger } from 'pino';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { Webhook } from 'standardwebhooks';
import type { Config } from '../config.js';
import type { Database } from '../db/client.js';
import { withAppRole, withTenant } from '../db/tenant.js';
import { CHANNELS, type Notifier } from '../events/notifier.js';
import * as repo from './repository.js';
import { decryptSecret } from './secrets.js';
import { WebhookUrlError, guardedLookup, parseWebhookUrl, refusal } from './url-rules.js';
import { detachedFromRequest } from '../shared/timeout.js';

export interface DispatcherDeps {
  config: Config;
  database: Database;
  logger: Logger;
  key: Buffer;
  notifier?: Notifier | undefined;
  registry?: Registry | undefined;
}

/** The delay before retry `attempt` (1-based) with ±20% jitter, or undefined when none is left. */
export function retryDelay(scheduleMs: readonly number[], attempt: number, random: () => number = Math.random): number | undefined {
  const base = scheduleMs[attempt - 1];
  if (base === undefined) return undefined;
  return Math.round(base * (0.8 + 0.4 * random()));
}

/** What one POST came to: a status code, or an error without one (refused, timed out, reset). */
export interface PostResult {
  statusCode: number | null;
  error: string | null;
}

/**
 * POSTs a delivery without following redirects, within `timeoutMs`, connecting only to an
 * address the URL rules allow (checked on the address actually connected to).
 */
export function postWebhook(
  rawUrl: string,
  body: string,
  headers: Record<string, string>,
  options: { timeoutMs: number; allowPrivate: boolean; signal?: AbortSignal },
): Promise<PostResult> {
  let url: URL;
  try {
    url = parseWebhookUrl(rawUrl, options.allowPrivate);
  } catch (error) {
    return Promise.resolve({ statusCode: null, error: (error as Error).message });
  }
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  if (isIP(host)) {
    const reason = refusal(host, options.allowPrivate);
    if (reason) return Promise.resolve({ statusCode: null, error: reason });
  }
  if (options.signal?.aborted) return Promise.resolve({ statusCode: null, error: 'the worker stopped mid-delivery' });
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve) => {
    let settled = false;
    const done = (result: PostResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    const request = client.request(
      url,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), 'user-agent': 'engram-webhooks', ...headers },
        lookup: guardedLookup(options.allowPrivate),
        agent: false,
      },
      (response) => {
        // The body is not needed: read and drop it so the socket closes cleanly.
        response.resume();
        response.on('end', () => done({ statusCode: response.statusCode ?? null, error: null }));
        response.on('error', () => done({ statusCode: response.statusCode ?? null, error: null }));
      },
    );
    const timer = setTimeout(() => {
      request.destroy();
      done({ statusCode: null, error: `no answer within ${options.timeoutMs} ms` });
    }, options.timeoutMs);
    options.signal?.addEventListener('abort', () => {
      request.destroy();
      done({ statusCode: null, error: 'the worker stopped mid-delivery' });
    });
    request.on('error', (error: NodeJS.ErrnoException) => {
      done({ statusCode: null, error: error instanceof WebhookUrlError || error.code === 'EWEBHOOKADDRESS' ? error.message : (error.code ?? 'connection failed') });
    });
    request.end(body);
  });
}

/**
 * Delivers the outbox: leases each endpoint's oldest pending delivery (so an endpoint gets one
 * request at a time, in commit order), signs it per Standard Webhooks, POSTs it, and records the
 * outcome: a 2xx ends it, a 410 disables the endpoint, anything else retries on the schedule
 * (WEBHOOK_RETRY_SCHEDULE_MS, jittered) until it runs out. Woken by the outbox's NOTIFY; polls
 * on WEBHOOK_POLL_INTERVAL_MS besides. A worker that dies mid-delivery leaves a lease that lapses:
 * the delivery goes out again with the same webhook-id (at least once).
 */
export class WebhookDispatcher {
  private readonly inFlight = new Map<string, Promise<void>>();
  /** Aborts the requests in flight on stop: a graceful shutdown must not wait out a slow receiver. */
  private readonly stopping = new AbortController();
  private claiming: Promise<void> | undefined;
  private wokenWhileClaiming = false;
  private started = false;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;
  private readonly leaseMs: number;
  private readonly attemptsCounter: Counter<'outcome'> | undefined;
  private readonly latency: Histogram | undefined;

  constructor(private readonly deps: DispatcherDeps) {
    // Past the attempt's own timeout: only a dead worker's lease lapses.
    this.leaseMs = deps.config.webhooks.timeoutMs + 2000;
    if (deps.registry) {
      this.attemptsCounter = new Counter({
        name: 'engram_webhook_attempts_total',
        help: 'Webhook delivery attempts by outcome (succeeded, retry, failed, gone, refused)',
        labelNames: ['outcome'],
        registers: [deps.registry],
      });
      this.latency = new Histogram({
        name: 'engram_webhook_delivery_seconds',
        help: 'From the event entering the outbox to its successful delivery',
        buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 5, 30, 300, 3600, 86_400],
        registers: [deps.registry],
      });
      const { database } = deps;
      new Gauge({
        name: 'engram_webhook_deliveries',
        help: 'Webhook deliveries in the outbox by status',
        labelNames: ['status'],
        registers: [deps.registry],
        async collect() {
          const counts = await withAppRole(database, (tx) => repo.countDeliveries(tx));
          for (const [status, n] of Object.entries(counts)) this.set({ status }, n);
        },
      });
    }
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    this.unsubscribe = this.deps.notifier?.subscribe(CHANNELS.webhooks, () => this.wake());
    this.timer = setInterval(() => this.wake(), this.deps.config.webhooks.pollIntervalMs);
    this.timer.unref();
    this.wake();
  }

  wake(): void {
    if (!this.started || this.stopped) return;
    if (this.claiming) {
      this.wokenWhileClaiming = true;
      return;
    }
    // A commit's notification may wake this inside a request: its deliveries are not that request's.
    this.claiming = detachedFromRequest(() => this.claim())
      .catch((error: unknown) => this.deps.logger.warn({ err: (error as Error).name }, 'webhook claim failed'))
      .finally(() => {
        this.claiming = undefined;
        if (this.wokenWhileClaiming) {
          this.wokenWhileClaiming = false;
          this.wake();
        }
      });
  }

  private async claim(): Promise<void> {
    const free = this.deps.config.webhooks.concurrency - this.inFlight.size;
    if (free <= 0) return;
    const claimed = await withAppRole(this.deps.database, (tx) => repo.claimDeliveries(tx, this.leaseMs, free));
    for (const ref of claimed) {
      const run = this.deliver(ref)
        .catch((error: unknown) => this.deps.logger.error({ deliveryId: ref.id, err: (error as Error).name }, 'webhook delivery crashed'))
        .finally(() => {
          this.inFlight.delete(ref.id);
          this.wake();
        });
      this.inFlight.set(ref.id, run);
    }
  }

  private async deliver(ref: { tenantId: string; id: string; attempts: number }): Promise<void> {
    const { database, config, key, logger } = this.deps;
    const work = await withTenant(database, ref.tenantId, (tx) => repo.loadDelivery(tx, ref.tenantId, ref.id, ref.attempts));
    if (!work) return;
    const body = JSON.stringify(work.payload);
    const secret = decryptSecret(key, `${ref.tenantId}\u001f${work.endpoint_id}`, work.secret_ciphertext);
    // Whole seconds: the webhook-timestamp header carries seconds, and the signature covers it.
    const signedAt = new Date(Math.floor(Date.now() / 1000) * 1000);
    const headers = {
      'webhook-id': work.id,
      'webhook-timestamp': String(signedAt.getTime() / 1000),
      'webhook-signature': new Webhook(secret).sign(work.id, signedAt, body),
    };
    const posted = await postWebhook(work.url, body, headers, {
      timeoutMs: config.webhooks.timeoutMs,
      allowPrivate: config.webhooks.allowPrivate,
      signal: this.stopping.signal,
    });
    const ok = posted.statusCode !== null && posted.statusCode >= 200 && posted.statusCode < 300;
    if (ok) {
      await withTenant(database, ref.tenantId, (tx) => repo.recordAttempt(tx, ref.tenantId, ref.id, ref.attempts, { ...posted, outcome: { status: 'succeeded' } }));
      this.attemptsCounter?.inc({ outcome: 'succeeded' });
      this.latency?.observe((Date.now() - work.created_at.getTime()) / 1000);
      return;
    }
    if (posted.statusCode === 410) {
      await withTenant(database, ref.tenantId, async (tx) => {
        await repo.recordAttempt(tx, ref.tenantId, ref.id, ref.attempts, { ...posted, outcome: { status: 'failed' } });
        await repo.disableEndpoint(tx, ref.tenantId, work.endpoint_id, 'the receiver answered 410 Gone');
      });
      this.attemptsCounter?.inc({ outcome: 'gone' });
      logger.warn({ endpointId: work.endpoint_id }, 'webhook endpoint answered 410 Gone; disabled');
      return;
    }
    const delay = retryDelay(config.webhooks.retryScheduleMs, ref.attempts);
    const outcome = delay === undefined ? ({ status: 'failed' } as const) : ({ status: 'pending', retryInMs: delay } as const);
    await withTenant(database, ref.tenantId, (tx) => repo.recordAttempt(tx, ref.tenantId, ref.id, ref.attempts, { ...posted, outcome }));
    this.attemptsCounter?.inc({ outcome: delay === undefined ? 'failed' : posted.statusCode === null && posted.error && !/ms$/.test(posted.error) ? 'refused' : 'retry' });
    logger.info({ deliveryId: ref.id, attempt: ref.attempts, statusCode: posted.statusCode, retryInMs: delay }, 'webhook delivery failed');
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.unsubscribe?.();
    await this.claiming;
    // An aborted attempt is recorded as failed and retried later, by this or another worker.
    this.stopping.abort();
    await Promise.all(this.inFlight.values());
  }
}
