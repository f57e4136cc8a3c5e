import pino from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createRateLimiter } from '../../src/http/rate-limit.js';
import { freePort } from '../support/process.js';

/** The limiter's window arithmetic, and what it does when its Redis is not there at all. */

const logger = pino({ level: 'silent' });

afterEach(() => {
  vi.useRealTimers();
});

describe('createRateLimiter', () => {
  it('is off at 0 requests a minute', () => {
    expect(createRateLimiter({ perMinute: 0, keyPrefix: 'x', logger })).toBeUndefined();
  });

  it('per process: Retry-After is the rest of the tenant\'s window, to the second (rounded up), then a new window', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const t0 = Date.UTC(2030, 0, 1, 12, 0, 7, 400);
    vi.setSystemTime(t0);
    const limiter = createRateLimiter({ perMinute: 3, keyPrefix: 'unit', logger })!;
    expect(limiter.store).toBe('memory');
    for (let i = 0; i < 3; i++) expect(await limiter.consume('acme')).toEqual({ allowed: true, retryAfterSeconds: 0 });

    vi.setSystemTime(t0 + 17_300);
    expect(await limiter.consume('acme')).toEqual({ allowed: false, retryAfterSeconds: 43 });
    vi.setSystemTime(t0 + 59_001);
    expect(await limiter.consume('acme')).toEqual({ allowed: false, retryAfterSeconds: 1 });
    // Another tenant is counted apart.
    expect((await limiter.consume('globex')).allowed).toBe(true);
    vi.setSystemTime(t0 + 60_000);
    expect((await limiter.consume('acme')).allowed).toBe(true);
  });

  it('with a Redis that is not there: answers at once from a per-process count, never throws', async () => {
    const limiter = createRateLimiter({ perMinute: 2, keyPrefix: 'unit', logger, redisUrl: `redis://127.0.0.1:${await freePort()}` })!;
    try {
      expect(limiter.store).toBe('redis');
      const decisions = [];
      for (let i = 0; i < 3; i++) decisions.push(await limiter.consume('acme'));
      expect(decisions.map((d) => d.allowed)).toEqual([true, true, false]);
      expect(decisions[2]!.retryAfterSeconds).toBeGreaterThanOrEqual(59);
    } finally {
      await limiter.close();
    }
  });
});
