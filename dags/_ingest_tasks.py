"""The four tasks of ``nightly_refresh`` and ``backfill``, each a call into ``diachron.ingest.orchestration``.

Kept out of DAG parsing by ``.airflowignore``; imported by the DAG files (their folder is on ``sys.path``).
Nothing heavy is imported here: ``ingest`` is imported inside the task bodies."""

from __future__ import annotations

from typing import Any

from airflow.sdk import task


@task
def discover(
    params: Any = None, dag_run: Any = None, data_interval_start: Any = None, data_interval_end: Any = None
) -> dict[str, Any]:
    from diachron.ingest import orchestration as o

    with o.fail_fast():
        return o.discover(
            o.resolve_settings(params, o.edge_lookup),
            run_key=dag_run.run_id,
            data_interval=(data_interval_start, data_interval_end),
        )


@task
def plan_shards(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    from diachron.ingest import orchestration as o

    with o.fail_fast():
        return o.plan_shards(manifest)


@task(max_active_tis_per_dagrun=4)
def process_shard(shard: dict[str, Any], manifest: dict[str, Any], ti: Any = None) -> dict[str, Any]:
    from diachron.ingest import orchestration as o

    with o.fail_fast():
        return o.process_shard(shard, manifest, attempt=ti.try_number)


@task(trigger_rule="none_failed")
def finalize(manifest: dict[str, Any], results: Any, dag: Any = None, dag_run: Any = None) -> dict[str, Any]:
    from diachron.ingest import orchestration as o

    with o.fail_fast():
        return o.finalize(
            manifest,
            [results[i] for i in range(len(results or []))],
            dag_id=dag.dag_id,
            started_at=dag_run.start_date,
        )


def ingest_graph() -> None:
    """discover >> plan_shards >> process_shard.expand(shard=…) >> finalize, inside a ``@dag`` function."""
    manifest = discover()
    results = process_shard.partial(manifest=manifest).expand(shard=plan_shards(manifest))
    finalize(manifest, results)
