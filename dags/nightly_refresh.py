"""Nightly refresh: ingest new or changed documents of the configured sources, in parallel shards on Ray.

Sources and store come from the params below, else Airflow Variables / environment variables
``DIACHRON_SOURCES``, ``DIACHRON_DB_URI``, ``DIACHRON_STAGING_DIR``, ``RAY_ADDRESS`` … (see
``diachron.ingest.orchestration.SETTING_SOURCES``). Change detection is by content hash against ``documents``.
``DIACHRON_NIGHTLY_CRON`` sets the schedule (default 02:00 UTC daily; empty = triggered runs only).
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

from _ingest_tasks import ingest_graph
from airflow.sdk import Param, dag

RETRY_DELAY = timedelta(seconds=float(os.environ.get("DIACHRON_RETRY_DELAY_SECONDS", "120")))


@dag(
    dag_id="nightly_refresh",
    schedule=os.environ.get("DIACHRON_NIGHTLY_CRON", "0 2 * * *") or None,  # "": triggered runs only
    start_date=datetime(2025, 1, 1, tzinfo=UTC),
    catchup=False,
    max_active_runs=1,
    default_args={
        "retries": 3,
        "retry_delay": RETRY_DELAY,
        "retry_exponential_backoff": 2.0,
        "max_retry_delay": timedelta(minutes=30),
    },
    params={
        "sources": Param(None, type=["null", "array"], description="source files, folders or globs"),
        "db_uri": Param(None, type=["null", "string"], description="LanceDB URI"),
        "staging_dir": Param(None, type=["null", "string"], description="shared staging directory"),
        "max_shards": Param(None, type=["null", "integer"], minimum=1),
        "shard_docs": Param(None, type=["null", "integer"], minimum=1),
        "series_field": Param(
            None,
            type=["null", "string"],
            description="record field naming the series (e.g. package); default: inferred",
        ),
        "version_field": Param(None, type=["null", "string"], description="record field holding the version"),
        "fail_first_attempts": Param(
            0, type="integer", minimum=0, description="fault injection: shard attempts that crash mid-write"
        ),
    },
    tags=["diachron", "ingest"],
)
def nightly_refresh() -> None:
    ingest_graph()


nightly_refresh()
