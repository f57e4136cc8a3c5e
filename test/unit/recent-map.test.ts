import { describe, expect, it } from 'vitest';
import { RecentMap } from '../../src/shared/recent-map.js';

describe('RecentMap', () => {
  it('forgets the least recently used key past its capacity, a read counting as a use', () => {
    const map = new RecentMap<string, number>(2);
    map.set('a', 1);
    map.set('b', 2);
    expect(map.get('a')).toBe(1);
    map.set('c', 3);
    expect(map.peek('b')).toBeUndefined();
    expect([map.peek('a'), map.peek('c'), map.size]).toEqual([1, 3, 2]);
  });

  it('leaves recency as it is on a peek, and replaces a value in place on a set', () => {
    const map = new RecentMap<string, number>(2);
    map.set('a', 1);
    map.set('b', 2);
    expect(map.peek('a')).toBe(1);
    map.set('b', 20);
    map.set('c', 3);
    expect(map.peek('a')).toBeUndefined();
    expect([map.peek('b'), map.size]).toEqual([20, 2]);
  });

  it('keeps a stored undefined apart from a missing key, and forgets a deleted one', () => {
    const map = new RecentMap<string, number | undefined>(2);
    map.set('a', undefined);
    map.set('b', 2);
    map.get('a');
    map.set('c', 3);
    expect(map.peek('b')).toBeUndefined();
    expect(map.size).toBe(2);
    map.delete('c');
    expect([map.peek('c'), map.size]).toEqual([undefined, 1]);
  });
});
