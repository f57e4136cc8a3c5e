import { randomUUID } from 'node:crypto';
import { SCOPES, requireScope, resolveUserId, visibleUser } from '../auth/principal.js';
import { withTenant } from '../db/tenant.js';
import { lastStatement, sqlState, type Db } from '../db/client.js';
import { contentHash } from '../extraction/normalise.js';
import { DomainError, notFound, validationFailed } from '../shared/errors.js';
import type { RequestContext } from '../shared/context.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import * as repo from './repository.js';
import { admitItems } from '../governance/door.js';
import { expiryFor, isExpired } from '../governance/retention.js';
import { tenantSettings } from '../settings/service.js';
import { toMemoryDto, type AddMemoriesBody, type MemoryFields, type ListMemoriesQuery, type MemoryDto, type PatchMemoryBody } from './schemas.js';

const DEFAULT_IMPORTANCE = 5;

/** How history names a user who acted (erasure pseudonymises exactly this). */
export const userActor = (subject: string): string => `user:${subject}`;

export function actorOf(ctx: RequestContext): string {
  return ctx.principal.subject ? userActor(ctx.principal.subject) : 'service';
}

/** Direct add: stored as given (no LLM), one ADD event each, answered in input order (see storeAsGiven). */
export async function addMemories(ctx: RequestContext, body: AddMemoriesBody): Promise<MemoryDto[]> {
  requireScope(ctx.principal, SCOPES.write);
  const { tenantId } = ctx.principal;
  const userId = resolveUserId(ctx.principal, body.user_id);
  const settings = await tenantSettings(ctx.services.database, tenantId);
  // Personal data is redacted (or refused) before anything, the embedder included, sees it.
  const items = admitItems(body.memories, settings.pii.mode, (index) => `/memories/${index}`);
  const now = ctx.services.clock();
  const embeddings = await ctx.services.embedder.embed(items.map((m) => m.content));
  const rows: repo.NewMemoryRow[] = items.map((m, index) => ({
    tenantId,
    userId,
    agentId: body.agent_id ?? null,
    runId: body.run_id ?? null,
    content: m.content,
    contentHash: contentHash(m.content),
    embedding: embeddings[index]!,
    importance: m.importance ?? DEFAULT_IMPORTANCE,
    category: m.category ?? null,
    metadata: m.metadata ?? {},
    occurredAt: m.occurred_at ? new Date(m.occurred_at) : now,
    expiresAt: expiryFor(settings.retention, m.category ?? null, now, m),
    createdAt: now,
  }));
  const stored = await withTenant(ctx.services.database, tenantId, (tx) =>
    storeAsGiven(tx, { tenantId, userId, rows, actor: actorOf(ctx), jobId: null, now, lastInTransaction: true }),
  );
  if (stored.expiredErased > 0) ctx.services.metrics?.observeMemoriesExpired(stored.expiredErased);
  return stored.memories.map(toMemoryDto);
}

export async function listMemories(ctx: RequestContext, query: ListMemoriesQuery): Promise<{ memories: MemoryDto[]; next_cursor: string | null }> {
  requireScope(ctx.principal, SCOPES.read);
  const userId = resolveUserId(ctx.principal, query.user_id);
  const scope = { key: ctx.services.keys.cursor, tenantId: ctx.principal.tenantId, userId };
  const after = query.cursor ? decodeCursor(query.cursor, scope) : undefined;
  const rows = await withTenant(
    ctx.services.database,
    ctx.principal.tenantId,
    (tx) => {
      lastStatement(tx);
      return repo.listMemories(tx, { tenantId: ctx.principal.tenantId, userId, limit: query.limit + 1, after, includeSuperseded: query.include_superseded, now: ctx.services.clock() });
    },
    { readOnly: true },
  );
  const page = rows.slice(0, query.limit);
  const last = page[page.length - 1];
  return { memories: page.map(toMemoryDto), next_cursor: rows.length > query.limit && last ? encodeCursor(last, scope) : null };
}

