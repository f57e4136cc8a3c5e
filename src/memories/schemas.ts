import { z } from 'zod';
import type { memories } from '../db/schema.js';

export const idText = z.string().trim().min(1).max(256);
// The contract's range, 0001-01-01 .. 9999-12-31 UTC, checked after the offset is applied: there
// is no year 0 in PostgreSQL, and 9999-12-31T23:59:59-14:00 is year 10000, which a Date serialises
// as "+010000-…" that the database refuses.
const EARLIEST_INSTANT = Date.parse('0001-01-01T00:00:00Z');
const LATEST_INSTANT = Date.parse('9999-12-31T23:59:59.999Z');
export const isoDateTime = z.iso
  .datetime({ offset: true, message: 'must be an ISO 8601 date-time with a time zone, e.g. 2026-01-31T12:00:00Z' })
  // Only for a value that parses: an unparsable one has the format's message alone.
  .refine((value) => !(Date.parse(value) < EARLIEST_INSTANT), 'must be on or after 0001-01-01T00:00:00Z')
  .refine((value) => !(Date.parse(value) > LATEST_INSTANT), 'must be on or before 9999-12-31T23:59:59.999Z');
export const metadataObject = z.record(z.string().max(256), z.json());
export const importance = z.number().int().min(1).max(10);
export const category = z.string().trim().min(1).max(64);
export const MAX_MEMORY_CHARS = 10_000;
export const memoryContent = z.string().trim().min(1, 'must not be empty').max(MAX_MEMORY_CHARS);

/** Days a memory is kept from now; instead of `expires_at`. */
export const ttlDays = z.number().int().min(1).max(36_500);
const oneExpiry = (b: { expires_at?: unknown; ttl_days?: unknown }) => b.expires_at === undefined || b.ttl_days === undefined;
const oneExpiryIssue = { message: 'give expires_at or ttl_days, not both', path: ['ttl_days'] };

export const newMemoryInput = z
  .strictObject({
    content: memoryContent,
    importance: importance.optional(),
    category: category.nullable().optional(),
    metadata: metadataObject.optional(),
    occurred_at: isoDateTime.optional(),
    expires_at: isoDateTime.nullable().optional(),
    ttl_days: ttlDays.optional(),
  })
  .refine(oneExpiry, oneExpiryIssue);

export const addMemoriesBody = z.strictObject({
  user_id: idText.optional(),
  agent_id: idText.nullable().optional(),
  run_id: idText.nullable().optional(),
  memories: z.array(newMemoryInput).min(1).max(1000),
});
export type AddMemoriesBody = z.output<typeof addMemoriesBody>;

export const patchMemoryBody = z
  .strictObject({
    content: memoryContent.optional(),
    importance: importance.optional(),
    category: category.nullable().optional(),
    metadata: metadataObject.optional(),
    expires_at: isoDateTime.nullable().optional(),
    ttl_days: ttlDays.optional(),
  })
  .refine((b) => Object.keys(b).length > 0, { message: 'at least one of content, importance, category, metadata, expires_at, ttl_days is required' })
  .refine(oneExpiry, oneExpiryIssue);
export type PatchMemoryBody = z.output<typeof patchMemoryBody>;

const booleanQuery = z.enum(['true', 'false']).transform((v) => v === 'true');

export const listMemoriesQuery = z.strictObject({
  user_id: idText.optional(),
  limit: z.coerce.number().int().min(1).max(100).default(20),
  cursor: z.string().min(1).max(512).optional(),
  include_superseded: booleanQuery.default(false),
});
export type ListMemoriesQuery = z.output<typeof listMemoriesQuery>;

export const deleteMemoriesBody = z.strictObject({
  user_id: idText.optional(),
  memory_ids: z.array(z.uuid()).min(1).max(1000).optional(),
});
export type DeleteMemoriesBody = z.output<typeof deleteMemoriesBody>;

export type MemoryRow = typeof memories.$inferSelect;

/** The public shape of a memory: snake_case, ISO times, no embedding or internal bookkeeping. */
export interface MemoryDto {
  id: string;
  user_id: string;
  agent_id: string | null;
  run_id: string | null;
  content: string;
  importance: number;
  category: string | null;
  metadata: Record<string, unknown>;
  occurred_at: string;
  created_at: string;
  updated_at: string;
  valid_to: string | null;
  expires_at: string | null;
}

export type MemoryFields = Omit<MemoryRow, 'embedding' | 'searchText' | 'contentHash' | 'tenantId' | 'supersededBy' | 'sourceJobId' | 'source'>;

export function toMemoryDto(row: MemoryFields): MemoryDto {
  return {
    id: row.id,
    user_id: row.userId,
    agent_id: row.agentId,
    run_id: row.runId,
    content: row.content,
    importance: row.importance,
    category: row.category,
    metadata: row.metadata,
    occurred_at: row.occurredAt.toISOString(),
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
    valid_to: row.validTo ? row.validTo.toISOString() : null,
    expires_at: row.expiresAt ? row.expiresAt.toISOString() : null,
  };
}
