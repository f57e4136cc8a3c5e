-- pgvector must exist before any table uses the vector type. Creating it needs a superuser (or a
-- trusted-extension setup); where the operator pre-installed it this is a no-op.
CREATE EXTENSION IF NOT EXISTS vector;
