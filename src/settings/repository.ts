import { eq } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { tenantSettings } from '../db/schema.js';

/** The stored settings document of the transaction's tenant, or undefined when it never set any. */
export async function findSettings(tx: Db, tenantId: string): Promise<unknown> {
  const [row] = await tx.select({ settings: tenantSettings.settings }).from(tenantSettings).where(eq(tenantSettings.tenantId, tenantId)).limit(1);
  return row?.settings;
}

export async function saveSettings(tx: Db, tenantId: string, settings: unknown, now: Date): Promise<void> {
  await tx
    .insert(tenantSettings)
    .values({ tenantId, settings, updatedAt: now })
    .onConflictDoUpdate({ target: tenantSettings.tenantId, set: { settings, updatedAt: now } });
}
