#!/bin/sh
# Runs once, when the compose file's PostgreSQL initialises an empty data directory (as the
# bootstrap superuser, which nothing else uses). It creates the production layout:
#   engram_owner  owns the database and, through the migrations, every table; used only by the
#                 one-shot `migrate` service. Not a superuser.
#   engram_app    the application's login role: not a superuser, no BYPASSRLS, owns nothing, so
#                 row-level security holds for every statement even if SQL injection were found.
# The migrations would create engram_app themselves (NOLOGIN); created here first, it can log in.
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
  -v owner_password="$ENGRAM_OWNER_PASSWORD" -v app_password="$ENGRAM_APP_PASSWORD" -v db="$POSTGRES_DB" <<'SQL'
CREATE ROLE engram_owner LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEROLE NOCREATEDB PASSWORD :'owner_password';
CREATE ROLE engram_app LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEROLE NOCREATEDB NOINHERIT PASSWORD :'app_password';
-- The migrations check that their user may SET ROLE engram_app; only a superuser may grant it.
GRANT engram_app TO engram_owner;
ALTER DATABASE :"db" OWNER TO engram_owner;
-- pgvector needs a superuser to create; the migration's CREATE EXTENSION IF NOT EXISTS then passes.
CREATE EXTENSION IF NOT EXISTS vector;
SQL
