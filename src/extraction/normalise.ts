import { createHash } from 'node:crypto';

// Trailing sentence punctuation in the scripts users are likely to write; it never changes a fact.
const TRAILING_PUNCTUATION = /[\s.!?;:,…。！？、，；：]+$/u;

/**
 * The canonical form of a fact's text, used to recognise the same fact written twice: Unicode
 * compatibility forms folded (NFKC), lowercased, whitespace collapsed, trailing punctuation
 * dropped. "User lives in Paris." and "user  lives in paris" are the same fact.
 */
export function normaliseFactText(text: string): string {
  return text
    .normalize('NFKC')
    .toLowerCase()
    .replace(/\s+/gu, ' ')
    .trim()
    .replace(TRAILING_PUNCTUATION, '');
}

/**
 * sha256 (hex) of the normalised text: the key of the unique (tenant, user, content hash) index
 * over current memories, so two jobs can never both add the same fact.
 */
export function contentHash(text: string): string {
  return createHash('sha256').update(normaliseFactText(text), 'utf8').digest('hex');
}
