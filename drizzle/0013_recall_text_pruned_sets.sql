-- The text arm of a large scope (src/recall/repository.ts, textArmStatement) reads the newest few
-- hundred memories holding each set of the query's terms: each term alone (the rarer ones), all of
-- them, all but one, all but two. A set holding a smaller set whose memories were all read (fewer
-- than p_per_set) can add none: each of its memories holds the smaller set too. Sets are therefore
-- read smallest first, and such a set is skipped. The answer is the same, and the sets skipped are
-- the costly ones: three or more common words each, whose GIN posting lists are walked in full.
-- Each set's rows come back as (id, search_text), a memory once per set holding it; the caller
-- keeps one of each and cuts its words to the query's.
--
-- p_set_terms[i] lists the terms of p_sets[i] (a tsquery) separated by chr(2), so that one set can
-- be told to hold another (a set of no terms is ignored: it would be held by every other). The
-- per-set read is planned once per session, generically, as a bitmap scan of the GIN index whatever
-- the term, as the previous function's lateral read was; sequential scans are ruled out, as a plan
-- made while the table was small would otherwise keep scanning it whole after it has grown. STABLE:
-- every set is read in one snapshot, which the skipping relies on.
CREATE OR REPLACE FUNCTION engram_recall_text_rows(p_user_id text, p_sets text[], p_set_terms text[], p_per_set integer, p_as_of timestamptz, p_now timestamptz)
RETURNS TABLE (id uuid, search_text tsvector)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_temp SET enable_indexscan = off SET enable_seqscan = off SET plan_cache_mode = force_generic_plan AS $$
DECLARE
  term_set record;
  read_whole text[] := '{}';
  found_rows bigint;
BEGIN
  FOR term_set IN
    SELECT s.query::tsquery AS query, string_to_array(s.terms, chr(2)) AS terms
    FROM unnest(p_sets, p_set_terms) AS s(query, terms)
    WHERE s.terms <> ''
    ORDER BY cardinality(string_to_array(s.terms, chr(2))), s.terms
  LOOP
    CONTINUE WHEN EXISTS (SELECT 1 FROM unnest(read_whole) AS w(terms) WHERE string_to_array(w.terms, chr(2)) <@ term_set.terms);
    RETURN QUERY
      SELECT m.id, m.search_text FROM memory_search m
      WHERE m.tenant_id = current_setting('app.tenant_id', true) AND m.user_id = p_user_id
        AND m.search_text @@ term_set.query
        AND CASE WHEN p_as_of IS NULL THEN m.valid_to IS NULL AND (m.expires_at IS NULL OR m.expires_at > p_now)
                 ELSE m.occurred_at <= p_as_of AND (m.valid_to IS NULL OR m.valid_to > p_as_of) AND (m.expires_at IS NULL OR m.expires_at > greatest(p_as_of, now())) END
      ORDER BY m.occurred_at DESC, m.id DESC
      LIMIT p_per_set;
    GET DIAGNOSTICS found_rows = ROW_COUNT;
    IF found_rows < p_per_set THEN
      read_whole := read_whole || array_to_string(term_set.terms, chr(2));
    END IF;
  END LOOP;
END
$$;
--> statement-breakpoint
-- Only the application calls it, within the tenant it has set (see 0012).
REVOKE ALL ON FUNCTION engram_recall_text_rows(text, text[], text[], integer, timestamptz, timestamptz) FROM PUBLIC;
--> statement-breakpoint
GRANT EXECUTE ON FUNCTION engram_recall_text_rows(text, text[], text[], integer, timestamptz, timestamptz) TO engram_app;
--> statement-breakpoint
-- 0012's function stays for instances of the previous release still serving while this one rolls
-- out; the one before it (0010) has had a release to go, and goes.
DROP FUNCTION IF EXISTS engram_recall_text_sets(text, text[], integer, timestamptz, timestamptz);
