import { SignJWT } from 'jose';

export interface DevTokenInput {
  secret: string;
  issuer: string;
  audience: string;
  tenantClaim: string;
  tenant: string;
  user?: string | undefined;
  scope: string;
  ttlSeconds: number;
}

/** Mints an HS256 token the service accepts: for development, tests and benchmarks. */
export async function signDevToken(input: DevTokenInput): Promise<string> {
  const jwt = new SignJWT({ [input.tenantClaim]: input.tenant, scope: input.scope })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(input.issuer)
    .setAudience(input.audience)
    .setIssuedAt()
    .setExpirationTime(`${input.ttlSeconds}s`);
  if (input.user) jwt.setSubject(input.user);
  return jwt.sign(new TextEncoder().encode(input.secret));
}

export const DEFAULT_DEV_SCOPE = 'memories:read memories:write memories:delete';
