import { createRemoteJWKSet, decodeProtectedHeader, errors as joseErrors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import type { Config } from '../config.js';
import type { Principal } from './principal.js';

/** Symmetric tokens are checked only against the shared secret, asymmetric ones only against the JWKS. */
export const SYMMETRIC_ALGORITHMS = ['HS256'] as const;
export const ASYMMETRIC_ALGORITHMS = ['RS256', 'ES256', 'EdDSA'] as const;

export class AuthenticationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AuthenticationError';
  }
}

/** The identity provider's key set could not be fetched: the token may be fine, we cannot tell. */
export class KeySetUnavailableError extends Error {
  constructor() {
    super('the identity provider key set is unreachable');
    this.name = 'KeySetUnavailableError';
  }
}

export interface TokenVerifier {
  verify(token: string): Promise<Principal>;
}

const TENANT_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$/;

export function createTokenVerifier(auth: Config['auth'] & { jwtSecret: string | undefined }): TokenVerifier {
  // Imported once: handed the raw bytes, jose imports a key on every verification (measured: about
  // 100-150 µs of each request here).
  const secret = auth.jwtSecret
    ? crypto.subtle.importKey('raw', new TextEncoder().encode(auth.jwtSecret), { name: 'HMAC', hash: 'SHA-256' }, false, ['verify'])
    : undefined;
  // jose caches the key set and refetches on an unknown kid (with a cooldown).
  const jwks: JWTVerifyGetKey | undefined = auth.jwksUrl
    ? createRemoteJWKSet(new URL(auth.jwksUrl), { cacheMaxAge: 10 * 60_000, cooldownDuration: 30_000, timeoutDuration: 5_000 })
    : undefined;
  // A token without exp would never expire: refused.
  const common = { issuer: auth.issuer, audience: auth.audience, clockTolerance: auth.clockToleranceSeconds, requiredClaims: ['exp'] };

  return {
    async verify(token) {
      let algorithm: string | undefined;
      try {
        algorithm = decodeProtectedHeader(token).alg;
      } catch {
        throw new AuthenticationError('the token is malformed');
      }
      let payload: JWTPayload;
      try {
        if (algorithm && (SYMMETRIC_ALGORITHMS as readonly string[]).includes(algorithm)) {
          if (!secret) throw new AuthenticationError('symmetric tokens are not accepted here');
          payload = (await jwtVerify(token, await secret, { ...common, algorithms: [...SYMMETRIC_ALGORITHMS] })).payload;
        } else if (algorithm && (ASYMMETRIC_ALGORITHMS as readonly string[]).includes(algorithm)) {
          if (!jwks) throw new AuthenticationError('asymmetric tokens are not accepted here');
          payload = (await jwtVerify(token, jwks, { ...common, algorithms: [...ASYMMETRIC_ALGORITHMS] })).payload;
        } else {
          throw new AuthenticationError(`the algorithm ${algorithm ?? '(none)'} is not allowed`);
        }
      } catch (error) {
        if (error instanceof joseErrors.JWKSTimeout || (error instanceof TypeError && /fetch/i.test(error.message))) throw new KeySetUnavailableError();
        if (error instanceof joseErrors.JOSEError && error.code === 'ERR_JWKS_INVALID') throw new KeySetUnavailableError();
        throw toAuthenticationError(error);
      }
      assertLifetime(payload, auth.maxTokenAgeSeconds, auth.clockToleranceSeconds);
      return principalFrom(payload, auth.tenantClaim, auth.scopesClaim);
    },
  };
}

function toAuthenticationError(error: unknown): AuthenticationError {
  if (error instanceof AuthenticationError) return error;
  if (error instanceof joseErrors.JWTExpired) return new AuthenticationError('the token has expired');
  if (error instanceof joseErrors.JWTClaimValidationFailed) return new AuthenticationError(`the token's ${error.claim} claim is not valid`);
  if (error instanceof joseErrors.JWSSignatureVerificationFailed) return new AuthenticationError('the token signature is not valid');
  if (error instanceof joseErrors.JWKSNoMatchingKey) return new AuthenticationError('no key matches the token');
  if (error instanceof joseErrors.JOSEAlgNotAllowed) return new AuthenticationError('the token algorithm is not allowed');
  return new AuthenticationError('the token is not valid');
}

