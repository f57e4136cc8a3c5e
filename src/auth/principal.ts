import { DomainError, forbidden } from '../shared/errors.js';

export const SCOPES = {
  read: 'memories:read',
  write: 'memories:write',
  delete: 'memories:delete',
  actAs: 'memories:act_as',
  /** Administers the token's own tenant (settings, webhooks). */
  admin: 'engram:admin',
  /** The operators' pages under /admin/, which span tenants: never a tenant's to hold. */
  operator: 'engram:operator',
} as const;

export type Scope = (typeof SCOPES)[keyof typeof SCOPES];

export interface Principal {
  tenantId: string;
  /** The token's `sub`; the user a token without act_as speaks for. */
  subject: string | undefined;
  scopes: ReadonlySet<string>;
}

export function hasScope(principal: Principal, scope: Scope): boolean {
  return principal.scopes.has(scope);
}

export function requireScope(principal: Principal, scope: Scope): void {
  if (!hasScope(principal, scope)) throw forbidden(`the token lacks the scope ${scope}`);
}

/**
 * The user a request acts for. Without act_as it is always the token's subject, and naming
 * anyone else is refused; with act_as any user of the caller's tenant may be named.
 */
export function resolveUserId(principal: Principal, requested: string | undefined): string {
  if (hasScope(principal, SCOPES.actAs)) {
    const userId = requested ?? principal.subject;
    if (!userId) {
      throw new DomainError('validation_failed', 'user_id is required: the token has no subject', {
        errors: [{ path: '/user_id', message: 'required when the token has no sub claim' }],
      });
    }
    return userId;
  }
  if (!principal.subject) throw forbidden('the token has no subject and lacks the scope memories:act_as');
  if (requested !== undefined && requested !== principal.subject) {
    throw forbidden('user_id differs from the token subject and the token lacks the scope memories:act_as');
  }
  return principal.subject;
}

/** For routes addressed by id: the user whose rows the caller may see, or undefined for any in the tenant. */
export function visibleUser(principal: Principal): string | undefined {
  if (hasScope(principal, SCOPES.actAs)) return undefined;
  if (!principal.subject) throw forbidden('the token has no subject and lacks the scope memories:act_as');
  return principal.subject;
}
