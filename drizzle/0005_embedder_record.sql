-- Which embedder filled the vectors, so that a restart with another one (or another size) is
-- refused instead of silently mixing vector spaces, and `npm run db:reembed` can resume: while
-- target_* is set a re-embed is under way, and every row up to (resume_tenant, resume_id) in
-- key order already holds the target's vector. One row (id 1); it holds no tenant's data.
CREATE TABLE IF NOT EXISTS engram_embedder (
  id smallint PRIMARY KEY DEFAULT 1 CHECK (id = 1),
  kind text NOT NULL,
  model text NOT NULL,
  dimensions integer NOT NULL,
  target_kind text,
  target_model text,
  target_dimensions integer,
  resume_tenant text,
  resume_id uuid,
  updated_at timestamptz NOT NULL DEFAULT now()
);
--> statement-breakpoint
GRANT SELECT, INSERT, UPDATE ON engram_embedder TO engram_app;
--> statement-breakpoint
-- Start-up and the re-embed command look across tenants without seeing any tenant's data: the
-- owner may read memory rows (FORCE would otherwise hide them from it too), and the application
-- role only gets these functions, which return a vector size and keys, nothing else.
DROP POLICY IF EXISTS embedder_owner_scan ON memories;
--> statement-breakpoint
CREATE POLICY embedder_owner_scan ON memories FOR SELECT TO CURRENT_USER USING (true);
--> statement-breakpoint
CREATE OR REPLACE FUNCTION engram_stored_dimensions()
RETURNS integer
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
  SELECT vector_dims(m.embedding) FROM memories m LIMIT 1
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION engram_memory_keys(after_tenant text, after_id uuid, max_rows integer)
RETURNS TABLE (tenant_id text, id uuid)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
  SELECT m.tenant_id, m.id FROM memories m
  WHERE after_tenant IS NULL OR (m.tenant_id, m.id) > (after_tenant, after_id)
  ORDER BY m.tenant_id, m.id
  LIMIT max_rows
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION engram_memory_count(after_tenant text, after_id uuid)
RETURNS bigint
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
  SELECT count(*) FROM memories m
  WHERE after_tenant IS NULL OR (m.tenant_id, m.id) > (after_tenant, after_id)
$$;
--> statement-breakpoint
REVOKE ALL ON FUNCTION engram_stored_dimensions() FROM PUBLIC;
--> statement-breakpoint
REVOKE ALL ON FUNCTION engram_memory_keys(text, uuid, integer) FROM PUBLIC;
--> statement-breakpoint
REVOKE ALL ON FUNCTION engram_memory_count(text, uuid) FROM PUBLIC;
--> statement-breakpoint
GRANT EXECUTE ON FUNCTION engram_stored_dimensions() TO engram_app;
--> statement-breakpoint
GRANT EXECUTE ON FUNCTION engram_memory_keys(text, uuid, integer) TO engram_app;
--> statement-breakpoint
GRANT EXECUTE ON FUNCTION engram_memory_count(text, uuid) TO engram_app;
