-- Recall of a user with more memories than an exact scan serves in time (src/recall/repository.ts,
-- "large scope"): each memory's embedding quantized to one bit a dimension (pgvector's
-- binary_quantize, 1 where the value is positive), scanned exactly by Hamming distance, and the
-- best few hundred re-ranked by the full vectors. A stored generated column follows every write and
-- every re-embed without code, and costs an insert almost nothing, where an HNSW index cut bulk
-- inserts from ~1,500 to ~70 rows/s (`npm run bench -- scale`). `bit varying`: the column has no
-- fixed size, as `embedding` has none.
ALTER TABLE memories ADD COLUMN IF NOT EXISTS embedding_bits bit varying GENERATED ALWAYS AS (binary_quantize(embedding)) STORED;
--> statement-breakpoint
-- The user's bits and the scope's columns in one narrow index, so the scan is index-only and never
-- reads the wide rows (an inline 1,536-dimension vector fills most of a page).
CREATE INDEX IF NOT EXISTS memories_user_bits_idx ON memories (tenant_id, user_id) INCLUDE (embedding_bits, id, occurred_at, valid_to, expires_at);
--> statement-breakpoint
-- The text arm of a large scope: the current tenant's memories (app.tenant_id, as row-level
-- security reads it: never another tenant's) of one user holding each lexeme, at most p_per_term a
-- lexeme, through the search_text GIN index. As the owner because row-level security keeps a
-- non-leakproof operator such as @@ from being an index condition: under the application role the
-- GIN index cannot be used and every row of the tenant is read (seconds at 10,000 memories). Plain
-- index scans are off inside so the planner takes the GIN bitmap, not a walk of the user's rows.
CREATE OR REPLACE FUNCTION engram_recall_text_matches(p_user_id text, p_lexemes text[], p_per_term integer, p_as_of timestamptz, p_now timestamptz)
RETURNS TABLE (id uuid)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp SET enable_indexscan = off AS $$
  SELECT DISTINCT x.id
  FROM unnest(p_lexemes) AS l(lexeme)
  CROSS JOIN LATERAL (
    SELECT m.id FROM memories m
    WHERE m.tenant_id = current_setting('app.tenant_id', true) AND m.user_id = p_user_id
      AND m.search_text @@ (chr(39) || replace(replace(l.lexeme, chr(92), chr(92) || chr(92)), chr(39), chr(39) || chr(39)) || chr(39))::tsquery
      AND CASE WHEN p_as_of IS NULL THEN m.valid_to IS NULL AND (m.expires_at IS NULL OR m.expires_at > p_now)
               ELSE m.occurred_at <= p_as_of AND (m.valid_to IS NULL OR m.valid_to > p_as_of) AND (m.expires_at IS NULL OR m.expires_at > p_as_of) END
    LIMIT p_per_term
  ) x
$$;
--> statement-breakpoint
GRANT EXECUTE ON FUNCTION engram_recall_text_matches(text, text[], integer, timestamptz, timestamptz) TO engram_app;
