import { describe, expect, it } from 'vitest';
import { loaderArguments } from '../../src/db/pglite.js';

/** The embedded first start's initdb child gets the service's module loader and nothing else of Node's flags. */
describe('loaderArguments', () => {
  it('keeps --import/--require/--loader with their values, in either form, and drops the rest', () => {
    const argv = ['--require', '/x/preflight.cjs', '--import', 'file:///x/loader.mjs', '--inspect=9229', '--cpu-prof', '--cpu-prof-dir', '/tmp/p', '--import=tsx', '--max-old-space-size=512', '--experimental-loader', 'ts-node/esm'];
    expect(loaderArguments(argv)).toEqual(['--require', '/x/preflight.cjs', '--import', 'file:///x/loader.mjs', '--import=tsx', '--experimental-loader', 'ts-node/esm']);
  });

  it('is empty when Node runs compiled JavaScript without a loader', () => {
    expect(loaderArguments(['--enable-source-maps'])).toEqual([]);
  });
});
