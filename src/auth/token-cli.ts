import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../config.js';
import { resolveJwtSecret } from './dev-secret.js';
import { DEFAULT_DEV_SCOPE, signDevToken } from './sign.js';

const USAGE =
  'usage: npm run token -- --tenant T --user U [--scope "memories:read memories:write memories:delete"] [--ttl SECONDS]\n' +
  '       (an operator token for /admin/queues: --scope engram:operator; never hand one to a tenant)\n';

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
  const maxAge = config.auth.maxTokenAgeSeconds;
  if (!Number.isInteger(ttlSeconds) || ttlSeconds <= 0 || ttlSeconds > maxAge) {
    process.stderr.write(`--ttl must be a whole number of seconds from 1 to ${maxAge} (AUTH_MAX_TOKEN_AGE_S): the service refuses longer-lived tokens\n`);
    process.exit(2);
  }
  // The service refuses such tokens (401): better said here than at the first request.
  for (const [name, value] of [['--tenant', values.tenant], ['--user', values.user]] as const) {
    if (value !== undefined && value.trim() !== value) {
      process.stderr.write(`${name} must not start or end with white space\n`);
      process.exit(2);
    }
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
