-- The text arm of a large scope (src/recall/repository.ts, findLargeScopeSignals) reads at most a
-- few hundred memories a lexeme, so it cannot count how many of the user's memories hold a common
-- one; BM25 then overrated such a word (its df read as the cap). These counts, kept by the
-- statements that write memories, give it the user's true df, N and mean length in one index probe.
-- A row per (tenant, user, lexeme): how many of the user's current memories (valid_to null) hold
-- the lexeme; the row with lexeme '' (never a lexeme) counts the current memories themselves and
-- sums their lengths in distinct lexemes. Rows that fall to 0 are deleted, so an erased user leaves
-- none. Expiry is not followed: the sweep deletes expired memories within the hour.
CREATE TABLE IF NOT EXISTS memory_lexeme_stats (
  tenant_id text NOT NULL,
  user_id text NOT NULL,
  lexeme text NOT NULL,
  documents bigint NOT NULL,
  lengths bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (tenant_id, user_id, lexeme)
);
--> statement-breakpoint
ALTER TABLE memory_lexeme_stats ENABLE ROW LEVEL SECURITY;
--> statement-breakpoint
ALTER TABLE memory_lexeme_stats FORCE ROW LEVEL SECURITY;
--> statement-breakpoint
DROP POLICY IF EXISTS tenant_isolation ON memory_lexeme_stats;
--> statement-breakpoint
CREATE POLICY tenant_isolation ON memory_lexeme_stats
  USING (tenant_id = current_setting('app.tenant_id', true))
  WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
--> statement-breakpoint
-- The application reads them; only the triggers below (as the owner) write them.
GRANT SELECT ON memory_lexeme_stats TO engram_app;
--> statement-breakpoint
-- One statement's change to the counts: +1 a lexeme for each current row it made, -1 for each it
-- removed (an update is both, so one that changes neither the words nor the validity nets to
-- nothing and writes nothing). Summed per key first and applied in key order, so that two writers
-- of one user lock the same rows in the same order; counts fallen to 0 are then deleted. As the
-- owner: the application role cannot write the table, and the owner is not held to row-level
-- security here. The transition tables are those of the trigger that fired (new_rows, old_rows).
CREATE OR REPLACE FUNCTION engram_lexeme_stats_apply() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO memory_lexeme_stats AS s (tenant_id, user_id, lexeme, documents, lengths)
    SELECT r.tenant_id, r.user_id, u.lexeme, count(*), CASE WHEN u.lexeme = '' THEN sum(length(r.search_text)) ELSE 0 END
    FROM new_rows r CROSS JOIN LATERAL unnest(array_append(tsvector_to_array(r.search_text), '')) AS u(lexeme)
    WHERE r.valid_to IS NULL
    GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (tenant_id, user_id, lexeme) DO UPDATE SET documents = s.documents + excluded.documents, lengths = s.lengths + excluded.lengths;
    RETURN NULL;
  END IF;
  IF TG_OP = 'UPDATE' THEN
    INSERT INTO memory_lexeme_stats AS s (tenant_id, user_id, lexeme, documents, lengths)
    SELECT d.tenant_id, d.user_id, d.lexeme, sum(d.sign), sum(CASE WHEN d.lexeme = '' THEN d.sign * d.length ELSE 0 END)
    FROM (
      SELECT r.tenant_id, r.user_id, r.search_text, 1 AS sign, length(r.search_text) AS length FROM new_rows r WHERE r.valid_to IS NULL
      UNION ALL
      SELECT r.tenant_id, r.user_id, r.search_text, -1, length(r.search_text) FROM old_rows r WHERE r.valid_to IS NULL
    ) x CROSS JOIN LATERAL (SELECT x.tenant_id, x.user_id, u.lexeme, x.sign, x.length FROM unnest(array_append(tsvector_to_array(x.search_text), '')) AS u(lexeme)) d
    GROUP BY 1, 2, 3 HAVING sum(d.sign) <> 0 OR sum(CASE WHEN d.lexeme = '' THEN d.sign * d.length ELSE 0 END) <> 0 ORDER BY 1, 2, 3
    ON CONFLICT (tenant_id, user_id, lexeme) DO UPDATE SET documents = s.documents + excluded.documents, lengths = s.lengths + excluded.lengths;
  ELSE
    INSERT INTO memory_lexeme_stats AS s (tenant_id, user_id, lexeme, documents, lengths)
    SELECT r.tenant_id, r.user_id, u.lexeme, -count(*), CASE WHEN u.lexeme = '' THEN -sum(length(r.search_text)) ELSE 0 END
    FROM old_rows r CROSS JOIN LATERAL unnest(array_append(tsvector_to_array(r.search_text), '')) AS u(lexeme)
    WHERE r.valid_to IS NULL
    GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (tenant_id, user_id, lexeme) DO UPDATE SET documents = s.documents + excluded.documents, lengths = s.lengths + excluded.lengths;
  END IF;
  DELETE FROM memory_lexeme_stats s
  USING (SELECT DISTINCT r.tenant_id, r.user_id, u.lexeme FROM old_rows r CROSS JOIN LATERAL unnest(array_append(tsvector_to_array(r.search_text), '')) AS u(lexeme)) o
  WHERE s.tenant_id = o.tenant_id AND s.user_id = o.user_id AND s.lexeme = o.lexeme AND s.documents <= 0;
  RETURN NULL;
