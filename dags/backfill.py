"""Backfill: ingest late documents from given sources or globs, optionally only a valid-time window.

Late documents keep their valid time; ``recorded_at`` is the time of this write. A changed document
becomes a new version superseding the stored one (``diachron.ingest.versioning``); nothing is overwritten.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

from _ingest_tasks import ingest_graph
from airflow.sdk import Param, dag

RETRY_DELAY = timedelta(seconds=float(os.environ.get("DIACHRON_RETRY_DELAY_SECONDS", "120")))


@dag(
    dag_id="backfill",
    schedule=None,
    start_date=datetime(2025, 1, 1, tzinfo=UTC),
    catchup=False,
    default_args={
        "retries": 3,
        "retry_delay": RETRY_DELAY,
        "retry_exponential_backoff": 2.0,
        "max_retry_delay": timedelta(minutes=30),
    },
    params={
        "sources": Param([], type="array", minItems=1, description="source files, folders or globs"),
        "valid_from": Param(None, type=["null", "string"], description="window start, ISO-8601 (inclusive)"),
        "valid_until": Param(None, type=["null", "string"], description="window end, ISO-8601 (exclusive)"),
        "reason": Param("", type="string", minLength=1, description="why (recorded in the runs row)"),
        "db_uri": Param(None, type=["null", "string"], description="LanceDB URI"),
        "staging_dir": Param(None, type=["null", "string"], description="shared staging directory"),
        "max_shards": Param(None, type=["null", "integer"], minimum=1),
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
def backfill() -> None:
    ingest_graph()


backfill()
