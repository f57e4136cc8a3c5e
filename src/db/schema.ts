import { sql } from 'drizzle-orm';
import {
  customType,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  smallint,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core';
import { vectorText } from './vector-text.js';

/**
 * pgvector column without a fixed dimension: EMBEDDING_DIMENSIONS is configuration, not schema.
 * Recall does an exact per-user scan (no ANN index), which an unconstrained column allows.
 */
export const vector = customType<{ data: number[]; driverData: string }>({
  dataType() {
    return 'vector';
  },
  toDriver(value) {
    return vectorText(value);
  },
  fromDriver(value) {
    return typeof value === 'string' ? (JSON.parse(value) as number[]) : (value as number[]);
  },
});

const tsvector = customType<{ data: string }>({
  dataType() {
    return 'tsvector';
  },
});

const timestamptz = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

export type MemoryMetadata = Record<string, unknown>;

/** Memories. tenant_id leads every key and index so the tables can later be distributed by it. */
export const memories = pgTable(
  'memories',
  {
    tenantId: text('tenant_id').notNull(),
    id: uuid('id').notNull().defaultRandom(),
    userId: text('user_id').notNull(),
    agentId: text('agent_id'),
    runId: text('run_id'),
    content: text('content').notNull(),
    contentHash: text('content_hash').notNull(),
    embedding: vector('embedding').notNull(),
    searchText: tsvector('search_text')
      .notNull()
      .generatedAlwaysAs(sql`to_tsvector('english'::regconfig, content)`),
    importance: smallint('importance').notNull().default(5),
    category: text('category'),
    metadata: jsonb('metadata').$type<MemoryMetadata>().notNull().default({}),
    occurredAt: timestamptz('occurred_at').notNull().defaultNow(),
    createdAt: timestamptz('created_at').notNull().defaultNow(),
    updatedAt: timestamptz('updated_at').notNull().defaultNow(),
    validTo: timestamptz('valid_to'),
    supersededBy: uuid('superseded_by'),
    expiresAt: timestamptz('expires_at'),
    sourceJobId: uuid('source_job_id'),
    source: jsonb('source').$type<{ messageIndexes?: number[] } | null>(),
  },
  (t) => [
    primaryKey({ columns: [t.tenantId, t.id] }),
    // Recall and list scan one user's current rows.
    index('memories_current_user_idx')
      .on(t.tenantId, t.userId, t.createdAt.desc(), t.id)
      .where(sql`valid_to is null`),
    index('memories_user_idx').on(t.tenantId, t.userId),
    // Recall scans at most the newest N of a user's memories in scope: walked in this order, it
    // stops after N instead of reading every row (not partial: `as_of` reads superseded rows too).
    index('memories_user_occurred_idx').on(t.tenantId, t.userId, t.occurredAt.desc(), t.id.desc()),
    // One current row per normalised fact and user: races between jobs cannot duplicate a fact.
    uniqueIndex('memories_current_content_uq')
      .on(t.tenantId, t.userId, t.contentHash)
      .where(sql`valid_to is null`),
  ],
);

export const memoryEvents = pgTable(
  'memory_events',
  {
    tenantId: text('tenant_id').notNull(),
    id: uuid('id').notNull().defaultRandom(),
    memoryId: uuid('memory_id').notNull(),
    userId: text('user_id').notNull(),
    event: text('event', { enum: ['ADD', 'UPDATE', 'SUPERSEDE', 'DELETE'] }).notNull(),
    oldContent: text('old_content'),
    newContent: text('new_content'),
    jobId: uuid('job_id'),
    actor: text('actor').notNull(),
    createdAt: timestamptz('created_at').notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.tenantId, t.id] }),
    index('memory_events_memory_idx').on(t.tenantId, t.memoryId, t.createdAt),
    index('memory_events_user_idx').on(t.tenantId, t.userId),
  ],
);

export type JobStatus = 'queued' | 'running' | 'succeeded' | 'failed';

export const extractionJobs = pgTable(
  'extraction_jobs',
  {
    tenantId: text('tenant_id').notNull(),
    id: uuid('id').notNull().defaultRandom(),
    userId: text('user_id').notNull(),
    agentId: text('agent_id'),
    runId: text('run_id'),
    idempotencyKey: text('idempotency_key'),
    bodyHash: text('body_hash').notNull(),
    /** The transcript and options; null once purged (after success, or by erasure). */
    payload: jsonb('payload').$type<unknown>(),
    status: text('status').$type<JobStatus>().notNull().default('queued'),
    attempts: integer('attempts').notNull().default(0),
    result: jsonb('result').$type<unknown>(),
    error: jsonb('error').$type<{ code: string; message: string } | null>(),
    runAfter: timestamptz('run_after').notNull().defaultNow(),
    lockedUntil: timestamptz('locked_until'),
    createdAt: timestamptz('created_at').notNull().defaultNow(),
    updatedAt: timestamptz('updated_at').notNull().defaultNow(),
    startedAt: timestamptz('started_at'),
    finishedAt: timestamptz('finished_at'),
  },
  (t) => [
    primaryKey({ columns: [t.tenantId, t.id] }),
    uniqueIndex('extraction_jobs_idempotency_user_uq').on(t.tenantId, t.userId, t.idempotencyKey),
    index('extraction_jobs_user_idx').on(t.tenantId, t.userId),
    index('extraction_jobs_pending_idx').on(t.status, t.runAfter).where(sql`status in ('queued', 'running')`),
  ],
);

export const erasures = pgTable(
  'erasures',
  {
    tenantId: text('tenant_id').notNull(),
    id: uuid('id').notNull().defaultRandom(),
    /** HMAC (server key) of sha256(tenant, user): proves which erasure happened without keeping who. */
    subjectHash: text('subject_hash').notNull(),
    scope: text('scope', { enum: ['user', 'memories'] }).notNull(),
    counts: jsonb('counts').$type<Record<string, number>>().notNull(),
    createdAt: timestamptz('created_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.id] })],
);

/** A tenant's governance settings (src/settings): one validated JSON document per tenant. */
export const tenantSettings = pgTable('tenant_settings', {
  tenantId: text('tenant_id').primaryKey(),
  settings: jsonb('settings').$type<unknown>().notNull(),
  updatedAt: timestamptz('updated_at').notNull().defaultNow(),
});

export const tenantTables = ['memories', 'memory_events', 'extraction_jobs', 'erasures', 'tenant_settings', 'webhook_endpoints', 'webhook_deliveries'] as const;
/**
 * Tenant tables the application only reads, kept by the database's triggers from the tables above
 * (recall of a large scope: migration 0010, memory_lexeme_stats, the word counts; 0011,
 * memory_search, the narrow copies its text arm reads); row-level security holds them to the
 * tenant all the same.
 */
export const derivedTenantTables = ['memory_lexeme_stats', 'memory_search'] as const;
