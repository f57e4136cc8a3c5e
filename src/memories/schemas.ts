import { z } from 'zod';
import type { memories } from '../db/schema.js';

/**
 * The request and response schemas of the memories routes; openapi.yaml is generated from them.
 * Building blocks stay inline in the document; objects get a component name with `.meta({ id })`,
 * except request bodies: inline under `requestBody`, a field with a default (`.default()`) is
 * optional in the types openapi-typescript generates, where in a component it would be required.
 */
export const idText = z.string().trim().min(1).max(256);
const ID_TEXT = 'A caller-chosen identifier; surrounding whitespace is trimmed, then 1–256 characters.';
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
/** A date-time as the service answers it: UTC, milliseconds. */
export const utcDateTime = z.iso.datetime();
export const metadataObject = z.record(z.string().max(256), z.json()).meta({
  id: 'Metadata',
  description: 'Arbitrary JSON values under keys of at most 256 characters.',
  // zod's JSON values have no JSON Schema of their own: any value, said plainly for generators.
  type: 'object',
  propertyNames: { maxLength: 256 },
  additionalProperties: true,
});
export const importance = z.number().int().min(1).max(10);
const IMPORTANCE = 'How much the memory matters, 1 (trivia) to 10 (critical, e.g. an allergy).';
export const category = z.string().trim().min(1).max(64);
const CATEGORY = 'A free-form category such as `health` or `preferences`; trimmed, then 1–64 characters.';
export const MAX_MEMORY_CHARS = 10_000;
export const memoryContent = z.string().trim().min(1, 'must not be empty').max(MAX_MEMORY_CHARS);
const CONTENT = 'The fact, in plain language; trimmed, then 1–10 000 characters.';

/** A path's memory id: a value that is not a UUID cannot name a memory, so it is a 404. */
export const memoryIdParams = z.object({
  id: z
    .uuid({ error: 'memory not found' })
    .transform((id) => id.toLowerCase())
    .meta({ description: 'The memory\'s id. A value that is not a UUID cannot name a memory and answers 404.', example: '3f1c2a4e-8b7d-4c6e-9a1f-2b3c4d5e6f70' }),
});

export const newMemoryInput = z
  .strictObject({
    content: memoryContent.meta({ description: CONTENT }),
    importance: importance.optional().meta({ description: `${IMPORTANCE} Default 5.` }),
    category: category.nullable().optional().meta({ description: `${CATEGORY} Default null.` }),
    metadata: metadataObject.optional(),
    occurred_at: isoDateTime.optional().meta({ description: 'When the fact became true; defaults to the time of the request.' }),
    expires_at: isoDateTime.nullable().optional().meta({ description: 'Extension: when the memory stops being recalled; null or absent for never.' }),
  })
  .meta({ id: 'NewMemory' });

export const addMemoriesBody = z
  .strictObject({
    user_id: idText.optional().meta({ description: `The user the memories are about; defaults to the token's \`sub\`. ${ID_TEXT}` }),
    agent_id: idText.nullable().optional().meta({ description: `The agent recording them. ${ID_TEXT}` }),
    run_id: idText.nullable().optional().meta({ description: `The run (session) they come from. ${ID_TEXT}` }),
    memories: z.array(newMemoryInput).min(1).max(1000),
  });
export type AddMemoriesBody = z.output<typeof addMemoriesBody>;

export const patchMemoryBody = z
  .strictObject({
    content: memoryContent.optional().meta({ description: CONTENT }),
    importance: importance.optional().meta({ description: IMPORTANCE }),
    category: category.nullable().optional().meta({ description: `${CATEGORY} null clears it.` }),
    metadata: metadataObject.optional(),
  })
  .refine((b) => Object.keys(b).length > 0, { message: 'at least one of content, importance, category, metadata is required' })
  .meta({ description: 'At least one field.', minProperties: 1 });
export type PatchMemoryBody = z.output<typeof patchMemoryBody>;

const booleanQuery = z.enum(['true', 'false']).default('false').transform((v) => v === 'true');

export const listMemoriesQuery = z.strictObject({
  user_id: idText.optional().meta({ description: `The user whose memories to list; defaults to the token's \`sub\`.`, example: 'alice' }),
  limit: z.coerce.number().int().min(1).max(100).default(20).meta({ description: 'Page size.', example: 20 }),
  cursor: z.string().min(1).max(512).optional().meta({ description: 'The `next_cursor` of the previous page.' }),
  include_superseded: booleanQuery.meta({
    description: 'Also list memories a newer fact superseded. Only the literals `true` and `false` are accepted.',
    example: 'false',
  }),
});
export type ListMemoriesQuery = z.output<typeof listMemoriesQuery>;

