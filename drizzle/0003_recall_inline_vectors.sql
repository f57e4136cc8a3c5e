-- Keep a row's embedding inline unless the row outgrows a page. With the default target (about
-- 2 kB) every vector of more than ~500 dimensions goes to the TOAST table, and recall's exact
-- per-user scan then pays a TOAST index lookup and chunk reassembly per row: measured at ~600
-- memories per user with 1536 dimensions, 3.2-5.6 ms of the scan, against 0.8-1.8 ms inline.
-- pgvector stores vectors EXTERNAL (never compressed), so a vector that still does not fit
-- (over ~2,000 dimensions) is moved out of line as before. Rows written earlier keep their layout
-- until they are rewritten (an UPDATE, or VACUUM FULL).
ALTER TABLE memories SET (toast_tuple_target = 8160);
