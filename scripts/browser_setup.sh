#!/usr/bin/env bash
# Install Debian's headless-capable Chromium for the `browser` tests (tests/test_report_browser*.py).
# Idempotent: does nothing when a chromium binary is already on PATH.
set -euo pipefail

find_chromium() {
  for name in chromium chromium-browser google-chrome chrome; do
    if command -v "$name" >/dev/null 2>&1; then
      command -v "$name"
      return 0
    fi
  done
  return 1
}

if path=$(find_chromium); then
  echo "chromium already installed: $path"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends chromium fonts-dejavu-core
path=$(find_chromium)
echo "chromium installed: $path"
"$path" --version || true
