import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../config.js';
import { resolveJwtSecret } from './dev-secret.js';
import { DEFAULT_DEV_SCOPE, signDevToken } from './sign.js';

function main(): Promise<void> | void {
  const { values } = parseArgs({
    options: {
      tenant: { type: 'string' },
      user: { type: 'string' },
      scope: { type: 'string', default: DEFAULT_DEV_SCOPE },
      ttl: { type: 'string', default: '3600' },
    },
  });
  if (!values.tenant) {
    process.stderr.write('usage: npm run token -- --tenant T --user U [--scope "memories:read memories:write"] [--ttl SECONDS]\n');
    process.exit(2);
  }
  const config = loadConfig();
  const { secret } = resolveJwtSecret(config);
  if (!secret) {
    process.stderr.write('AUTH_JWT_SECRET is not set: tokens for a JWKS issuer come from that identity provider\n');
    process.exit(2);
  }
  const ttlSeconds = Number(values.ttl);
  if (!Number.isInteger(ttlSeconds) || ttlSeconds <= 0) {
    process.stderr.write('--ttl must be a positive whole number of seconds\n');
    process.exit(2);
  }
  return signDevToken({
    secret,
    issuer: config.auth.issuer,
    audience: config.auth.audience,
    tenantClaim: config.auth.tenantClaim,
    tenant: values.tenant,
    user: values.user,
    scope: values.scope ?? DEFAULT_DEV_SCOPE,
    ttlSeconds,
  }).then((token) => {
    process.stdout.write(`${token}\n`);
  });
}

try {
  await main();
} catch (error) {
  process.stderr.write(`${error instanceof ConfigError ? error.message : String(error)}\n`);
  process.exit(1);
}
