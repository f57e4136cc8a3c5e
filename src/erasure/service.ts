import { createHash, createHmac, randomUUID } from 'node:crypto';
import { SCOPES, requireScope, resolveUserId, visibleUser } from '../auth/principal.js';
import { withTenant } from '../db/tenant.js';
import * as memoryRepo from '../memories/repository.js';
import type { DeleteMemoriesBody } from '../memories/schemas.js';
import { notFound } from '../shared/errors.js';
import type { RequestContext } from '../shared/context.js';
import { userActor } from '../memories/service.js';
import { deleteEverythingOfUser, pseudonymiseActor } from './repository.js';
import { scrubUserEvents } from '../webhooks/repository.js';

/**
 * The receipt names the subject only by a keyed hash: it proves an erasure happened without
 * keeping who, and only the server key's holder can check a guess. Keyed over the sha256 that
 * receipts held before, so an operator can re-key those rows in place (HMAC of the column).
 */
export function subjectHash(key: Buffer, tenantId: string, userId: string): string {
  return createHmac('sha256', key).update(createHash('sha256').update(`${tenantId}\u001f${userId}`).digest('hex')).digest('hex');
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
      subjectHash: subjectHash(ctx.services.keys.receipt, tenantId, userId),
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
      subjectHash: subjectHash(ctx.services.keys.receipt, tenantId, memory.userId),
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
    // Webhook events about the user keep ids only; user.erased (from the receipt) stands for the rest.
    await scrubUserEvents(tx, tenantId, userId);
    // What the user did to others' memories stays in their history, under a name for the erasure.
    const id = randomUUID();
    const pseudonymised = await pseudonymiseActor(tx, tenantId, userActor(userId), `erased:${id}`);
    await memoryRepo.insertErasureReceipt(tx, {
      id,
      tenantId,
      subjectHash: subjectHash(ctx.services.keys.receipt, tenantId, userId),
      scope: 'user',
      counts: { ...erased.counts, memory_events_pseudonymised: pseudonymised },
      createdAt: ctx.services.clock(),
    });
    return { ...erased, erasureId: id };
  });
  if (jobIds.length > 0 && ctx.services.onUserErased) await ctx.services.onUserErased(tenantId, jobIds);
  return { deleted: counts.memories, erasure_id: erasureId };
}
