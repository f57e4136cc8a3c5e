-- The application role: every request runs under it (SET LOCAL ROLE, or it is the login role
-- itself). It owns nothing, is not superuser and cannot bypass row-level security.
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'engram_app') THEN
    CREATE ROLE engram_app NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE NOINHERIT;
  END IF;
  -- The migrating user must be able to SET ROLE engram_app for requests.
  IF current_user <> 'engram_app' AND NOT pg_has_role(current_user, 'engram_app', 'MEMBER') THEN
    EXECUTE format('GRANT engram_app TO %I', current_user);
  END IF;
END
$$;
--> statement-breakpoint
GRANT USAGE ON SCHEMA public TO engram_app;
--> statement-breakpoint
GRANT SELECT, INSERT, UPDATE, DELETE ON memories, memory_events, extraction_jobs TO engram_app;
--> statement-breakpoint
-- Erasure receipts are evidence: the application may write and read them, never alter them.
GRANT SELECT, INSERT ON erasures TO engram_app;
--> statement-breakpoint
ALTER TABLE memories ENABLE ROW LEVEL SECURITY;
--> statement-breakpoint
ALTER TABLE memories FORCE ROW LEVEL SECURITY;
--> statement-breakpoint
ALTER TABLE memory_events ENABLE ROW LEVEL SECURITY;
--> statement-breakpoint
ALTER TABLE memory_events FORCE ROW LEVEL SECURITY;
--> statement-breakpoint
ALTER TABLE extraction_jobs ENABLE ROW LEVEL SECURITY;
--> statement-breakpoint
ALTER TABLE extraction_jobs FORCE ROW LEVEL SECURITY;
--> statement-breakpoint
ALTER TABLE erasures ENABLE ROW LEVEL SECURITY;
--> statement-breakpoint
ALTER TABLE erasures FORCE ROW LEVEL SECURITY;
--> statement-breakpoint
-- current_setting(…, true) is NULL (or '' after a transaction-local value ends) when no tenant
-- was set, so a transaction that never set one matches no row.
CREATE POLICY tenant_isolation ON memories
  USING (tenant_id = current_setting('app.tenant_id', true))
  WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
--> statement-breakpoint
CREATE POLICY tenant_isolation ON memory_events
  USING (tenant_id = current_setting('app.tenant_id', true))
  WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
--> statement-breakpoint
CREATE POLICY tenant_isolation ON extraction_jobs
  USING (tenant_id = current_setting('app.tenant_id', true))
  WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
--> statement-breakpoint
CREATE POLICY tenant_isolation ON erasures
  USING (tenant_id = current_setting('app.tenant_id', true))
  WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
--> statement-breakpoint
-- The queue needs to find due jobs across tenants (to re-enqueue or claim them) without seeing
-- any tenant's data. The owner may read job rows (FORCE would otherwise hide them from it too);
-- the application role only gets this function, which returns keys and nothing else.
CREATE POLICY queue_owner_scan ON extraction_jobs FOR SELECT TO CURRENT_USER USING (true);
--> statement-breakpoint
CREATE FUNCTION engram_due_jobs(stale_before timestamptz, max_rows integer)
RETURNS TABLE (tenant_id text, id uuid)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
  SELECT j.tenant_id, j.id
  FROM extraction_jobs j
  WHERE (j.status = 'queued' AND j.run_after <= now() AND j.updated_at <= stale_before)
     OR (j.status = 'running' AND j.locked_until IS NOT NULL AND j.locked_until < now())
  ORDER BY j.run_after, j.id
  LIMIT max_rows
$$;
--> statement-breakpoint
REVOKE ALL ON FUNCTION engram_due_jobs(timestamptz, integer) FROM PUBLIC;
--> statement-breakpoint
GRANT EXECUTE ON FUNCTION engram_due_jobs(timestamptz, integer) TO engram_app;
