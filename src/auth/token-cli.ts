import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../config.js';
import { resolveJwtSecret } from './dev-secret.js';
import { DEFAULT_DEV_SCOPE, signDevToken } from './sign.js';

const USAGE = 'usage: npm run token -- --tenant T --user U [--scope "memories:read memories:write memories:delete"] [--ttl SECONDS]\n';

function readArgs() {
  try {
    return parseArgs({
      options: {
        tenant: { type: 'string' },
        user: { type: 'string' },
        scope: { type: 'string', default: DEFAULT_DEV_SCOPE },
        ttl: { type: 'string', default: '3600' },
        help: { type: 'boolean', short: 'h' },
      },
    }).values;
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n${USAGE}`);
    process.exit(2);
  }
}

function main(): Promise<void> | void {
  const values = readArgs();
  if (values.help || !values.tenant) {
    process.stderr.write(USAGE);
    process.exit(values.help ? 0 : 2);
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