/**
 * jose checks `exp` against now, but `exp: 1e400` parses to Infinity and never expires, and a
 * year-long token is a leaked credential for a year: the lifetime is capped (`exp` − `iat`, or
 * `exp` − now for a token without `iat`; an `iat` in the future would move that start, so it is refused).
 */
function assertLifetime(payload: JWTPayload, maxAgeSeconds: number, toleranceSeconds: number): void {
  const { exp, iat } = payload;
  if (typeof exp !== 'number' || !Number.isFinite(exp)) throw new AuthenticationError('the token\'s exp claim is not a finite number');
  const now = Math.floor(Date.now() / 1000);
  let lifetime: number;
  if (iat === undefined) {
    lifetime = exp - now - toleranceSeconds;
  } else {
    if (typeof iat !== 'number' || !Number.isFinite(iat) || iat > now + toleranceSeconds) throw new AuthenticationError('the token\'s iat claim is not valid');
    lifetime = exp - iat;
  }
  if (lifetime > maxAgeSeconds) throw new AuthenticationError(`the token lives longer than the ${maxAgeSeconds} s this service accepts`);
}

/** An identifier as it will be stored: white space around it would make a user no body `user_id` can name. */
function isSafeIdentifier(value: string): boolean {
  return value.length > 0 && value.length <= 256 && value.trim() === value && !value.includes('\u0000') && value.isWellFormed();
}

/**
 * A claim by name, or by a dotted path into nested objects when no claim has the whole name
 * (Keycloak's `realm_access.roles`; a namespaced claim such as `https://example.com/roles` is
 * found by its whole name first).
 */
export function claimAt(payload: JWTPayload, name: string): unknown {
  if (Object.hasOwn(payload, name)) return payload[name];
  let node: unknown = payload;
  for (const part of name.split('.')) {
    if (!node || typeof node !== 'object' || Array.isArray(node) || !Object.hasOwn(node, part)) return undefined;
    node = (node as Record<string, unknown>)[part];
  }
  return node;
}

/** Scopes as a space-separated string (OAuth's `scope`, Entra's `scp`) or an array of strings. */
function scopesIn(value: unknown): string[] {
  if (Array.isArray(value)) return value.filter((s): s is string => typeof s === 'string').flatMap((s) => s.split(/\s+/)).filter(Boolean);
  return typeof value === 'string' ? value.split(/\s+/).filter(Boolean) : [];
}

/** The token's scopes: `scope` and `scp` always, and the configured claim (AUTH_SCOPES_CLAIM). */
export function scopesOf(payload: JWTPayload, scopesClaim: string): Set<string> {
  const claims = new Set(['scope', 'scp', scopesClaim]);
  return new Set([...claims].flatMap((name) => scopesIn(claimAt(payload, name))));
}

function principalFrom(payload: JWTPayload, tenantClaim: string, scopesClaim: string): Principal {
  const tenant = payload[tenantClaim];
  if (typeof tenant !== 'string' || !TENANT_PATTERN.test(tenant)) {
    throw new AuthenticationError(`the token has no valid ${tenantClaim} claim`);
  }
  const scopes = scopesOf(payload, scopesClaim);
  let subject: string | undefined;
  if (payload.sub !== undefined) {
    // The subject becomes a user id in SQL: the same rules as a user_id in a body.
    if (typeof payload.sub !== 'string' || !isSafeIdentifier(payload.sub)) throw new AuthenticationError('the token has no valid sub claim');
    subject = payload.sub;
  }
  return { tenantId: tenant, subject, scopes };
}
