#!/usr/bin/env bash
# The test command (README): sets everything up on a fresh machine, then runs the whole suite.
#   1. a virtual environment in .venv with ragmeter and its test extras (bundled models included)
#   2. a PostgreSQL server on 127.0.0.1 (Debian packages) for the SQL and results-store tests
#   3. headless Chromium (Debian package) for the HTML report test
#   4. the packaging check: the built wheel, installed non-editable in a fresh venv, runs
#      (scripts/wheel_smoke.sh; skip with RAGMETER_SKIP_WHEEL_SMOKE=1)
#   5. pytest
# Idempotent: a second run reuses what is there. Exit code is pytest's (5 "no tests" is a failure).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
. .venv/bin/activate
python -m pip install -q --upgrade pip
# torch is never needed by the test extras; if something asks for it, take the local CPU wheel.
python -m pip install -q -e ".[test]"

if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
  export DEBIAN_FRONTEND=noninteractive
  if ! command -v chromium >/dev/null 2>&1 || ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then
    apt-get update -qq || true
  fi
fi

# PostgreSQL on loopback; the script prints the export line for RAGMETER_TEST_PG_URL.
if [ -z "${RAGMETER_TEST_PG_URL:-}" ] && [ -f scripts/pg_setup.sh ]; then
  if pg_env=$(bash scripts/pg_setup.sh | grep '^export RAGMETER_TEST_PG_URL='); then
    eval "$pg_env"
  else
    echo "warning: PostgreSQL could not be started; postgres tests will be skipped" >&2
  fi
fi

if [ -f scripts/browser_setup.sh ]; then
  bash scripts/browser_setup.sh || echo "warning: chromium could not be installed; browser tests will be skipped" >&2
fi

mkdir -p test-output
export RAGMETER_CACHE_DIR="$ROOT/test-output/cache"
if [ "${RAGMETER_SKIP_WHEEL_SMOKE:-0}" != "1" ]; then
  bash scripts/wheel_smoke.sh
fi
set +e
python -m pytest "$@"
rc=$?
set -e
if [ "$rc" = "5" ]; then
  echo "pytest collected no tests: treating as failure" >&2
  exit 1
fi
exit "$rc"
