import { and, eq } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { extractionJobs, memories, memoryEvents } from '../db/schema.js';

export interface UserErasureCounts {
  memories: number;
  memory_events: number;
  extraction_jobs: number;
}

/**
 * Deletes every row that holds the user's data, by predicate (never by a page of ids), so a
 * user with a million memories is erased as completely as one with three.
 */
export async function deleteEverythingOfUser(tx: Db, tenantId: string, userId: string): Promise<{ counts: UserErasureCounts; jobIds: string[] }> {
  const deletedMemories = await tx
    .delete(memories)
    .where(and(eq(memories.tenantId, tenantId), eq(memories.userId, userId)))
    .returning({ id: memories.id });
  const deletedEvents = await tx
    .delete(memoryEvents)
    .where(and(eq(memoryEvents.tenantId, tenantId), eq(memoryEvents.userId, userId)))
    .returning({ id: memoryEvents.id });
  const deletedJobs = await tx
    .delete(extractionJobs)
    .where(and(eq(extractionJobs.tenantId, tenantId), eq(extractionJobs.userId, userId)))
    .returning({ id: extractionJobs.id });
  return {
    counts: { memories: deletedMemories.length, memory_events: deletedEvents.length, extraction_jobs: deletedJobs.length },
    jobIds: deletedJobs.map((j) => j.id),
  };
}

/**
 * Replaces `actor` on the tenant's remaining events (other users' history) that name `actor`,
 * e.g. an erased user who acted on them with memories:act_as: the events stay, the id goes.
 */
export async function pseudonymiseActor(tx: Db, tenantId: string, actor: string, pseudonym: string): Promise<number> {
  const updated = await tx
    .update(memoryEvents)
    .set({ actor: pseudonym })
    .where(and(eq(memoryEvents.tenantId, tenantId), eq(memoryEvents.actor, actor)))
    .returning({ id: memoryEvents.id });
  return updated.length;
}
