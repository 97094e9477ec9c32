#!/usr/bin/env bash
# Packaging check (run by scripts/test.sh): build the wheel, check that it carries every
# non-Python file of src/ragmeter, install it NON-editable into a fresh virtual environment
# (core dependencies only) and run the CLI there: --help, the demo on a small limit without a
# judge, and one usage error (exit code 2). Catches files missing from the wheel and imported
# packages missing from the declared dependencies.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PY=${PYTHON:-python3}
WORK=${WHEEL_SMOKE_DIR:-"$ROOT/test-output/wheel-smoke"}
rm -rf "$WORK"
mkdir -p "$WORK/dist"

echo "wheel smoke: building the wheel" >&2
"$PY" -m pip wheel -q --no-deps -w "$WORK/dist" "$ROOT"
WHEEL=$(ls "$WORK"/dist/ragmeter-*.whl)

echo "wheel smoke: checking package data in $(basename "$WHEEL")" >&2
"$PY" - "$WHEEL" "$ROOT/src" <<'PYEOF'
import pathlib, sys, zipfile
wheel, src = sys.argv[1], pathlib.Path(sys.argv[2])
names = set(zipfile.ZipFile(wheel).namelist())
want = [p.relative_to(src).as_posix() for p in (src / "ragmeter").rglob("*")
        if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts]
missing = [w for w in want if w not in names]
if missing:
    sys.exit("files missing from the wheel: " + ", ".join(missing))
print(f"wheel carries all {len(want)} data files", file=sys.stderr)
PYEOF

echo "wheel smoke: installing into a fresh virtual environment" >&2
"$PY" -m venv "$WORK/venv"
"$WORK/venv/bin/python" -m pip install -q --upgrade pip
"$WORK/venv/bin/python" -m pip install -q "$WHEEL"
RM="$WORK/venv/bin/ragmeter"
cd "$WORK"   # away from the source tree: only the installed package is importable
unset PYTHONPATH

"$RM" --help >/dev/null
RAGMETER_CACHE_DIR="$WORK/cache" "$RM" demo --no-judge --limit 5 --quiet --out "$WORK/demo" \
  >"$WORK/demo.log" 2>&1 || { cat "$WORK/demo.log" >&2; echo "wheel smoke: demo failed" >&2; exit 1; }
set +e
"$RM" retrieval --bogus-option >"$WORK/usage.log" 2>&1
rc=$?
set -e
if [ "$rc" != "2" ]; then
  cat "$WORK/usage.log" >&2
  echo "wheel smoke: a usage error exited $rc, expected 2" >&2
  exit 1
fi
if grep -q Traceback "$WORK/usage.log" "$WORK/demo.log"; then
  echo "wheel smoke: traceback in the output" >&2
  exit 1
fi
echo "wheel smoke: ok" >&2
