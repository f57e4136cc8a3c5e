import { z } from 'zod';

/**
 * The only reader of process.env. Every setting is validated here once; a bad value stops
 * start-up with one line that names the variable.
 */

const booleanString = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((value) => value === 'true' || value === '1' || value === 'yes');

const optionalUrl = (protocols: string[]) =>
  z
    .string()
    .trim()
    .refine((value) => {
      try {
        return protocols.includes(new URL(value).protocol);
      } catch {
        return false;
      }
    }, `must be a URL starting with ${protocols.map((p) => `${p}//`).join(' or ')}`)
    .optional();

const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

const envSchema = z.object({
  PORT: int(0, 65535).default(8080),
  HOST: z.string().min(1).default('127.0.0.1'),
  DATA_DIR: z.string().min(1).default('./.data'),
  DATABASE_URL: optionalUrl(['postgres:', 'postgresql:']),
  REDIS_URL: optionalUrl(['redis:', 'rediss:']),
  WORKER: z.enum(['inline', 'off']).default('inline'),
  /** A separate worker's /healthz and /metrics port (on HOST); unset: the worker serves no HTTP. */
  WORKER_METRICS_PORT: int(0, 65535).optional(),
  MIGRATE_ON_START: booleanString.default(true),
  AUTH_JWT_SECRET: z
    .string()
    .refine((value) => Buffer.byteLength(value, 'utf8') >= 32, 'must be at least 32 bytes')
    .optional(),
  AUTH_JWKS_URL: optionalUrl(['https:', 'http:']),
  AUTH_ISSUER: z.string().min(1).default('memory-layer'),
  AUTH_AUDIENCE: z.string().min(1).default('memory-api'),
  AUTH_TENANT_CLAIM: z.string().min(1).default('tenant_id'),
  AUTH_CLOCK_TOLERANCE_S: int(0, 60).default(30),
  RECALL_HALF_LIFE_HOURS: z.coerce.number().positive().max(1_000_000).default(720),
  // Measured on LoCoMo with the offline embedder (README, "Recall"): the floor that leaves another
  // user's questions about 3 memories at limit 10 while costing recall@10 at most 0.01.
  RECALL_MIN_RELEVANCE: z.coerce.number().min(0, 'must be a number from 0 to 1').max(1, 'must be a number from 0 to 1').default(0.17),
  MAX_BODY_BYTES: int(1024, 100 * 1024 * 1024).default(1_048_576),
  RATE_LIMIT_PER_MINUTE: int(0, 1_000_000).default(0),
  OPENAI_API_KEY: z.string().min(1).optional(),
  OPENAI_BASE_URL: optionalUrl(['https:', 'http:']),
  LLM_MODEL: z.string().min(1).default('gpt-4o-mini'),
  EMBEDDING_MODEL: z.string().min(1).default('text-embedding-3-small'),
  EMBEDDING_DIMENSIONS: int(8, 16000).default(1536),
  LLM_TIMEOUT_MS: int(100, 600_000).default(60_000),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  JOB_MAX_ATTEMPTS: int(1, 100).default(5),
  JOB_BACKOFF_MS: int(1, 3_600_000).default(2000),
  WORKER_CONCURRENCY: int(1, 64).default(4),
  QUEUE_SWEEP_INTERVAL_MS: int(100, 3_600_000).default(30_000),
  QUEUE_STALE_AFTER_MS: int(100, 86_400_000).default(60_000),
  JOB_LEASE_MS: int(1000, 3_600_000).default(300_000),
  QUEUE_PREFIX: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1-64 letters, digits, _ or -').default('engram'),
  TRANSCRIPT_RETENTION_HOURS: z.coerce.number().min(0).max(100_000).default(0),
  IDEMPOTENCY_TTL_HOURS: z.coerce.number().min(24).max(100_000).default(24),
});

export type Env = z.input<typeof envSchema>;

/** Every environment variable the service reads (compose files and deploy checks compare against it). */
export const CONFIG_VARIABLES: readonly string[] = Object.freeze(Object.keys(envSchema.shape));

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  databaseUrl: string | undefined;
  redisUrl: string | undefined;
  worker: 'inline' | 'off';
  /** Where `npm run worker` serves /healthz and /metrics; undefined: no HTTP in the worker. */
  workerMetricsPort: number | undefined;
  migrateOnStart: boolean;
  auth: {
    jwtSecret: string | undefined;
    jwksUrl: string | undefined;
    issuer: string;
    audience: string;
    tenantClaim: string;
    clockToleranceSeconds: number;
  };
  recall: { halfLifeHours: number; minRelevance: number };
  http: { maxBodyBytes: number; rateLimitPerMinute: number };
  llm: {
    apiKey: string | undefined;
    baseUrl: string | undefined;
    model: string;
    embeddingModel: string;
    embeddingDimensions: number;
    timeoutMs: number;
    /** True when an OpenAI-compatible endpoint is configured; otherwise the offline providers run. */
    remote: boolean;
  };
  jobs: {
    maxAttempts: number;
    backoffMs: number;
    concurrency: number;
    sweepIntervalMs: number;
    staleAfterMs: number;
    /** How long a claimed job is another worker's before it may be taken over (a crashed worker's). */
    leaseMs: number;
    queuePrefix: string;
    transcriptRetentionHours: number;
    idempotencyTtlHours: number;
  };
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
}

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`Invalid configuration: ${variable} ${message}`);
    this.name = 'ConfigError';
  }
}

