import type { z } from 'zod';

type RawIssue = z.core.$ZodRawIssue;

const ARTICLE: Record<string, string> = { integer: 'an integer', int: 'an integer', object: 'an object', array: 'an array', record: 'an object' };
const FORMATS: Record<string, string> = { uuid: 'a UUID', datetime: 'an ISO 8601 date-time', email: 'an e-mail address', url: 'a URL' };

function noun(expected: string): string {
  return ARTICLE[expected] ?? `a ${expected}`;
}

function sizeUnit(origin: string | undefined, n: number): string {
  if (origin === 'string') return ` character${n === 1 ? '' : 's'}`;
  if (origin === 'array' || origin === 'set') return ` item${n === 1 ? '' : 's'}`;
  return '';
}

/** "must be at most 10", or for sizes "must hold at most 5 characters". */
function bound(origin: string | undefined, limit: number | bigint, words: string): string {
  const sized = origin === 'string' || origin === 'array' || origin === 'set';
  return sized ? `must hold ${words} ${Number(limit)}${sizeUnit(origin, Number(limit))}` : `must be ${words} ${String(limit)}`;
}

/**
 * Field messages in the service's own voice ("must be at most 10"), not zod's ("Too big: expected
 * number to be <=10"), so every 400 reads alike. Messages a schema gives itself take precedence.
 */
export function houseMessage(issue: RawIssue): string | undefined {
  switch (issue.code) {
    case 'invalid_type':
      return issue.input === undefined ? 'is required' : `must be ${noun(String(issue.expected))}`;
    case 'too_small':
      if (Number(issue.minimum) === 1 && issue.origin === 'string') return 'must not be empty';
      if (Number(issue.minimum) === 1 && issue.origin === 'array') return 'must hold at least one item';
      return bound(issue.origin, issue.minimum, issue.inclusive === false ? 'greater than' : 'at least');
    case 'too_big':
      return bound(issue.origin, issue.maximum, issue.inclusive === false ? 'less than' : 'at most');
    case 'invalid_value':
      return `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
    case 'invalid_format':
      return `must be ${FORMATS[issue.format] ?? `a valid ${issue.format}`}`;
    case 'unrecognized_keys':
      return `unknown field${issue.keys.length === 1 ? '' : 's'} ${issue.keys.map((k) => JSON.stringify(k)).join(', ')}`;
    case 'not_multiple_of':
      return `must be a multiple of ${String(issue.divisor)}`;
    default:
      return undefined;
  }
}
