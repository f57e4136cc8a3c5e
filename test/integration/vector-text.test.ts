import { afterAll, describe, expect, it } from 'vitest';
import { vectorText } from '../../src/db/vector-text.js';
import { ownerSql } from '../support/harness.js';

/** pgvector reads vectorText as the very vector JavaScript's own longest form gives it. */
const sql = ownerSql();
afterAll(() => sql.end());

describe('vectorText in pgvector', () => {
  it('stores the same float4s as the full-precision text', async () => {
    let state = 11;
    const next = () => (state = (state * 1103515245 + 12345) % 2147483648) / 2147483648;
    const vectors = Array.from({ length: 50 }, () => {
      const v = Array.from({ length: 1536 }, () => (next() - 0.5) * 10 ** -Math.floor(next() * 4));
      const norm = Math.hypot(...v);
      return v.map((x) => x / norm);
    });
    const rows = await sql<Array<{ same: boolean }>>`
      select a::vector = b::vector as same
      from unnest(${vectors.map(vectorText)}::text[], ${vectors.map((v) => `[${v.join(',')}]`)}::text[]) as t(a, b)`;
    expect(rows).toHaveLength(50);
    expect(rows.every((r) => r.same)).toBe(true);
  });
});
