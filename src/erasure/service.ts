import { createHash } from 'node:crypto';
import { SCOPES, requireScope, resolveUserId, visibleUser } from '../auth/principal.js';
import { withTenant } from '../db/tenant.js';
import * as memoryRepo from '../memories/repository.js';
import type { DeleteMemoriesBody } from '../memories/schemas.js';
import { notFound } from '../shared/errors.js';
import type { RequestContext } from '../shared/context.js';
import { deleteEverythingOfUser } from './repository.js';

/** The receipt names the subject only by hash: it proves an erasure happened without keeping who. */
export function subjectHash(tenantId: string, userId: string): string {
  return createHash('sha256').update(`${tenantId}\u001f${userId}`).digest('hex');
}

export interface ErasureResult {
  deleted: number;
  erasure_id: string;
}

/** POST /memories/delete: the listed memories of the user, or with no ids everything held about them. */
export async function deleteMemories(ctx: RequestContext, body: DeleteMemoriesBody): Promise<ErasureResult> {
  requireScope(ctx.principal, SCOPES.delete);
  const userId = resolveUserId(ctx.principal, body.user_id);
  return body.memory_ids ? forgetMemories(ctx, userId, body.memory_ids) : eraseUser(ctx, userId);
}

async function forgetMemories(ctx: RequestContext, userId: string, ids: string[]): Promise<ErasureResult> {
  const { tenantId } = ctx.principal;
  return withTenant(ctx.services.database, tenantId, async (tx) => {
    const deleted = await memoryRepo.deleteMemories(tx, tenantId, [...new Set(ids)], userId);
    const events = await memoryRepo.deleteEventsOfMemories(tx, tenantId, deleted);
    const erasureId = await memoryRepo.insertErasureReceipt(tx, {
      tenantId,
      subjectHash: subjectHash(tenantId, userId),
      scope: 'memories',
      counts: { memories: deleted.length, memory_events: events },
      createdAt: ctx.services.clock(),
    });
    return { deleted: deleted.length, erasure_id: erasureId };
  });
}

/** DELETE /memories/{id}: removes the memory and its history; 404 when the caller cannot see it. */
export async function deleteMemory(ctx: RequestContext, id: string): Promise<void> {
  requireScope(ctx.principal, SCOPES.delete);
  const { tenantId } = ctx.principal;
  await withTenant(ctx.services.database, tenantId, async (tx) => {
    const memory = await memoryRepo.findMemory(tx, tenantId, id, visibleUser(ctx.principal));
    if (!memory) throw notFound('memory');
    const deleted = await memoryRepo.deleteMemories(tx, tenantId, [id]);
    const events = await memoryRepo.deleteEventsOfMemories(tx, tenantId, deleted);
    await memoryRepo.insertErasureReceipt(tx, {
      tenantId,
      subjectHash: subjectHash(tenantId, memory.userId),
      scope: 'memories',
      counts: { memories: deleted.length, memory_events: events },
      createdAt: ctx.services.clock(),
    });
  });
}

/**
 * Forgets a user: memories, history, extraction jobs and their transcripts, in one transaction
 * holding the user's lock (so a job mid-apply either finishes before or finds its row gone), then
 * drops the user's queued jobs from the external queue.
 */
export async function eraseUser(ctx: RequestContext, userId: string): Promise<ErasureResult> {
  const { tenantId } = ctx.principal;
  const { counts, jobIds, erasureId } = await withTenant(ctx.services.database, tenantId, async (tx) => {
    await memoryRepo.lockUser(tx, tenantId, userId);
    const erased = await deleteEverythingOfUser(tx, tenantId, userId);
    const id = await memoryRepo.insertErasureReceipt(tx, {
      tenantId,
      subjectHash: subjectHash(tenantId, userId),
      scope: 'user',
      counts: { ...erased.counts },
      createdAt: ctx.services.clock(),
    });
    return { ...erased, erasureId: id };
  });
  if (jobIds.length > 0 && ctx.services.onUserErased) await ctx.services.onUserErased(tenantId, jobIds);
  return { deleted: counts.memories, erasure_id: erasureId };
}
