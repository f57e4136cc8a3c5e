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
  /** Keys list cursors and erasure receipts (HKDF per purpose); see resolveServerSecret. */
  SERVER_SECRET: z
    .string()
    .refine((value) => Buffer.byteLength(value, 'utf8') >= 32, 'must be at least 32 bytes')
    .optional(),
  AUTH_JWKS_URL: optionalUrl(['https:', 'http:']),
  AUTH_ISSUER: z.string().min(1).default('memory-layer'),
  AUTH_AUDIENCE: z.string().min(1).default('memory-api'),
  AUTH_TENANT_CLAIM: z.string().min(1).default('tenant_id'),
  /** A claim holding scopes besides `scope`/`scp`: a space-separated string or an array (Auth0 `permissions`, Entra `roles`, Keycloak `realm_access.roles`). */
  AUTH_SCOPES_CLAIM: z.string().trim().min(1).default('scope'),
  AUTH_CLOCK_TOLERANCE_S: int(0, 60).default(30),
  /** The longest a token may live (`exp` − `iat`, or `exp` − now without `iat`): a leaked token's worth. */
  AUTH_MAX_TOKEN_AGE_S: int(60, 31_536_000).default(86_400),
  /** Only `production` changes anything: start-up warns about a superuser login role. */
  NODE_ENV: z.string().trim().min(1).default('development'),
  RECALL_HALF_LIFE_HOURS: z.coerce.number().positive().max(1_000_000).default(720),
  // No schema default: unset, the floor is the embedder's own (DEFAULT_MIN_RELEVANCE).
  RECALL_MIN_RELEVANCE: z.coerce.number().min(0, 'must be a number from 0 to 1').max(1, 'must be a number from 0 to 1').optional(),
  MAX_BODY_BYTES: int(1024, 100 * 1024 * 1024).default(1_048_576),
  RATE_LIMIT_PER_MINUTE: int(0, 1_000_000).default(0),
  OPENAI_API_KEY: z.string().min(1).optional(),
  OPENAI_BASE_URL: optionalUrl(['https:', 'http:']),
  LLM_MODEL: z.string().min(1).default('gpt-4o-mini'),
  EMBEDDING_MODEL: z.string().min(1).default('text-embedding-3-small'),
  // No schema default: whether it was given decides if a database filled at another size may go on.
  EMBEDDING_DIMENSIONS: int(8, 16000).optional(),
  EMBEDDINGS: z.enum(['openai', 'local', 'lexical']).optional(),
  LLM_TIMEOUT_MS: int(100, 600_000).default(60_000),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  JOB_MAX_ATTEMPTS: int(1, 100).default(5),
  JOB_BACKOFF_MS: int(1, 3_600_000).default(2000),
  WORKER_CONCURRENCY: int(1, 64).default(4),
  QUEUE_SWEEP_INTERVAL_MS: int(100, 3_600_000).default(30_000),
  QUEUE_STALE_AFTER_MS: int(100, 86_400_000).default(60_000),
  JOB_LEASE_MS: int(1000, 3_600_000).default(30_000),
  QUEUE_PREFIX: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1-64 letters, digits, _ or -').default('engram'),
  TRANSCRIPT_RETENTION_HOURS: z.coerce.number().min(0).max(100_000).default(0),
  IDEMPOTENCY_TTL_HOURS: z.coerce.number().min(24).max(100_000).default(24),
  RETENTION_SWEEP_INTERVAL_MS: int(100, 86_400_000).default(300_000),
  // Bounds on every wait for the database, so an outage answers 503 fast instead of hanging.
  DB_CONNECT_TIMEOUT_MS: int(100, 60_000).default(1000),
  DB_ACQUIRE_TIMEOUT_MS: int(100, 60_000).default(1500),
  REQUEST_TIMEOUT_MS: int(1000, 600_000).default(30_000),
  READINESS_TIMEOUT_MS: int(50, 10_000).default(800),
  /** Encrypts webhook signing secrets at rest; embedded mode without one: generated into DATA_DIR. */
  WEBHOOK_SECRET_KEY: z
    .string()
    .refine((value) => Buffer.byteLength(value, 'utf8') >= 32, 'must be at least 32 bytes')
    .optional(),
  WEBHOOK_ALLOW_PRIVATE: booleanString.default(false),
  /** Delays before each retry of a delivery, in ms (jittered ±20%); the default spans 25 to 38 hours. */
  WEBHOOK_RETRY_SCHEDULE_MS: z
    .string()
    .regex(/^\s*\d+(\s*,\s*\d+)*\s*$/, 'must be a comma-separated list of milliseconds')
    .default('5000,300000,1800000,7200000,18000000,36000000,50400000'),
  WEBHOOK_TIMEOUT_MS: int(100, 60_000).default(10_000),
  WEBHOOK_CONCURRENCY: int(1, 256).default(8),
  /** How often dispatchers look for due deliveries when no notification woke them. */
  WEBHOOK_POLL_INTERVAL_MS: int(10, 3_600_000).default(1000),
  MAX_IMPORT_BYTES: int(1024, 10 * 1024 * 1024 * 1024).default(100 * 1024 * 1024),
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
  /** The configured server secret; unset, it is AUTH_JWT_SECRET's, or generated into DATA_DIR when embedded. */
  serverSecret: string | undefined;
  auth: {
    jwtSecret: string | undefined;
    jwksUrl: string | undefined;
    issuer: string;
    audience: string;
    tenantClaim: string;
    /** Where scopes come from besides `scope` and `scp` (which always count). */
    scopesClaim: string;
    clockToleranceSeconds: number;
    maxTokenAgeSeconds: number;
  };
  /** `minRelevance`: RECALL_MIN_RELEVANCE when set; undefined, the serving embedder's default (minRelevanceFor). */
  recall: { halfLifeHours: number; minRelevance: number | undefined };
  /**
   * Which embedder fills the database. `kind` is what was asked for (EMBEDDINGS, else the default);
   * the `explicit` flags say what was given, since a database keeps the embedder it was filled with
   * unless one of them says otherwise (src/db/embedder-record.ts).
   */
  embeddings: {
    kind: EmbedderKind;
    explicit: boolean;
    dimensionsExplicit: boolean;
    modelExplicit: boolean;
  };
  http: { maxBodyBytes: number; rateLimitPerMinute: number };
  /** Upper bounds on waits: a request that exceeds one answers 503 with Retry-After. */
  timeouts: {
    /** Opening a database connection, TCP connect to ready. */
    dbConnectMs: number;
    /** Taking a connection from the pool for a transaction (connecting included). */
    dbAcquireMs: number;
    /** A whole request. */
    requestMs: number;
    /** Each check of /readyz. */
    readinessMs: number;
  };
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
    /**
     * How long a claimed job is its worker's without a heartbeat: the worker renews it every
     * third of it while the job runs, so only a dead worker's job is taken over, within one lease.
     */
    leaseMs: number;
    queuePrefix: string;
    transcriptRetentionHours: number;
    idempotencyTtlHours: number;
    /** How often each worker runs the retention sweeps (expired memories, transcripts, idempotency keys). */
    retentionSweepIntervalMs: number;
  };
  webhooks: {
    /** WEBHOOK_SECRET_KEY; unset: generated into DATA_DIR (embedded) or derived from the server secret. */
    secretKey: string | undefined;
    allowPrivate: boolean;
    /** Delay before retry n (index n - 1); the delivery fails for good after the last. */
    retryScheduleMs: number[];
    timeoutMs: number;
    concurrency: number;
    pollIntervalMs: number;
  };
  portability: { maxImportBytes: number };
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** NODE_ENV === 'production'. */
  production: boolean;
}

