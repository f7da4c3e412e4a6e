#!/usr/bin/env bash
# A real Airflow 3 on this machine for diachron's DAGs (dags/): api-server, scheduler and dag-processor with
# the settings of docker/compose.yaml (LocalExecutor, simple auth manager with user "admin" in role admin,
# a shared JWT secret, the execution API on the api-server) except the metadata database: SQLite in
# $AIRFLOW_HOME, which Airflow 3 accepts with the LocalExecutor (its default pair; for development, not for
# production). Runs in the foreground; Ctrl-C or SIGTERM stops all three; if one of them exits, so do the others.
#
#   . .venv/bin/activate
#   AIRFLOW_HOME=/tmp/diachron-airflow AIRFLOW_PORT=8080 RAY_ADDRESS=127.0.0.1:6379 bash scripts/airflow_local.sh
#
# Environment (all optional):
#   AIRFLOW_HOME    state folder (metadata DB, logs, JWT secret, passwords file); default ./.airflow
#   AIRFLOW_PORT    api-server port (REST API /api/v2, execution API /execution/, UI); default 8080
#   AIRFLOW_HOST    interface the api-server listens on; default 127.0.0.1
#   AIRFLOW_ADMIN_PASSWORD   the admin's password, written to $AIRFLOW_HOME/passwords.json on first start;
#                   default a random one (read it there)
#   AIRFLOW__DATABASE__SQL_ALCHEMY_CONN   another metadata DB (e.g. postgresql+psycopg2://…)
#   RAY_ADDRESS, DIACHRON_*   handed to the tasks (see docker/README.md, "Settings")
# Logs: $AIRFLOW_HOME/{api-server,scheduler,dag-processor}.log; task logs under $AIRFLOW_HOME/logs.
set -euo pipefail
cd "$(dirname "$0")/.."

export AIRFLOW_HOME="${AIRFLOW_HOME:-$PWD/.airflow}"
port="${AIRFLOW_PORT:-8080}"
host="${AIRFLOW_HOST:-127.0.0.1}"
mkdir -p "$AIRFLOW_HOME"
AIRFLOW_HOME="$(cd "$AIRFLOW_HOME" && pwd)"

secret="$AIRFLOW_HOME/jwt_secret"
[ -s "$secret" ] || python -c 'import secrets; print(secrets.token_hex(32))' >"$secret"
passwords="$AIRFLOW_HOME/passwords.json"
if [ ! -s "$passwords" ]; then
  AIRFLOW_ADMIN_PASSWORD="${AIRFLOW_ADMIN_PASSWORD:-$(python -c 'import secrets; print(secrets.token_urlsafe(12))')}" \
    python -c 'import json, os, sys; json.dump({"admin": os.environ["AIRFLOW_ADMIN_PASSWORD"]}, open(sys.argv[1], "w"))' \
    "$passwords"
  chmod 600 "$passwords"
fi

export AIRFLOW__CORE__EXECUTOR=LocalExecutor
export AIRFLOW__DATABASE__SQL_ALCHEMY_CONN="${AIRFLOW__DATABASE__SQL_ALCHEMY_CONN:-sqlite:///$AIRFLOW_HOME/airflow.db}"
export AIRFLOW__CORE__DAGS_FOLDER="$PWD/dags"
export AIRFLOW__CORE__LOAD_EXAMPLES=False
export AIRFLOW__CORE__EXECUTION_API_SERVER_URL="http://127.0.0.1:$port/execution/"
export AIRFLOW__API_AUTH__JWT_SECRET="$(cat "$secret")"
export AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS=admin:admin
export AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE="$passwords"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1

airflow db migrate >"$AIRFLOW_HOME/db-migrate.log" 2>&1 || {
  cat "$AIRFLOW_HOME/db-migrate.log" >&2
  echo "error: airflow db migrate failed (log above)" >&2
  exit 1
}

pids=()
stop() {
  trap - TERM INT EXIT
  [ "${#pids[@]}" -gt 0 ] && kill "${pids[@]}" 2>/dev/null || true
  wait || true
  exit "${1:-0}"
}
trap 'stop 0' TERM INT
trap 'stop 1' EXIT

airflow api-server --host "$host" --port "$port" --workers 1 >"$AIRFLOW_HOME/api-server.log" 2>&1 &
pids+=($!)
airflow scheduler >"$AIRFLOW_HOME/scheduler.log" 2>&1 &
pids+=($!)
airflow dag-processor >"$AIRFLOW_HOME/dag-processor.log" 2>&1 &
pids+=($!)
echo "airflow: api-server http://$host:$port (user admin, password in $passwords), scheduler, dag-processor;" \
  "logs in $AIRFLOW_HOME (pids ${pids[*]})"

status=0
wait -n || status=$?
echo "error: an Airflow component exited (status $status): see the logs in $AIRFLOW_HOME" >&2
stop 1