/** Reads the environment; empty strings count as unset, as shells and compose files produce them. */
export function loadConfig(source: Record<string, string | undefined> = process.env): Config {
  const env: Record<string, string> = {};
  for (const key of Object.keys(envSchema.shape)) {
    const value = source[key];
    if (value !== undefined && value.trim() !== '') env[key] = value;
  }
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const variable = String(issue.path[0] ?? 'environment');
    const message = issue.code === 'invalid_value' ? `must be one of: ${issue.values.join(', ')}` : issue.message;
    throw new ConfigError(variable, message.replace(/^Invalid input: /, ''));
  }
  const e = parsed.data;
  if (e.DATABASE_URL && !e.AUTH_JWT_SECRET && !e.AUTH_JWKS_URL) {
    throw new ConfigError(
      'AUTH_JWT_SECRET',
      'is required (or AUTH_JWKS_URL) when DATABASE_URL is set: a production configuration never generates a secret',
    );
  }
  if (e.WORKER === 'off' && !e.REDIS_URL) {
    // Without Redis the queue lives in the database and is drained in-process; a separate
    // worker process would never see a job, so WORKER=off would silently stall extraction.
    throw new ConfigError('WORKER', 'may be "off" only with REDIS_URL set (a separate worker needs the Redis queue)');
  }
  const remote = Boolean(e.OPENAI_API_KEY || e.OPENAI_BASE_URL);
  return {
    port: e.PORT,
    host: e.HOST,
    dataDir: e.DATA_DIR,
    databaseUrl: e.DATABASE_URL,
    redisUrl: e.REDIS_URL,
    worker: e.WORKER,
    workerMetricsPort: e.WORKER_METRICS_PORT,
    migrateOnStart: e.MIGRATE_ON_START,
    auth: {
      jwtSecret: e.AUTH_JWT_SECRET,
      jwksUrl: e.AUTH_JWKS_URL,
      issuer: e.AUTH_ISSUER,
      audience: e.AUTH_AUDIENCE,
      tenantClaim: e.AUTH_TENANT_CLAIM,
      clockToleranceSeconds: e.AUTH_CLOCK_TOLERANCE_S,
    },
    recall: { halfLifeHours: e.RECALL_HALF_LIFE_HOURS, minRelevance: e.RECALL_MIN_RELEVANCE },
    http: { maxBodyBytes: e.MAX_BODY_BYTES, rateLimitPerMinute: e.RATE_LIMIT_PER_MINUTE },
    llm: {
      apiKey: e.OPENAI_API_KEY,
      baseUrl: e.OPENAI_BASE_URL,
      model: e.LLM_MODEL,
      embeddingModel: e.EMBEDDING_MODEL,
      embeddingDimensions: e.EMBEDDING_DIMENSIONS,
      timeoutMs: e.LLM_TIMEOUT_MS,
      remote,
    },
    jobs: {
      maxAttempts: e.JOB_MAX_ATTEMPTS,
      backoffMs: e.JOB_BACKOFF_MS,
      concurrency: e.WORKER_CONCURRENCY,
      sweepIntervalMs: e.QUEUE_SWEEP_INTERVAL_MS,
      staleAfterMs: e.QUEUE_STALE_AFTER_MS,
      leaseMs: e.JOB_LEASE_MS,
      queuePrefix: e.QUEUE_PREFIX,
      transcriptRetentionHours: e.TRANSCRIPT_RETENTION_HOURS,
      idempotencyTtlHours: e.IDEMPOTENCY_TTL_HOURS,
    },
    logLevel: e.LOG_LEVEL,
  };
}