export type EmbedderKind = 'openai' | 'local' | 'lexical';

/**
 * The embedder of a zero-setup start (no key, no base URL). The local model would be the default
 * only for a gain of at least 0.02 recall@10 on LoCoMo with weights 0.1/0.1/0.8. Each with the floor
 * that keeps another user's questions under 3 memories, it gives +0.0195 (README, "Choosing the
 * offline embedder"), at ~50x the ingest cost and 130-290 MB more memory.
 */
export const OFFLINE_DEFAULT_EMBEDDER: EmbedderKind = 'lexical';
export const DEFAULT_EMBEDDING_DIMENSIONS = 1536;

/**
 * RECALL_MIN_RELEVANCE's default for each embedder: the floor that leaves another user's questions
 * about 3 memories at limit 10 while costing recall@10 at most 0.01 on LoCoMo (README, "Recall";
 * `npm run bench -- fusion --floors …` replays them). A semantic embedder's cosine part is larger
 * for unrelated text too (USE lite: ~0.3), so it needs a higher floor (figures in the README). An
 * OpenAI-compatible endpoint keeps the lexical one until measured with one.
 */
export const DEFAULT_MIN_RELEVANCE: Readonly<Record<EmbedderKind, number>> = Object.freeze({
  lexical: 0.17,
  local: 0.26,
  openai: 0.17,
});

