-- Tenant settings: one row per tenant (extraction guidance, PII mode, retention), isolated by
-- row-level security like every tenant table.
CREATE TABLE IF NOT EXISTS "tenant_settings" (
  "tenant_id" text PRIMARY KEY NOT NULL,
  "settings" jsonb NOT NULL,
  "updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
GRANT SELECT, INSERT, UPDATE, DELETE ON tenant_settings TO engram_app;
--> statement-breakpoint
ALTER TABLE tenant_settings ENABLE ROW LEVEL SECURITY;
--> statement-breakpoint
ALTER TABLE tenant_settings FORCE ROW LEVEL SECURITY;
--> statement-breakpoint
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_policies WHERE tablename = 'tenant_settings' AND policyname = 'tenant_isolation') THEN
    CREATE POLICY tenant_isolation ON tenant_settings
      USING (tenant_id = current_setting('app.tenant_id', true))
      WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
  END IF;
END
$$;
--> statement-breakpoint
-- What the expiry sweep looks for, without scanning memories that never expire.
CREATE INDEX IF NOT EXISTS "memories_expires_idx" ON "memories" USING btree ("expires_at") WHERE expires_at IS NOT NULL;
--> statement-breakpoint
-- The expiry sweep runs across tenants through the function below, as the owner (like the
-- transcript sweep of 0004); FORCE row-level security needs the owner allowed these reads and deletes.
-- Never for the application role itself (a deployment migrating as it): that would lift isolation.
DO $$
BEGIN
  IF current_user = 'engram_app' THEN
    RETURN;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_policies WHERE tablename = 'memories' AND policyname = 'retention_owner_sweep') THEN
    CREATE POLICY retention_owner_sweep ON memories FOR ALL TO CURRENT_USER USING (true) WITH CHECK (true);
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_policies WHERE tablename = 'memory_events' AND policyname = 'retention_owner_sweep') THEN
    CREATE POLICY retention_owner_sweep ON memory_events FOR ALL TO CURRENT_USER USING (true) WITH CHECK (true);
  END IF;
END
$$;
--> statement-breakpoint
-- Erases at most max_rows memories that expired before expired_before, with their history;
-- rows another sweep holds are skipped. Answers the number of memories erased.
CREATE OR REPLACE FUNCTION engram_erase_expired_memories(expired_before timestamptz, max_rows integer)
RETURNS integer
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp AS $$
  WITH batch AS (
    SELECT m.tenant_id, m.id FROM memories m
    WHERE m.expires_at IS NOT NULL AND m.expires_at <= expired_before
    ORDER BY m.expires_at
    LIMIT max_rows
    FOR UPDATE SKIP LOCKED
  ), history AS (
    DELETE FROM memory_events e USING batch b WHERE e.tenant_id = b.tenant_id AND e.memory_id = b.id RETURNING 1
  ), done AS (
    DELETE FROM memories m USING batch b WHERE m.tenant_id = b.tenant_id AND m.id = b.id RETURNING 1
  )
  -- Every data-modifying WITH runs once whether read or not: the history goes with its memories.
  SELECT count(*)::integer FROM done
$$;
--> statement-breakpoint
REVOKE ALL ON FUNCTION engram_erase_expired_memories(timestamptz, integer) FROM PUBLIC;
--> statement-breakpoint
GRANT EXECUTE ON FUNCTION engram_erase_expired_memories(timestamptz, integer) TO engram_app;
