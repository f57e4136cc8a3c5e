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
