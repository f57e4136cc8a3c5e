-- Idempotency keys belong to one user of a tenant: with a tenant-wide key one user could squat
-- another's key (and be answered with the other's job id).
DROP INDEX IF EXISTS "extraction_jobs_idempotency_uq";
--> statement-breakpoint
CREATE UNIQUE INDEX IF NOT EXISTS "extraction_jobs_idempotency_user_uq" ON "extraction_jobs" USING btree ("tenant_id","user_id","idempotency_key");
--> statement-breakpoint
-- What the retention sweeps look for, without scanning every finished job.
CREATE INDEX IF NOT EXISTS "extraction_jobs_transcript_kept_idx" ON "extraction_jobs" USING btree ("finished_at") WHERE payload IS NOT NULL AND status IN ('succeeded', 'failed');
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "extraction_jobs_idempotency_kept_idx" ON "extraction_jobs" USING btree ("created_at") WHERE idempotency_key IS NOT NULL AND status IN ('succeeded', 'failed');
--> statement-breakpoint
-- The sweeps run across tenants through the functions below (as the owner, like
-- engram_due_jobs); FORCE row-level security needs the owner to be allowed these updates too.
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_policies WHERE tablename = 'extraction_jobs' AND policyname = 'queue_owner_maintain') THEN
    CREATE POLICY queue_owner_maintain ON extraction_jobs FOR UPDATE TO CURRENT_USER USING (true) WITH CHECK (true);
  END IF;
END
$$;
--> statement-breakpoint
-- Drops the transcripts of at most max_rows finished jobs; rows another sweep holds are skipped.
CREATE OR REPLACE FUNCTION engram_purge_transcripts(finished_before timestamptz, max_rows integer)
RETURNS integer
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp AS $$
  WITH batch AS (
    SELECT j.tenant_id, j.id FROM extraction_jobs j
    WHERE j.payload IS NOT NULL AND j.status IN ('succeeded', 'failed') AND j.finished_at < finished_before
    ORDER BY j.finished_at
    LIMIT max_rows
    FOR UPDATE SKIP LOCKED
  ), done AS (
    UPDATE extraction_jobs j SET payload = NULL FROM batch b WHERE j.tenant_id = b.tenant_id AND j.id = b.id RETURNING 1
  )
  SELECT count(*)::integer FROM done
$$;
--> statement-breakpoint
-- Forgets the idempotency keys of at most max_rows finished jobs accepted before created_before.
CREATE OR REPLACE FUNCTION engram_expire_idempotency_keys(created_before timestamptz, max_rows integer)
RETURNS integer
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp AS $$
  WITH batch AS (
    SELECT j.tenant_id, j.id FROM extraction_jobs j
    WHERE j.idempotency_key IS NOT NULL AND j.status IN ('succeeded', 'failed') AND j.created_at < created_before
    ORDER BY j.created_at
    LIMIT max_rows
    FOR UPDATE SKIP LOCKED
  ), done AS (
    UPDATE extraction_jobs j SET idempotency_key = NULL FROM batch b WHERE j.tenant_id = b.tenant_id AND j.id = b.id RETURNING 1
  )
  SELECT count(*)::integer FROM done
$$;
--> statement-breakpoint
-- Job counts by state across tenants, for metrics: numbers only, never a row.
CREATE OR REPLACE FUNCTION engram_job_counts()
RETURNS TABLE (status text, n bigint)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
  SELECT j.status, count(*) FROM extraction_jobs j WHERE j.status IN ('queued', 'running', 'failed') GROUP BY j.status
$$;
--> statement-breakpoint
REVOKE ALL ON FUNCTION engram_purge_transcripts(timestamptz, integer) FROM PUBLIC;
--> statement-breakpoint
REVOKE ALL ON FUNCTION engram_expire_idempotency_keys(timestamptz, integer) FROM PUBLIC;
--> statement-breakpoint
REVOKE ALL ON FUNCTION engram_job_counts() FROM PUBLIC;
--> statement-breakpoint
GRANT EXECUTE ON FUNCTION engram_purge_transcripts(timestamptz, integer) TO engram_app;
--> statement-breakpoint
GRANT EXECUTE ON FUNCTION engram_expire_idempotency_keys(timestamptz, integer) TO engram_app;
--> statement-breakpoint
GRANT EXECUTE ON FUNCTION engram_job_counts() TO engram_app;
