import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { SCOPES, requireScope, resolveUserId } from '../auth/principal.js';
import { withTenant } from '../db/tenant.js';
import { contentHash } from '../extraction/normalise.js';
import { findUnsafeStrings } from '../http/input.js';
import * as memoryRepo from '../memories/repository.js';
import { category, idText, importance, isoDateTime, memoryContent, metadataObject, type MemoryFields } from '../memories/schemas.js';
import type { RequestContext } from '../shared/context.js';
import * as repo from './repository.js';

const booleanQuery = z.enum(['true', 'false']).default('false').transform((v) => v === 'true');
const userParam = idText.optional().meta({ description: "The user; defaults to the token's `sub`.", example: 'alice' });

export const exportQuery = z.strictObject({
  user_id: userParam,
  include_superseded: booleanQuery.meta({ description: 'Also export superseded and expired memories (`true` or `false`).', example: 'false' }),
  include_history: booleanQuery.meta({ description: "Add each memory's history as `events` (`true` or `false`).", example: 'false' }),
});
export type ExportQuery = z.output<typeof exportQuery>;

export const importQuery = z.strictObject({ user_id: userParam });

export const importResult = z
  .strictObject({
    imported: z.number().int().min(0),
    skipped: z.number().int().min(0).meta({ description: 'Lines the user already held (or repeated in the file).' }),
    errors: z
      .array(z.strictObject({ line: z.number().int().min(1), message: z.string() }))
      .meta({ description: 'Lines refused, by number (at most 1,000 are listed).' }),
  })
  .meta({ id: 'ImportResult' });

/**
 * One line of an import: an exported Memory. Ids, user, timestamps of the source and its history
 * are accepted and ignored (the target assigns its own); the fields that make the memory are kept.
 */
/** Fields of an exported Memory that describe the source, not the fact: accepted, not imported. */
const SOURCE_FIELDS = { id: z.unknown(), user_id: z.unknown(), created_at: z.unknown(), updated_at: z.unknown(), events: z.unknown() };

export const importLine = z
  .strictObject({
    content: memoryContent,
    importance: importance.default(5),
    category: category.nullable().default(null),
    metadata: metadataObject.default({}),
    // As on POST /memories: a line that does not say when defaults to the time of the import.
    occurred_at: isoDateTime.optional(),
    valid_to: isoDateTime.nullable().default(null),
    expires_at: isoDateTime.nullable().default(null),
    agent_id: idText.nullable().default(null),
    run_id: idText.nullable().default(null),
    ...Object.fromEntries(Object.entries(SOURCE_FIELDS).map(([key, schema]) => [key, schema.optional()])),
  })
  .refine((line) => !line.valid_to || !line.occurred_at || Date.parse(line.valid_to) >= Date.parse(line.occurred_at), {
    path: ['valid_to'],
    message: 'must not be before occurred_at',
  });
type ImportLine = z.output<typeof importLine>;

/** Rows per export query, and lines per embedding call and insert on import. */
export const EXPORT_PAGE = 200;
const EXPORT_PIECE = 100;
export const IMPORT_BATCH = 200;
/** Errors reported in one answer; the count of bad lines goes on past it. */
const MAX_REPORTED_ERRORS = 1000;

/**
 * The user's memories as NDJSON text, most recent occurred_at first, a page at a time, each page in its own short read-only
 * transaction: the consumer's pace (backpressure) decides when the next page is read, and no
 * connection is held while it reads.
 */
export async function* exportMemories(ctx: RequestContext, query: ExportQuery): AsyncGenerator<string> {
  requireScope(ctx.principal, SCOPES.read);
  const { tenantId } = ctx.principal;
  const userId = resolveUserId(ctx.principal, query.user_id);
  const now = ctx.services.clock();
  let after: { at: string; id: string } | undefined;
  for (;;) {
    const rows = await withTenant(
      ctx.services.database,
      tenantId,
      (tx) => repo.exportPage(tx, { tenantId, userId, after, limit: EXPORT_PAGE, includeSuperseded: query.include_superseded, withHistory: query.include_history, now }),
      { readOnly: true },
    );
    // Pieces of ~40 KB: a string past V8's regular object size (128 KB) would live in its
    // large-object space until a full collection, and pages of them would pile up meanwhile.
    for (let i = 0; i < rows.length; i += EXPORT_PIECE) yield rows.slice(i, i + EXPORT_PIECE).map((r) => `${r.line}\n`).join('');
    const last = rows[rows.length - 1];
    if (!last || rows.length < EXPORT_PAGE) return;
    after = { at: last.cursor_at, id: last.id };
  }
}

export interface ImportResult {
  imported: number;
  skipped: number;
  errors: Array<{ line: number; message: string }>;
}

