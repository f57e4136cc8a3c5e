#!/usr/bin/env bash
# Brings up what the test suite needs on this kind of machine, idempotently and fast when all is
# present: PostgreSQL 15 with pgvector, Redis 7, and the test database. Safe to run repeatedly.
set -euo pipefail

PG_MAJOR="${PG_MAJOR:-15}"
PG_HOST="${PGHOST_TEST:-127.0.0.1}"
PG_PORT="${PGPORT_TEST:-5432}"
REDIS_PORT="${REDIS_PORT_TEST:-6379}"
TEST_DB="${TEST_DATABASE_URL:+${TEST_DATABASE_URL##*/}}"; TEST_DB="${TEST_DB:-engram_test}"
PG_CONFIG="/usr/lib/postgresql/${PG_MAJOR}/bin/pg_config"
CACHE_DIR="${ENGRAM_BUILD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/engram-build}"

log() { printf '[test-services] %s\n' "$*"; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
apt_updated=""
apt_install() {
  if [ -z "$apt_updated" ]; then as_root apt-get update -qq; apt_updated=1; fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
pg_ready() { pg_isready -q -h "$PG_HOST" -p "$PG_PORT" 2>/dev/null; }
psql_su() { psql -X -q -v ON_ERROR_STOP=1 -h "$PG_HOST" -p "$PG_PORT" -U postgres "$@"; }

# --- PostgreSQL -------------------------------------------------------------------------------
if ! command -v pg_isready >/dev/null 2>&1 || [ ! -x "$PG_CONFIG" ] && [ ! -d "/usr/lib/postgresql/${PG_MAJOR}/bin" ]; then
  log "installing PostgreSQL ${PG_MAJOR} from Debian"
  apt_install "postgresql-${PG_MAJOR}" postgresql-client
fi
if ! pg_ready; then
  log "starting PostgreSQL ${PG_MAJOR}"
  if ! pg_lsclusters -h 2>/dev/null | awk '{print $1" "$2}' | grep -q "^${PG_MAJOR} main$"; then
    as_root pg_createcluster "${PG_MAJOR}" main --port "$PG_PORT" -- --auth-host=trust --auth-local=trust >/dev/null
  fi
  as_root pg_ctlcluster --skip-systemctl-redirect "${PG_MAJOR}" main start || true
  for _ in $(seq 1 50); do pg_ready && break; sleep 0.2; done
  pg_ready || { log "PostgreSQL did not come up on ${PG_HOST}:${PG_PORT}"; exit 1; }
fi

# --- pgvector ---------------------------------------------------------------------------------
# Debian 12 packages no pgvector for PostgreSQL 15, so build Debian's own source package (from the
# next suite) against bookworm's server headers. A private apt state keeps /etc/apt untouched.
ext_dir="$("$PG_CONFIG" --sharedir 2>/dev/null || echo "/usr/share/postgresql/${PG_MAJOR}")/extension"
if [ ! -f "$ext_dir/vector.control" ]; then
  log "building pgvector for PostgreSQL ${PG_MAJOR} (one-time, about 30 s)"
  command -v make >/dev/null && command -v gcc >/dev/null || apt_install build-essential
  [ -x "$PG_CONFIG" ] || apt_install "postgresql-server-dev-${PG_MAJOR}"
  dpkg -s "postgresql-server-dev-${PG_MAJOR}" >/dev/null 2>&1 || apt_install "postgresql-server-dev-${PG_MAJOR}"
  command -v dpkg-source >/dev/null || apt_install dpkg-dev
  mkdir -p "$CACHE_DIR/apt/lists/partial" "$CACHE_DIR/apt/sources.list.d" "$CACHE_DIR/src"
  # The Debian mirror this machine already uses (deb822 "URIs:" or one-line "deb URL bookworm").
  mirror="$( { grep -hE '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}';
               grep -hE '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | awk '$3 ~ /bookworm/ {print $2}'; } \
             | grep -v -e security -e nodesource | grep -i debian | head -n1 || true)"
  [ -n "$mirror" ] || { log "no Debian mirror found in /etc/apt"; exit 1; }
  printf 'Types: deb-src\nURIs: %s\nSuites: trixie\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    "$mirror" > "$CACHE_DIR/apt/sources.list.d/trixie-src.sources"
  apt_opts=(-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$CACHE_DIR/apt/sources.list.d"
            -o "Dir::State::Lists=$CACHE_DIR/apt/lists" -o "Dir::Cache=$CACHE_DIR/apt/cache" -o "APT::Sandbox::User=root")
  apt-get "${apt_opts[@]}" update -qq
  (cd "$CACHE_DIR/src" && rm -rf pgvector-* && apt-get "${apt_opts[@]}" source -qq pgvector >/dev/null 2>&1)
  src="$(find "$CACHE_DIR/src" -maxdepth 1 -type d -name 'pgvector-*' | head -n1)"
  [ -n "$src" ] || { log "could not fetch the pgvector source package"; exit 1; }
  make -s -C "$src" PG_CONFIG="$PG_CONFIG" OPTFLAGS="" >/dev/null
  as_root make -s -C "$src" PG_CONFIG="$PG_CONFIG" install >/dev/null
  log "pgvector installed"
fi

# --- Redis ------------------------------------------------------------------------------------
if ! redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping >/dev/null 2>&1; then
  command -v redis-server >/dev/null || apt_install redis-server
  log "starting Redis on ${REDIS_PORT}"
  mkdir -p /tmp/engram-redis
  redis-server --daemonize yes --bind 127.0.0.1 --port "$REDIS_PORT" --save "" --appendonly no \
    --dir /tmp/engram-redis --logfile /tmp/engram-redis/redis.log
  for _ in $(seq 1 50); do redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
fi

# --- Chromium ---------------------------------------------------------------------------------
# test/integration/docs-browser.test.ts drives /docs in Debian's headless Chromium (never a
# browser downloaded by a package).
if [ ! -x /usr/bin/chromium ]; then
  log "installing Chromium from Debian (one-time)"
  apt_install chromium
fi

# --- test database ----------------------------------------------------------------------------
if ! psql_su -d postgres -tAc "select 1 from pg_database where datname = '${TEST_DB}'" | grep -q 1; then
  log "creating database ${TEST_DB}"
  psql_su -d postgres -c "create database ${TEST_DB}"
fi
psql_su -d "$TEST_DB" -c "create extension if not exists vector" >/dev/null
log "ready: PostgreSQL ${PG_HOST}:${PG_PORT}/${TEST_DB} with pgvector, Redis 127.0.0.1:${REDIS_PORT}"
