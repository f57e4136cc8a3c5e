import { describe, expect, it } from 'vitest';
import { float4Text, vectorText } from '../../src/db/vector-text.js';

/** A deterministic stream of doubles across the magnitudes vectors hold (LCG; no Math.random). */
function doubles(count: number, seed = 7): number[] {
  let state = seed;
  const next = () => (state = (state * 1103515245 + 12345) % 2147483648) / 2147483648;
  return Array.from({ length: count }, () => (next() * 2 - 1) * 10 ** -Math.floor(next() * 9));
}

describe('vectorText', () => {
  it('names the same float4 as the double it was given, for every component', () => {
    const values = [...doubles(200_000), 0.1, 0.099999999, 0.9999999999, 1e-6, 9.99999e-7, 0.5, -0.25, 1 / 3, -2 / 3];
    const wrong = values.filter((value) => Math.fround(Number(float4Text(value))) !== Math.fround(value));
    expect(wrong).toEqual([]);
  });

  it('writes at most nine significant digits for a unit vector component', () => {
    for (const value of doubles(5_000)) {
      const text = float4Text(value);
      if (Math.abs(value) >= 1e-6 && Math.abs(value) < 1) expect(text.replace(/^-?0\.0*/, '').length).toBeLessThanOrEqual(9);
    }
    expect(float4Text(0.1)).toBe('0.100000001');
    expect(float4Text(-0.0999999999)).toBe('-0.100000001');
    expect(float4Text(0.025)).toBe('0.0250000004');
  });

  it('writes zero, whole numbers, tiny values and non-finite values as JavaScript does', () => {
    expect(float4Text(0)).toBe('0');
    expect(float4Text(-0)).toBe('0');
    expect(float4Text(1)).toBe('1');
    expect(float4Text(-1.5)).toBe('-1.5');
    expect(float4Text(1e-7)).toBe(String(Math.fround(1e-7)));
    expect(float4Text(Number.NaN)).toBe('NaN');
  });

  it('is pgvector text: bracketed, comma-separated, in order', () => {
    expect(vectorText([0.5, -0.25, 0])).toBe('[0.500000000,-0.250000000,0]');
    expect(vectorText([])).toBe('[]');
  });
});
