-- The text arm of a large scope (src/recall/repository.ts, textArmStatement) scores the memories it
-- finds by BM25 before reading any in full, so it needs each one's length and words. They are taken
-- here, in the pass that finds the memory, rather than looked up again by key afterwards: that was
-- an index probe a memory, as long again as the search itself at 100,000 memories. Each memory's
-- words come cut down to the query's lexemes (p_lexemes), as the scan reads them. An as_of scope
-- leaves out what has expired by then or by now, as the recall's own conditions do: an expired
-- memory found here would take the place of a valid one among those read in full.
CREATE OR REPLACE FUNCTION engram_recall_text_hits(p_user_id text, p_sets text[], p_per_set integer, p_as_of timestamptz, p_now timestamptz, p_lexemes text[])
RETURNS TABLE (id uuid, dl integer, hit tsvector)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp SET enable_indexscan = off AS $$
  SELECT DISTINCT ON (x.id) x.id, length(x.search_text), ts_filter(setweight(x.search_text, 'A', p_lexemes), '{a}')
  FROM unnest(p_sets) AS q(terms)
  CROSS JOIN LATERAL (
    SELECT m.id, m.search_text FROM memory_search m
    WHERE m.tenant_id = current_setting('app.tenant_id', true) AND m.user_id = p_user_id
      AND m.search_text @@ q.terms::tsquery
      AND CASE WHEN p_as_of IS NULL THEN m.valid_to IS NULL AND (m.expires_at IS NULL OR m.expires_at > p_now)
               ELSE m.occurred_at <= p_as_of AND (m.valid_to IS NULL OR m.valid_to > p_as_of) AND (m.expires_at IS NULL OR m.expires_at > greatest(p_as_of, now())) END
    ORDER BY m.occurred_at DESC, m.id DESC
    LIMIT p_per_set
  ) x
  ORDER BY x.id
$$;
--> statement-breakpoint
-- Only the application calls it, within the tenant it has set: app.tenant_id is a setting any role
-- may change, so no other role may execute a function that reads as the owner.
REVOKE ALL ON FUNCTION engram_recall_text_hits(text, text[], integer, timestamptz, timestamptz, text[]) FROM PUBLIC;
--> statement-breakpoint
GRANT EXECUTE ON FUNCTION engram_recall_text_hits(text, text[], integer, timestamptz, timestamptz, text[]) TO engram_app;
--> statement-breakpoint
-- Its predecessor (0010, 0011) stays for instances of the previous release still serving while
-- this one rolls out; a later migration drops it. Meanwhile only the application may call it.
REVOKE ALL ON FUNCTION engram_recall_text_sets(text, text[], integer, timestamptz, timestamptz) FROM PUBLIC;
--> statement-breakpoint
-- Uncalled since 0010, and executable by any role: it read any tenant's memories for whoever set
-- app.tenant_id.
DROP FUNCTION IF EXISTS engram_recall_text_matches(text, text[], integer, timestamptz, timestamptz);
