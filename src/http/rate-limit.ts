import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';

/** What one request's count decided. */
export interface RateDecision {
  allowed: boolean;
  /** Whole seconds until the tenant's window ends (rounded up), when refused. */
  retryAfterSeconds: number;
}

/** One counter per tenant, a fixed one-minute window that starts at the tenant's first request. */
export interface TenantRateLimiter {
  readonly store: 'redis' | 'memory';
  consume(tenantId: string): Promise<RateDecision>;
  close(): Promise<void>;
}

export interface RateLimiterOptions {
  perMinute: number;
  /** With Redis, every instance of the service shares each tenant's count. */
  redisUrl?: string | undefined;
  /** Separates deployments that share one Redis (QUEUE_PREFIX). */
  keyPrefix: string;
  logger: Logger;
  /** A Redis command slower than this counts as Redis being unreachable. */
  redisTimeoutMs?: number;
}

const WINDOW_SECONDS = 60;

/** The key a tenant's count lives under in Redis (tests and operators look at it). */
export function rateLimitKey(keyPrefix: string, tenantId: string): string {
  return `${keyPrefix}:ratelimit:${tenantId}`;
}

/**
 * Undefined when rate limiting is off (perMinute 0). Without Redis the count is per process.
 * With Redis the count is cluster-wide; when Redis cannot answer, the limiter fails open to a
 * per-process count (each instance then allows up to the limit on its own) rather than fail the
 * API or refuse everyone: the limit guards against runaway agents, it is not billing.
 */
export function createRateLimiter(options: RateLimiterOptions): TenantRateLimiter | undefined {
  const { perMinute, redisUrl, keyPrefix, logger } = options;
  if (perMinute <= 0) return undefined;
  const memory = new RateLimiterMemory({ points: perMinute, duration: WINDOW_SECONDS, keyPrefix: `${keyPrefix}:ratelimit` });
  if (!redisUrl) {
    return { store: 'memory', consume: (tenantId) => decide(memory, tenantId), close: async () => {} };
  }
  const timeoutMs = options.redisTimeoutMs ?? 250;
  // ioredis loads only here, with Redis configured: the embedded start never needs it.
  const loaded: Promise<{ client: Redis; limiter: RateLimiterRedis }> = import('ioredis').then(({ Redis }) => {
    // A client of its own: BullMQ's blocking connections wait for Redis forever, a request must not.
    const created = new Redis(redisUrl, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: timeoutMs,
      connectionName: 'engram-ratelimit',
    });
    created.on('error', () => {});
    const limiter = new RateLimiterRedis({ storeClient: created, points: perMinute, duration: WINDOW_SECONDS, keyPrefix: `${keyPrefix}:ratelimit` });
    return { client: created, limiter };
  });
  // Until the first connection is up, a request waits for it (briefly) rather than count locally:
  // an instance that just started would otherwise let its first requests past the shared count.
  // A first attempt that fails (refused, closed) ends the wait at once.
  let connecting: Promise<void> | undefined = loaded
    .then(
      ({ client }) =>
        new Promise<void>((resolve) => {
          const settle = () => {
            clearTimeout(timer);
            for (const event of ['ready', 'error', 'close']) client.off(event, settle);
            resolve();
          };
          const timer = setTimeout(settle, timeoutMs * 4);
          timer.unref();
          for (const event of ['ready', 'error', 'close']) client.once(event, settle);
        }),
    )
    .then(() => {
      connecting = undefined;
    });
  let degraded = false;
  return {
    store: 'redis',
    async consume(tenantId) {
      if (connecting) await connecting;
      let decision: RateDecision;
      try {
        decision = await decide((await loaded).limiter, tenantId);
      } catch (error) {
        if (!degraded) logger.warn({ err: (error as Error).name }, 'rate limit store unreachable: counting per process until Redis answers');
        degraded = true;
        return decide(memory, tenantId);
      }
      if (degraded) logger.info('rate limit store reachable again: counting cluster-wide');
      degraded = false;
      return decision;
    },
    async close() {
      (await loaded).client.disconnect();
    },
  };
}

/** Consumes one point; a refusal is a RateLimiterRes, anything else thrown is the store failing. */
async function decide(limiter: RateLimiterAbstract, tenantId: string): Promise<RateDecision> {
  try {
    await limiter.consume(tenantId);
    return { allowed: true, retryAfterSeconds: 0 };
  } catch (outcome) {
    if (!(outcome instanceof RateLimiterRes)) throw outcome;
    return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(outcome.msBeforeNext / 1000)) };
  }
}