export async function getMemory(ctx: RequestContext, id: string): Promise<MemoryDto> {
  requireScope(ctx.principal, SCOPES.read);
  const row = await withTenant(
    ctx.services.database,
    ctx.principal.tenantId,
    (tx) => {
      lastStatement(tx);
      return repo.findMemory(tx, ctx.principal.tenantId, id, visibleUser(ctx.principal));
    },
    { readOnly: true },
  );
  if (!row || isExpired(row, ctx.services.clock())) throw notFound('memory');
  return toMemoryDto(row);
}

/** Edits in place (no supersession) and records an UPDATE event with the old and new content. */
export async function patchMemory(ctx: RequestContext, id: string, body: PatchMemoryBody): Promise<MemoryDto> {
  requireScope(ctx.principal, SCOPES.write);
  const { tenantId } = ctx.principal;
  const settings = await tenantSettings(ctx.services.database, tenantId);
  body = admitItems([body], settings.pii.mode, () => '')[0]!;
  const embedding = body.content !== undefined ? (await ctx.services.embedder.embed([body.content]))[0] : undefined;
  const now = ctx.services.clock();
  try {
    return await withTenant(ctx.services.database, tenantId, async (tx) => {
      const current = await repo.findMemory(tx, tenantId, id, visibleUser(ctx.principal));
      if (!current || isExpired(current, now)) throw notFound('memory');
      const changes: repo.MemoryChanges = {};
      if (body.expires_at !== undefined || body.ttl_days !== undefined) changes.expiresAt = expiryFor(settings.retention, null, now, body);
      if (body.content !== undefined && body.content !== current.content) {
        changes.content = body.content;
        changes.contentHash = contentHash(body.content);
        changes.embedding = embedding!;
      }
      if (body.importance !== undefined) changes.importance = body.importance;
      if (body.category !== undefined) changes.category = body.category;
      if (body.metadata !== undefined) changes.metadata = body.metadata;
      const updated = await repo.updateMemory(tx, tenantId, id, changes, now);
      if (!updated) throw notFound('memory');
      await repo.insertEvents(tx, [
        { tenantId, memoryId: id, userId: current.userId, event: 'UPDATE', oldContent: current.content, newContent: updated.content, jobId: null, actor: actorOf(ctx) },
      ]);
      return toMemoryDto(updated);
    });
  } catch (error) {
    if (sqlState(error) === '23505') throw new DomainError('conflict', 'the user already holds a current memory with this content');
    throw error;
  }
}

export async function getHistory(ctx: RequestContext, id: string) {
  requireScope(ctx.principal, SCOPES.read);
  const { tenantId } = ctx.principal;
  const events = await withTenant(ctx.services.database, tenantId, async (tx) => {
    const memory = await repo.findMemory(tx, tenantId, id, visibleUser(ctx.principal));
    if (!memory || isExpired(memory, ctx.services.clock())) throw notFound('memory');
    return repo.listEvents(tx, tenantId, id);
  }, { readOnly: true });
  return {
    events: events.map((e) => ({
      event: e.event,
      old_content: e.oldContent,
      new_content: e.newContent,
      job_id: e.jobId,
      actor: e.actor,
      created_at: e.createdAt.toISOString(),
    })),
  };
}

/**
 * Valid time, not transaction time: a superseded fact stopped being true when the newer one began
 * (its occurred_at), never before the old one began nor after now. So a recall `as_of` between the
 * two sees only the old one, and one after the newer began only the newer one.
 */
export function supersededAt(old: { occurredAt: Date }, newerBegan: Date, now: Date): Date {
  return new Date(Math.min(now.getTime(), Math.max(old.occurredAt.getTime(), newerBegan.getTime())));
}

/** The stored rows, and how many expired memories of the user the write erased first (for metrics, once committed). */
export interface StoredAsGiven {
  memories: Array<MemoryFields & { contentHash: string }>;
  expiredErased: number;
}

