#!/usr/bin/env bash
# Create .venv and install diachron with its test, airflow and eval extras (idempotent).
# torch comes first from the local CPU wheel (torch==2.13.0); elsewhere pick the torch build you need
# before running this (https://pytorch.org/get-started), or pip resolves a CUDA build of several GB.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null || PY=python3
[ -x .venv/bin/python ] || "$PY" -m venv .venv
. .venv/bin/activate
# pip configurations with unreachable extra index folders warn once per package, and setuptools boxes a
# BuildBackendWarning about editable installs (harmless here): hide only those lines
quiet() {
  local log status=0
  log=$(mktemp)
  "$@" >"$log" 2>&1 || status=$?
  grep -v "WARNING: Location 'file:" "$log" | awk '
    /BuildBackendWarning/ { skip = 1; bangs = 0; next }
    skip == 2 { skip = 0; next }
    skip == 1 { if ($0 ~ /^[[:space:]]*!![[:space:]]*$/ && ++bangs == 2) skip = 2; next }
    { print }' || true
  rm -f "$log"
  return "$status"
}
echo "== diachron: installing into .venv (first time: a few minutes)"
quiet python -m pip install -q --upgrade pip
python -c "import torch" 2>/dev/null || { echo "== torch ${DIACHRON_TORCH_VERSION:-2.13.0} (CPU) first"; \
  quiet python -m pip install -q "torch==${DIACHRON_TORCH_VERSION:-2.13.0}"; }
echo "== diachron with its test, airflow and eval extras"
PIP_NO_WARN_SCRIPT_LOCATION=1 quiet python -m pip install -q -e ".[test,airflow,eval]"
# the page's browser test drives Debian's Chromium (browser downloads cannot work here); skipped when present
if ! { command -v chromium >/dev/null && command -v chromedriver >/dev/null; }; then
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    echo "== chromium + chromium-driver (apt) for the page test"
    quiet apt-get update -qq
    DEBIAN_FRONTEND=noninteractive quiet apt-get install -y -qq chromium chromium-driver
  else
    echo "== note: chromium/chromium-driver missing (needs root + apt): tests/test_page.py will fail"
  fi
fi
echo "== installed"
