import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { bullTimings } from '../../src/queue/bullmq.js';

describe('queue timings with the default settings', () => {
  it('bring a killed worker’s jobs back within 60 s', () => {
    const { jobs } = loadConfig({});
    const { lockDuration, stalledInterval } = bullTimings(jobs.leaseMs);
    // BullMQ notices the stalled job within lockDuration + stalledInterval and redelivers it; it
    // is then delayed until the dead worker's lease lapses (at most one lease after its last
    // heartbeat), plus the 250 ms margin for clocks.
    const worstCaseMs = Math.max(lockDuration + stalledInterval, jobs.leaseMs) + 250;
    expect(worstCaseMs).toBeLessThanOrEqual(60_000);
  });
});