export const deleteMemoriesBody = z
  .strictObject({
    user_id: idText.optional().meta({ description: `The user whose memories to delete; defaults to the token's \`sub\`.` }),
    memory_ids: z
      .array(z.uuid())
      .min(1)
      .max(1000)
      .optional()
      .meta({ description: 'The memories to delete; without it, everything held about the user is erased.' }),
  });
export type DeleteMemoriesBody = z.output<typeof deleteMemoriesBody>;

const memoryFields = {
  id: z.uuid(),
  user_id: z.string().meta({ description: 'The user the memory is about.' }),
  agent_id: z.string().nullable().meta({ description: 'The agent that recorded it, if given.' }),
  run_id: z.string().nullable().meta({ description: 'The run (session) it came from, if given.' }),
  content: z.string(),
  importance: importance.meta({ description: IMPORTANCE }),
  category: z.string().nullable(),
  // What was stored, read back: any JSON object (the request side bounds its keys).
  metadata: z.record(z.string(), z.unknown()).meta({ type: 'object', additionalProperties: true }),
  occurred_at: utcDateTime.meta({ description: 'When the fact became true or the event happened; recency is measured from it.' }),
  created_at: utcDateTime.meta({ description: 'When the service stored it.' }),
  updated_at: utcDateTime.meta({ description: 'When it last changed (equal to `created_at` until then).' }),
  valid_to: utcDateTime.nullable().meta({
    description:
      'When it stopped being true — when the newer fact that superseded it began (its `occurred_at`, never before this memory\'s own and never after the change was made) — or, for a repeat stored by `POST /memories`, when it was repeated; null while it is current.',
  }),
  expires_at: utcDateTime.nullable().meta({ description: 'When it stops being recalled; null for never.' }),
};

export const memorySchema = z.strictObject(memoryFields).meta({
  id: 'Memory',
  description:
    'A durable fact about a user. A memory that a newer fact superseded keeps its row with `valid_to` set; recall and list leave it out unless `as_of` is before `valid_to` (recall) or `include_superseded=true` (list).',
});
/** The public shape of a memory: snake_case, ISO times, no embedding or internal bookkeeping. */
export type MemoryDto = z.output<typeof memorySchema>;

export const memoryList = z.strictObject({ memories: z.array(memorySchema).min(1).max(1000) }).meta({ id: 'MemoryList' });

export const memoryPage = z
  .strictObject({
    memories: z.array(memorySchema).max(100),
    next_cursor: z.string().nullable().meta({ description: 'Opaque; pass it as `cursor` for the next page. Null on the last page.' }),
  })
  .meta({ id: 'MemoryPage' });

export const memoryHistory = z
  .strictObject({
    events: z.array(
      z
        .strictObject({
          event: z.enum(['ADD', 'UPDATE', 'SUPERSEDE', 'DELETE']),
          old_content: z.string().nullable().meta({ description: 'The content before the event (null for ADD).' }),
          new_content: z.string().nullable().meta({ description: 'The content after the event.' }),
          job_id: z.uuid().nullable().meta({ description: 'The extraction job that caused it, if any.' }),
          actor: z.string().meta({
            description: '`user:<sub>`, `service` for a token without a subject, `job:<job_id>` for an extraction job, or `erased:<erasure_id>` for a user erased since.',
          }),
          created_at: utcDateTime,
        })
        .meta({ id: 'MemoryEvent' }),
    ),
  })
  .meta({ id: 'MemoryHistory' });

export const erasureReceipt = z
  .strictObject({
    deleted: z.number().int().min(0).meta({ description: 'How many memories were deleted.' }),
    erasure_id: z.uuid().meta({ description: 'The id of the erasure receipt written for this delete.' }),
  })
  .meta({ id: 'ErasureReceipt' });

/** What the examples of /docs show; each is a request that succeeds as is. */
export const EXAMPLE_MEMORY: MemoryDto = {
  id: '3f1c2a4e-8b7d-4c6e-9a1f-2b3c4d5e6f70',
  user_id: 'alice',
  agent_id: 'support-bot',
  run_id: null,
  content: 'Alice is allergic to peanuts',
  importance: 9,
  category: 'health',
  metadata: { source: 'onboarding' },
  occurred_at: '2026-01-31T12:00:00.000Z',
  created_at: '2026-01-31T12:00:00.000Z',
  updated_at: '2026-01-31T12:00:00.000Z',
  valid_to: null,
  expires_at: null,
};

export type MemoryRow = typeof memories.$inferSelect;

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