export interface StoreAsGivenInput {
  tenantId: string;
  userId: string;
  rows: repo.NewMemoryRow[];
  actor: string;
  jobId: string | null;
  now: Date;
  /** The inserts are the transaction's last statements: its COMMIT goes down with them (lastStatement). */
  lastInTransaction?: boolean;
}

/**
 * Stores each row as given, in order, with an ADD event each. A row whose normalised content is
 * already a current memory of the user supersedes that memory (valid_to from supersededAt,
 * superseded_by and a SUPERSEDE event), so the newest importance, category and metadata win while the old row and its
 * history stay; within a batch a later repeat supersedes an earlier one the same way. There is
 * never more than one current memory per fact. The caller's transaction is tenant-bound.
 */
export async function storeAsGiven(tx: Db, input: StoreAsGivenInput): Promise<StoredAsGiven> {
  const { tenantId, userId, now } = input;
  const ids = input.rows.map(() => randomUUID());
  const lastIndexOfHash = new Map<string, number>();
  input.rows.forEach((row, index) => lastIndexOfHash.set(row.contentHash, index));
  const rows = input.rows.map((row, index) => {
    const last = lastIndexOfHash.get(row.contentHash)!;
    if (last === index) return { ...row, id: ids[index]! };
    return { ...row, id: ids[index]!, validTo: supersededAt(row, input.rows[last]!.occurredAt, now), supersededBy: ids[last]! };
  });
  // Sent together, without waiting: PostgreSQL runs them in the order sent, so the sweep and the
  // look run under the lock (each statement its own snapshot, taken once the lock is held). Both go
  // through tx.execute, so neither can overtake the other on its way to the connection.
  const [, { expiredErased, current: existing }] = await Promise.all([
    repo.lockUser(tx, tenantId, userId),
    repo.eraseExpiredAndFindCurrent(tx, tenantId, userId, [...lastIndexOfHash.keys()], now),
  ]);
  const events: repo.NewMemoryEvent[] = [];
  const event = (memoryId: string, type: repo.MemoryEventType, oldContent: string | null, newContent: string | null): repo.NewMemoryEvent => ({
    tenantId,
    memoryId,
    userId,
    event: type,
    oldContent,
    newContent,
    jobId: input.jobId,
    actor: input.actor,
    createdAt: now,
  });
  // One round trip for all the copies it supersedes (distinct rows, so their order is free), and
  // before the insert, which needs their unique slots.
  await Promise.all(
    existing.map((old) => {
      const replacement = rows[lastIndexOfHash.get(old.contentHash)!]!;
      events.push(event(old.id, 'SUPERSEDE', old.content, replacement.content));
      return repo.supersedeMemories(tx, tenantId, [old.id], supersededAt(old, replacement.occurredAt, now), replacement.id);
    }),
  );
  for (const row of rows) {
    events.push(event(row.id, 'ADD', null, row.content));
    if (row.supersededBy) {
      // Stored and superseded in one transaction: a millisecond apart, so its history reads in order.
      const superseded = event(row.id, 'SUPERSEDE', row.content, rows[lastIndexOfHash.get(row.contentHash)!]!.content);
      events.push({ ...superseded, createdAt: new Date(now.getTime() + 1) });
    }
  }
  // The rows and their history go down together (the ids are made here, nothing waits on the
  // insert's answer), and the COMMIT with them when nothing follows; a failed insert fails the
  // history's statement too (and turns that COMMIT into a rollback), and its error is thrown.
  const insertingRows = repo.insertMemories(tx, rows);
  if (input.lastInTransaction) lastStatement(tx);
  const [inserted] = await Promise.all([insertingRows, repo.insertEvents(tx, events)]);
  const byId = new Map(inserted.map((m) => [m.id, m]));
  return { memories: rows.map((row) => byId.get(row.id)!), expiredErased };
}
