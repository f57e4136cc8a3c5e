import { describe, expect, it } from 'vitest';
import { KeyedLimiter } from '../../src/recall/limiter.js';

const deferred = () => {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
};

describe('KeyedLimiter', () => {
  it('runs at most perKey tasks of a key at once, the rest in order, other keys untouched', async () => {
    const limiter = new KeyedLimiter(2);
    const gates = Array.from({ length: 4 }, deferred);
    const started: number[] = [];
    const runs = gates.map((gate, i) => limiter.run('a', async () => (started.push(i), await gate.promise, i)));
    const other = limiter.run('b', async () => 'b');
    await new Promise((r) => setImmediate(r));
    expect(started).toEqual([0, 1]);
    expect(limiter.load('a')).toEqual({ active: 2, waiting: 2 });
    expect(await other).toBe('b');
    gates[1]!.resolve();
    await runs[1];
    await new Promise((r) => setImmediate(r));
    expect(started).toEqual([0, 1, 2]);
    gates[0]!.resolve();
    gates[2]!.resolve();
    gates[3]!.resolve();
    expect(await Promise.all(runs)).toEqual([0, 1, 2, 3]);
    expect(limiter.load('a')).toEqual({ active: 0, waiting: 0 });
  });

  it('frees the place of a task that fails', async () => {
    const limiter = new KeyedLimiter(1);
    await expect(limiter.run('a', async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await limiter.run('a', async () => 1)).toBe(1);
    expect(limiter.load('a')).toEqual({ active: 0, waiting: 0 });
  });
});
