import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { contentHash, normaliseFactText } from '../../src/extraction/normalise.js';

describe('normaliseFactText', () => {
  it('lowercases, collapses whitespace and strips trailing punctuation', () => {
    expect(normaliseFactText('  User Lives\tin\n\nParis.  ')).toBe('user lives in paris');
    expect(normaliseFactText('I love jazz!!!')).toBe('i love jazz');
    expect(normaliseFactText('Really?…')).toBe('really');
  });

  it('keeps punctuation that is not at the end', () => {
    expect(normaliseFactText('User works at A.C.M.E. Corp, Inc.')).toBe('user works at a.c.m.e. corp, inc');
  });

  it('folds compatibility forms (NFKC): full-width letters, ligatures, composed accents', () => {
    expect(normaliseFactText('Ｕｓｅｒ ｌｉｋｅｓ ﬁsh')).toBe('user likes fish');
    // "é" as e + combining acute, and precomposed.
    expect(normaliseFactText('Caf\u0065\u0301')).toBe(normaliseFactText('Caf\u00e9'));
  });

  it('treats non-breaking and other Unicode spaces as whitespace', () => {
    expect(normaliseFactText('User\u00a0lives\u2003in Paris')).toBe('user lives in paris');
  });

  it('keeps different facts different', () => {
    expect(normaliseFactText('User lives in Paris')).not.toBe(normaliseFactText('User lives in Berlin'));
  });
});

describe('contentHash', () => {
  it('is the sha256 hex of the normalised text', () => {
    const expected = createHash('sha256').update('user lives in paris').digest('hex');
    expect(contentHash('User lives in Paris.')).toBe(expected);
    expect(contentHash('User lives in Paris.')).toMatch(/^[0-9a-f]{64}$/);
  });

  it('is equal for texts that differ only in case, spacing and final punctuation', () => {
    expect(contentHash('user  LIVES in paris!')).toBe(contentHash('User lives in Paris.'));
    expect(contentHash('User lives in Paris')).not.toBe(contentHash('User lived in Paris'));
  });
});
