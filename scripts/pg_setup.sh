#!/usr/bin/env bash
# Start a private PostgreSQL cluster for ragmeter's `postgres` tests (idempotent; used by CI).
#
#   eval "$(scripts/pg_setup.sh)"        # exports RAGMETER_TEST_PG_URL
#   scripts/pg_setup.sh stop             # stops the cluster
#
# - installs PostgreSQL from Debian packages when no server binaries are found
#   (apt-get install -y postgresql; needs root);
# - initialises a data directory under /tmp (RAGMETER_PG_DATA, default /tmp/ragmeter-pg/data)
#   owned by the `postgres` OS user and starts it on 127.0.0.1:54329 (RAGMETER_PG_PORT);
# - creates role `ragmeter` (password from RAGMETER_PG_PASSWORD, default `ragmeter-test`) and
#   database `ragmeter_test`, then prints the `export RAGMETER_TEST_PG_URL=...` line on stdout.
# Running it again reuses the running cluster, role and database. Progress goes to stderr.
set -euo pipefail

PORT="${RAGMETER_PG_PORT:-54329}"
BASE="${RAGMETER_PG_BASE:-/tmp/ragmeter-pg}"
DATA="${RAGMETER_PG_DATA:-$BASE/data}"
ROLE="${RAGMETER_PG_ROLE:-ragmeter}"
DB="${RAGMETER_PG_DB:-ragmeter_test}"
PASSWORD="${RAGMETER_PG_PASSWORD:-ragmeter-test}"

log() { echo "pg_setup: $*" >&2; }

find_bin() {
  local d
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$d/pg_ctl" ] && [ -x "$d/initdb" ]; then echo "$d"; return 0; fi
  done
  return 1
}

as_pg() {
  if [ "$(id -un)" = "postgres" ]; then bash -c "$1"; else su postgres -s /bin/bash -c "$1"; fi
}

BIN="$(find_bin || true)"
if [ -z "$BIN" ]; then
  log "PostgreSQL not found; installing from Debian packages"
  if [ "$(id -u)" != "0" ]; then log "need root to apt-get install postgresql"; exit 1; fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq postgresql >&2
  BIN="$(find_bin)"
fi

if [ "${1:-}" = "stop" ]; then
  as_pg "'$BIN/pg_ctl' -D '$DATA' -m fast stop" >&2 || true
  exit 0
fi

mkdir -p "$BASE"
chown postgres:postgres "$BASE" 2>/dev/null || true
if [ ! -s "$DATA/PG_VERSION" ]; then
  log "initdb $DATA"
  as_pg "'$BIN/initdb' -D '$DATA' -U postgres -A trust -E UTF8 --locale=C.UTF-8 >/dev/null" \
    || as_pg "'$BIN/initdb' -D '$DATA' -U postgres -A trust -E UTF8 --locale=C >/dev/null"
  # password auth for TCP clients, trust only on the local socket for the setup itself
  cat > "$BASE/pg_hba.conf" <<EOF
local all postgres trust
host  all all 127.0.0.1/32 scram-sha-256
EOF
  chown postgres:postgres "$BASE/pg_hba.conf"
  as_pg "cp '$BASE/pg_hba.conf' '$DATA/pg_hba.conf'"
fi

if as_pg "'$BIN/pg_ctl' -D '$DATA' status" >/dev/null 2>&1; then
  log "cluster already running on port $PORT"
else
  log "starting cluster on 127.0.0.1:$PORT"
  as_pg "'$BIN/pg_ctl' -D '$DATA' -l '$BASE/server.log' -w -t 60 \
    -o \"-c listen_addresses=127.0.0.1 -p $PORT -k '$BASE'\" start" >&2
fi

psql_pg() { as_pg "'$BIN/psql' -h '$BASE' -p $PORT -U postgres -v ON_ERROR_STOP=1 -qAt $*"; }

if [ "$(psql_pg "-c \"SELECT 1 FROM pg_roles WHERE rolname='$ROLE'\"")" != "1" ]; then
  log "creating role $ROLE"
  psql_pg "-c \"CREATE ROLE $ROLE LOGIN PASSWORD '$PASSWORD'\""
else
  psql_pg "-c \"ALTER ROLE $ROLE LOGIN PASSWORD '$PASSWORD'\""
fi
if [ "$(psql_pg "-c \"SELECT 1 FROM pg_database WHERE datname='$DB'\"")" != "1" ]; then
  log "creating database $DB"
  psql_pg "-c \"CREATE DATABASE $DB OWNER $ROLE\""
fi

echo "export RAGMETER_TEST_PG_URL=postgresql+psycopg://$ROLE:$PASSWORD@127.0.0.1:$PORT/$DB"