/** The relevance floor a recall without `min_relevance` gets, with the embedder that serves it. */
export function minRelevanceFor(config: Pick<Config, 'recall'>, kind: EmbedderKind): number {
  return config.recall.minRelevance ?? DEFAULT_MIN_RELEVANCE[kind];
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
  if (e.DATABASE_URL && !e.SERVER_SECRET && !e.AUTH_JWT_SECRET) {
    throw new ConfigError(
      'SERVER_SECRET',
      'is required when DATABASE_URL is set without AUTH_JWT_SECRET: it keys list cursors and erasure receipts (at least 32 bytes)',
    );
  }
  if (e.WORKER === 'off' && !e.REDIS_URL) {
    // Without Redis the queue lives in the database and is drained in-process; a separate
    // worker process would never see a job, so WORKER=off would silently stall extraction.
    throw new ConfigError('WORKER', 'may be "off" only with REDIS_URL set (a separate worker needs the Redis queue)');
  }
  const remote = Boolean(e.OPENAI_API_KEY || e.OPENAI_BASE_URL);
  if (e.EMBEDDINGS === 'openai' && !remote) {
    throw new ConfigError('EMBEDDINGS', 'may be "openai" only with OPENAI_API_KEY or OPENAI_BASE_URL set');
  }
  if (e.EMBEDDINGS === 'local' && e.EMBEDDING_DIMENSIONS !== undefined && e.EMBEDDING_DIMENSIONS !== 512) {
    throw new ConfigError('EMBEDDING_DIMENSIONS', 'must be 512 (or unset) with EMBEDDINGS=local: the local model has 512 dimensions');
  }
  return {
    port: e.PORT,
    host: e.HOST,
    dataDir: e.DATA_DIR,
    databaseUrl: e.DATABASE_URL,
    redisUrl: e.REDIS_URL,
    worker: e.WORKER,
    workerMetricsPort: e.WORKER_METRICS_PORT,
    migrateOnStart: e.MIGRATE_ON_START,
    serverSecret: e.SERVER_SECRET,
    auth: {
      jwtSecret: e.AUTH_JWT_SECRET,
      jwksUrl: e.AUTH_JWKS_URL,
      issuer: e.AUTH_ISSUER,
      audience: e.AUTH_AUDIENCE,
      tenantClaim: e.AUTH_TENANT_CLAIM,
      scopesClaim: e.AUTH_SCOPES_CLAIM,
      clockToleranceSeconds: e.AUTH_CLOCK_TOLERANCE_S,
      maxTokenAgeSeconds: e.AUTH_MAX_TOKEN_AGE_S,
    },
    recall: { halfLifeHours: e.RECALL_HALF_LIFE_HOURS, minRelevance: e.RECALL_MIN_RELEVANCE },
    embeddings: {
      kind: e.EMBEDDINGS ?? (remote ? 'openai' : OFFLINE_DEFAULT_EMBEDDER),
      explicit: e.EMBEDDINGS !== undefined,
      dimensionsExplicit: e.EMBEDDING_DIMENSIONS !== undefined,
      modelExplicit: env.EMBEDDING_MODEL !== undefined,
    },
    http: { maxBodyBytes: e.MAX_BODY_BYTES, rateLimitPerMinute: e.RATE_LIMIT_PER_MINUTE },
    timeouts: {
      dbConnectMs: e.DB_CONNECT_TIMEOUT_MS,
      dbAcquireMs: e.DB_ACQUIRE_TIMEOUT_MS,
      requestMs: e.REQUEST_TIMEOUT_MS,
      readinessMs: e.READINESS_TIMEOUT_MS,
    },
    llm: {
      apiKey: e.OPENAI_API_KEY,
      baseUrl: e.OPENAI_BASE_URL,
      model: e.LLM_MODEL,
      embeddingModel: e.EMBEDDING_MODEL,
      embeddingDimensions: e.EMBEDDING_DIMENSIONS ?? DEFAULT_EMBEDDING_DIMENSIONS,
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
      retentionSweepIntervalMs: e.RETENTION_SWEEP_INTERVAL_MS,
    },
    webhooks: {
      secretKey: e.WEBHOOK_SECRET_KEY,
      allowPrivate: e.WEBHOOK_ALLOW_PRIVATE,
      retryScheduleMs: e.WEBHOOK_RETRY_SCHEDULE_MS.split(',').map((part) => Number(part.trim())),
      timeoutMs: e.WEBHOOK_TIMEOUT_MS,
      concurrency: e.WEBHOOK_CONCURRENCY,
      pollIntervalMs: e.WEBHOOK_POLL_INTERVAL_MS,
    },
    portability: { maxImportBytes: e.MAX_IMPORT_BYTES },
    logLevel: e.LOG_LEVEL,
    production: e.NODE_ENV === 'production',
  };
}
