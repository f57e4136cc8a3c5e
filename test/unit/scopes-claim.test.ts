import { describe, expect, it } from 'vitest';
import { claimAt, scopesOf } from '../../src/auth/verifier.js';

describe('scopesOf: where a token keeps its scopes', () => {
  it('reads scope and scp as space-separated strings, always', () => {
    expect([...scopesOf({ scope: 'openid  memories:read', scp: 'memories:write' }, 'scope')].sort()).toEqual(['memories:read', 'memories:write', 'openid']);
  });

  it('adds the configured claim, as an array or a string, and ignores what is not a string', () => {
    expect([...scopesOf({ scope: 'openid', permissions: ['memories:read', 7, null, 'memories:delete'] }, 'permissions')].sort()).toEqual(['memories:delete', 'memories:read', 'openid']);
    expect([...scopesOf({ roles: 'memories:read' }, 'roles')]).toEqual(['memories:read']);
    expect([...scopesOf({ permissions: ['memories:read'] }, 'scope')]).toEqual([]);
  });

  it('finds a namespaced claim by its whole name before following dots', () => {
    const payload = { 'https://engram.example/roles': ['memories:read'], realm_access: { roles: ['memories:write'] } };
    expect(claimAt(payload, 'https://engram.example/roles')).toEqual(['memories:read']);
    expect(claimAt(payload, 'realm_access.roles')).toEqual(['memories:write']);
    expect(claimAt(payload, 'realm_access.roles.length')).toBeUndefined();
    expect(claimAt({ a: ['x'] }, 'a.0')).toBeUndefined();
    expect(claimAt({}, 'toString')).toBeUndefined();
  });
});
