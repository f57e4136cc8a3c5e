import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { isUnawaitedTypeFetchFailure } from '../../src/db/type-fetch.js';

const TYPE_QUERY = 'select b.oid, b.typarray from pg_catalog.pg_type a';
const MODULE = path.resolve('src/db/type-fetch.ts');

/** Runs a process that installs the guard and leaves one rejection unhandled; answers its exit code. */
function exitCodeAfterRejecting(reason: string): number | null {
  const script = `import { guardUnawaitedTypeFetch } from ${JSON.stringify(MODULE)};
guardUnawaitedTypeFetch();
Promise.reject(${reason});
setTimeout(() => process.exit(0), 200);`;
  return spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8' }).status;
}

describe("postgres.js's unawaited array-type query", () => {
  it('recognises only a lost connection during that query', () => {
    expect(isUnawaitedTypeFetchFailure(Object.assign(new Error('write CONNECTION_CLOSED'), { code: 'CONNECTION_CLOSED', query: TYPE_QUERY }))).toBe(true);
    expect(isUnawaitedTypeFetchFailure(Object.assign(new Error('timeout'), { code: 'CONNECT_TIMEOUT', query: TYPE_QUERY }))).toBe(true);
    // A backend terminated during the query: the socket reset, or the server's own FATAL first.
    expect(isUnawaitedTypeFetchFailure(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET', errno: -104, query: TYPE_QUERY }))).toBe(true);
    expect(isUnawaitedTypeFetchFailure(Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01', query: TYPE_QUERY }))).toBe(true);
    expect(isUnawaitedTypeFetchFailure(Object.assign(new Error('closed'), { code: 'CONNECTION_CLOSED', query: 'select 1' }))).toBe(false);
    expect(isUnawaitedTypeFetchFailure(Object.assign(new Error('syntax'), { code: '42601', query: TYPE_QUERY }))).toBe(false);
    expect(isUnawaitedTypeFetchFailure(new Error('anything else'))).toBe(false);
    expect(isUnawaitedTypeFetchFailure(undefined)).toBe(false);
  });

  it('keeps the process alive for that rejection and still ends it for any other', () => {
    expect(exitCodeAfterRejecting(`Object.assign(new Error('write CONNECTION_CLOSED'), { code: 'CONNECTION_CLOSED', query: ${JSON.stringify(TYPE_QUERY)} })`)).toBe(0);
    expect(exitCodeAfterRejecting(`new Error('a real bug')`)).not.toBe(0);
  });
});