END
$$;
--> statement-breakpoint
DROP TRIGGER IF EXISTS memories_lexeme_stats_insert ON memories;
--> statement-breakpoint
CREATE TRIGGER memories_lexeme_stats_insert AFTER INSERT ON memories REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION engram_lexeme_stats_apply();
--> statement-breakpoint
DROP TRIGGER IF EXISTS memories_lexeme_stats_update ON memories;
--> statement-breakpoint
CREATE TRIGGER memories_lexeme_stats_update AFTER UPDATE ON memories REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION engram_lexeme_stats_apply();
--> statement-breakpoint
DROP TRIGGER IF EXISTS memories_lexeme_stats_delete ON memories;
--> statement-breakpoint
CREATE TRIGGER memories_lexeme_stats_delete AFTER DELETE ON memories REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION engram_lexeme_stats_apply();
--> statement-breakpoint
-- The memories already stored (the counts start from them; a write waits for this migration).
INSERT INTO memory_lexeme_stats (tenant_id, user_id, lexeme, documents, lengths)
SELECT m.tenant_id, m.user_id, u.lexeme, count(*), CASE WHEN u.lexeme = '' THEN sum(length(m.search_text)) ELSE 0 END
FROM memories m CROSS JOIN LATERAL unnest(array_append(tsvector_to_array(m.search_text), '')) AS u(lexeme)
WHERE m.valid_to IS NULL
GROUP BY 1, 2, 3
ON CONFLICT (tenant_id, user_id, lexeme) DO NOTHING;
--> statement-breakpoint
-- The text arm of a large scope, as engram_recall_text_matches (0009, no longer called) but for sets
-- of lexemes: the memories holding every lexeme of each set (a tsquery of quoted lexemes joined by
-- &; a set may be one lexeme), the newest p_per_set a set. Newest: the cap keeps those recall's
-- recency weight ranks highest, where 0009's kept the first in the heap (the oldest). Recall asks
-- for single lexemes only when their count (above) is small enough to read whole, and for sets of
-- several, which a memory holding many of the query's words matches and the index's intersection
-- finds even when each word alone is too common to read.
CREATE OR REPLACE FUNCTION engram_recall_text_sets(p_user_id text, p_sets text[], p_per_set integer, p_as_of timestamptz, p_now timestamptz)
RETURNS TABLE (id uuid)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp SET enable_indexscan = off AS $$
  SELECT DISTINCT x.id
  FROM unnest(p_sets) AS q(terms)
  CROSS JOIN LATERAL (
    SELECT m.id FROM memories m
    WHERE m.tenant_id = current_setting('app.tenant_id', true) AND m.user_id = p_user_id
      AND m.search_text @@ q.terms::tsquery
      AND CASE WHEN p_as_of IS NULL THEN m.valid_to IS NULL AND (m.expires_at IS NULL OR m.expires_at > p_now)
               ELSE m.occurred_at <= p_as_of AND (m.valid_to IS NULL OR m.valid_to > p_as_of) AND (m.expires_at IS NULL OR m.expires_at > p_as_of) END
    ORDER BY m.occurred_at DESC, m.id DESC
    LIMIT p_per_set
  ) x
$$;
--> statement-breakpoint
GRANT EXECUTE ON FUNCTION engram_recall_text_sets(text, text[], integer, timestamptz, timestamptz) TO engram_app;
