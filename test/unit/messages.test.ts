import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { houseMessage } from '../../src/http/messages.js';

const body = z.strictObject({
  limit: z.number().int().min(1).max(100).optional(),
  query: z.string().min(1).max(5).optional(),
  tags: z.array(z.string()).min(1).max(2).optional(),
  mode: z.enum(['off', 'redact']).optional(),
  id: z.uuid().optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
  name: z.string(),
  own: z.string().min(3, 'needs three letters').optional(),
});

function messageOf(input: unknown): string[] {
  const result = body.safeParse(input, { error: houseMessage });
  return result.success ? [] : result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
}

describe('field messages in the service voice', () => {
  it.each([
    [{ name: 'a', limit: 0 }, 'limit: must be at least 1'],
    [{ name: 'a', limit: 101 }, 'limit: must be at most 100'],
    [{ name: 'a', limit: 5.5 }, 'limit: must be an integer'],
    [{ name: 'a', limit: '5' }, 'limit: must be a number'],
    [{ name: 'a', query: '' }, 'query: must not be empty'],
    [{ name: 'a', query: 'abcdefg' }, 'query: must hold at most 5 characters'],
    [{ name: 'a', tags: [] }, 'tags: must hold at least one item'],
    [{ name: 'a', tags: ['a', 'b', 'c'] }, 'tags: must hold at most 2 items'],
    [{ name: 'a', mode: 'loud' }, 'mode: must be one of "off", "redact"'],
    [{ name: 'a', id: 'nope' }, 'id: must be a UUID'],
    [{ name: 'a', metadata: 'no' }, 'metadata: must be an object'],
    [{}, 'name: is required'],
    [{ name: 'a', own: 'ab' }, 'own: needs three letters'],
  ])('%j → %s', (input, expected) => {
    expect(messageOf(input)).toEqual([expected]);
  });
});
