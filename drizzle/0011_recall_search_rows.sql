-- The text arm of a large scope (src/recall/repository.ts, findLargeScopeSignals) reads, through
-- the GIN index, every memory of a user holding a set of the query's words, to keep the newest few
-- hundred. On `memories` each such read is a wide row (an inline 1,536-dimension vector fills most
-- of a page), so a common word cost thousands of page reads, most from outside shared buffers at
-- 100,000 memories. This narrow copy of the columns that read needs (tens of rows a page) takes
-- over the GIN index; triggers on `memories` keep it, as they keep memory_lexeme_stats (0010).
CREATE TABLE IF NOT EXISTS memory_search (
  tenant_id text NOT NULL,
  id uuid NOT NULL,
  user_id text NOT NULL,
  occurred_at timestamptz NOT NULL,
  valid_to timestamptz,
  expires_at timestamptz,
  search_text tsvector NOT NULL,
  PRIMARY KEY (tenant_id, id)
);
--> statement-breakpoint
ALTER TABLE memory_search ENABLE ROW LEVEL SECURITY;
--> statement-breakpoint
ALTER TABLE memory_search FORCE ROW LEVEL SECURITY;
--> statement-breakpoint
DROP POLICY IF EXISTS tenant_isolation ON memory_search;
--> statement-breakpoint
CREATE POLICY tenant_isolation ON memory_search
  USING (tenant_id = current_setting('app.tenant_id', true))
  WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
--> statement-breakpoint
-- The application reads them; only the triggers below (as the owner) write them.
GRANT SELECT ON memory_search TO engram_app;
--> statement-breakpoint
-- The triggers write as the owner, and not always within a tenant: the expiry sweep (0007) and an
-- operator's own SQL write across tenants. Under FORCE row-level security an owner that is no
-- superuser (the production layout) is held to tenant_isolation too: its writes to these derived
-- tables would fail the check (memory_lexeme_stats, since 0010) or match nothing (the copies), and
-- the text arm's @@ could not use the GIN index. So the owner is let through, as on memories in 0007;
-- never the application role itself (a deployment migrating as it): that would lift isolation.
DO $$
BEGIN
  IF current_user = 'engram_app' THEN
    RETURN;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_policies WHERE tablename = 'memory_search' AND policyname = 'derived_owner_maintain') THEN
    CREATE POLICY derived_owner_maintain ON memory_search FOR ALL TO CURRENT_USER USING (true) WITH CHECK (true);
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_policies WHERE tablename = 'memory_lexeme_stats' AND policyname = 'derived_owner_maintain') THEN
    CREATE POLICY derived_owner_maintain ON memory_lexeme_stats FOR ALL TO CURRENT_USER USING (true) WITH CHECK (true);
  END IF;
END
$$;
--> statement-breakpoint
-- One statement's rows copied, changed (only where a copied column changed: a re-embed writes
-- nothing here) or removed; erasure's deletes remove the copies with the memories. An update is
-- an upsert, and drops the copy of a key it moved away from, so a copy missing for any reason is
-- made again by the next write of its memory.
CREATE OR REPLACE FUNCTION engram_memory_search_apply() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO memory_search (tenant_id, id, user_id, occurred_at, valid_to, expires_at, search_text)
    SELECT r.tenant_id, r.id, r.user_id, r.occurred_at, r.valid_to, r.expires_at, r.search_text FROM new_rows r;
  ELSIF TG_OP = 'UPDATE' THEN
    DELETE FROM memory_search s USING old_rows o
    WHERE s.tenant_id = o.tenant_id AND s.id = o.id
      AND NOT EXISTS (SELECT 1 FROM new_rows r WHERE r.tenant_id = o.tenant_id AND r.id = o.id);
    INSERT INTO memory_search AS s (tenant_id, id, user_id, occurred_at, valid_to, expires_at, search_text)
    SELECT r.tenant_id, r.id, r.user_id, r.occurred_at, r.valid_to, r.expires_at, r.search_text FROM new_rows r
    ON CONFLICT (tenant_id, id) DO UPDATE
    SET user_id = excluded.user_id, occurred_at = excluded.occurred_at, valid_to = excluded.valid_to, expires_at = excluded.expires_at, search_text = excluded.search_text
    WHERE (s.user_id, s.occurred_at, s.valid_to, s.expires_at, s.search_text)
      IS DISTINCT FROM (excluded.user_id, excluded.occurred_at, excluded.valid_to, excluded.expires_at, excluded.search_text);
  ELSE
    DELETE FROM memory_search s USING old_rows r WHERE s.tenant_id = r.tenant_id AND s.id = r.id;
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
-- Fired by the triggers only: no role may attach these owner's functions to a table of its own.
REVOKE ALL ON FUNCTION engram_memory_search_apply() FROM PUBLIC;
--> statement-breakpoint
REVOKE ALL ON FUNCTION engram_lexeme_stats_apply() FROM PUBLIC;
--> statement-breakpoint
DROP TRIGGER IF EXISTS memories_search_insert ON memories;
--> statement-breakpoint
CREATE TRIGGER memories_search_insert AFTER INSERT ON memories REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION engram_memory_search_apply();
--> statement-breakpoint
DROP TRIGGER IF EXISTS memories_search_update ON memories;
--> statement-breakpoint
CREATE TRIGGER memories_search_update AFTER UPDATE ON memories REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION engram_memory_search_apply();
--> statement-breakpoint
DROP TRIGGER IF EXISTS memories_search_delete ON memories;
--> statement-breakpoint
CREATE TRIGGER memories_search_delete AFTER DELETE ON memories REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION engram_memory_search_apply();
--> statement-breakpoint
-- The memories already stored (a write waits for this migration).
INSERT INTO memory_search (tenant_id, id, user_id, occurred_at, valid_to, expires_at, search_text)
SELECT tenant_id, id, user_id, occurred_at, valid_to, expires_at, search_text FROM memories
ON CONFLICT (tenant_id, id) DO NOTHING;
--> statement-breakpoint
-- Made once the copies are in: built in one pass, rather than each copy through the pending list.
CREATE INDEX IF NOT EXISTS memory_search_text_idx ON memory_search USING gin (search_text);
--> statement-breakpoint
-- Nothing else reads memories' own GIN index; keeping it would only slow every write.
DROP INDEX IF EXISTS memories_search_text_idx;
--> statement-breakpoint
-- As in 0010, the newest p_per_set memories holding every term of each set, now from the copies.
CREATE OR REPLACE FUNCTION engram_recall_text_sets(p_user_id text, p_sets text[], p_per_set integer, p_as_of timestamptz, p_now timestamptz)
RETURNS TABLE (id uuid)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp SET enable_indexscan = off AS $$
  SELECT DISTINCT x.id
  FROM unnest(p_sets) AS q(terms)
  CROSS JOIN LATERAL (
    SELECT m.id FROM memory_search m
    WHERE m.tenant_id = current_setting('app.tenant_id', true) AND m.user_id = p_user_id
      AND m.search_text @@ q.terms::tsquery
      AND CASE WHEN p_as_of IS NULL THEN m.valid_to IS NULL AND (m.expires_at IS NULL OR m.expires_at > p_now)
               ELSE m.occurred_at <= p_as_of AND (m.valid_to IS NULL OR m.valid_to > p_as_of) AND (m.expires_at IS NULL OR m.expires_at > p_as_of) END
    ORDER BY m.occurred_at DESC, m.id DESC
    LIMIT p_per_set
  ) x
$$;