/** Parses and validates one line; a message for the caller when it is not a memory. */
export function parseImportLine(text: string): { ok: true; value: ImportLine } | { ok: false; message: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, message: 'not valid JSON' };
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) return { ok: false, message: 'must be a JSON object (one Memory)' };
  const unsafe = findUnsafeStrings(value);
  if (unsafe.length > 0) return { ok: false, message: `${unsafe[0]!.path}: ${unsafe[0]!.message}` };
  const parsed = importLine.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return { ok: false, message: `${issue.path.length ? `/${issue.path.join('/')}: ` : ''}${issue.message}` };
  }
  return { ok: true, value: parsed.data };
}

/**
 * Imports NDJSON lines into the user's memories: each line validated (a bad one is reported with
 * its number and the rest go on), embedded in batches by the target's embedder, and stored unless
 * the user holds it already (same content, and the same valid_to for a superseded one), so
 * importing a file twice stores nothing the second time. Each batch commits on its own.
 */
export async function importMemories(ctx: RequestContext, userIdParam: string | undefined, lines: AsyncIterable<string>): Promise<ImportResult> {
  requireScope(ctx.principal, SCOPES.write);
  const userId = resolveUserId(ctx.principal, userIdParam);
  const result: ImportResult = { imported: 0, skipped: 0, errors: [] };
  let batch: Array<{ line: number; value: ImportLine }> = [];
  let lineNumber = 0;
  for await (const text of lines) {
    lineNumber += 1;
    if (text.trim() === '') continue;
    const parsed = parseImportLine(text);
    if (!parsed.ok) {
      if (result.errors.length < MAX_REPORTED_ERRORS) result.errors.push({ line: lineNumber, message: parsed.message });
      continue;
    }
    batch.push({ line: lineNumber, value: parsed.value });
    if (batch.length >= IMPORT_BATCH) {
      await storeBatch(ctx, userId, batch, result);
      batch = [];
    }
  }
  if (batch.length > 0) await storeBatch(ctx, userId, batch, result);
  return result;
}

async function storeBatch(ctx: RequestContext, userId: string, batch: Array<{ line: number; value: ImportLine }>, result: ImportResult): Promise<void> {
  const { tenantId } = ctx.principal;
  const iso = (value: string | null) => (value === null ? null : new Date(value).toISOString());
  const keyed = batch.map(({ value }) => ({ value, hash: contentHash(value.content), validTo: iso(value.valid_to) }));
  // Within the file, too: the first line of a memory wins.
  const seen = new Set<string>();
  const fresh = keyed.filter((k) => {
    const key = repo.importKey(k.hash, k.validTo);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  result.skipped += keyed.length - fresh.length;
  if (fresh.length === 0) return;
  const embeddings = await ctx.services.embedder.embed(fresh.map((k) => k.value.content));
  const now = ctx.services.clock();
  const stored = await withTenant(ctx.services.database, tenantId, async (tx) => {
    await memoryRepo.lockUser(tx, tenantId, userId);
    // Superseded lines are checked against all rows; current ones through the current-fact index.
    const existing = await repo.existingKeys(tx, tenantId, userId, [...new Set(fresh.filter((k) => k.validTo !== null).map((k) => k.hash))]);
    // A current line whose fact is current already is the same memory, whatever its dates.
    const current = new Set((await memoryRepo.findCurrentByHashes(tx, tenantId, userId, fresh.map((k) => k.hash))).map((m) => m.contentHash));
    const rows: memoryRepo.NewMemoryRow[] = [];
    fresh.forEach((k, index) => {
      if (existing.has(repo.importKey(k.hash, k.validTo)) || (k.validTo === null && current.has(k.hash))) return;
      rows.push({
        id: randomUUID(),
        tenantId,
        userId,
        agentId: k.value.agent_id,
        runId: k.value.run_id,
        content: k.value.content,
        contentHash: k.hash,
        embedding: embeddings[index]!,
        importance: k.value.importance,
        category: k.value.category,
        metadata: k.value.metadata,
        occurredAt: k.value.occurred_at ? new Date(k.value.occurred_at) : now,
        expiresAt: k.value.expires_at ? new Date(k.value.expires_at) : null,
        validTo: k.validTo ? new Date(k.validTo) : null,
        createdAt: now,
      });
    });
    const inserted: MemoryFields[] = await memoryRepo.insertMemories(tx, rows);
    await memoryRepo.insertEvents(
      tx,
      inserted.map((m) => ({ tenantId, memoryId: m.id, userId, event: 'ADD' as const, oldContent: null, newContent: m.content, jobId: null, actor: 'import', createdAt: now })),
    );
    return inserted.length;
  });
  result.imported += stored;
  result.skipped += fresh.length - stored;
}
