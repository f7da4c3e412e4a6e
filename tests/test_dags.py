"""The Airflow DAGs (``dags/``) and ``diachron.ingest.orchestration``: DagBag import and structure, and real
runs.

Integration tests use a temporary ``AIRFLOW_HOME`` with a SQLite metadata DB migrated by ``airflow db
migrate``, the DAG files parsed from ``dags/`` the way the dag-processor does (``BundleDagBag``), real
``dag.test()`` runs, a real local Ray (2 CPUs) and real LanceDB directories in ``tmp_path``, on lines of
the stock corpus in ``shared/data``. Expected counts are worked out from the input files.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from itertools import count, pairwise
from pathlib import Path
from typing import Any

import pytest
from conftest import shared_path
from diachron.ingest.errors import ConfigError
from diachron.ingest.orchestration import Settings, resolve_settings, source_record
from diachron.ingest.sources import load_source
from diachron.schemas.ids import content_sha256

ROOT = Path(__file__).resolve().parents[1]
DAGS = ROOT / "dags"
STOCKS = shared_path() / "data" / "stocks_quandl_wiki" / "monthly_summaries.jsonl"
TASKS = ["discover", "plan_shards", "process_shard", "finalize"]


def stock_lines(start: int, stop: int) -> list[dict[str, Any]]:
    with STOCKS.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle][start:stop]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# --- pure functions (no Airflow, no Ray) ------------------------------------------------------------------


def test_source_record_round_trips_through_the_jsonl_reader(tmp_path: Path) -> None:
    rows = stock_lines(0, 2) + [
        {
            "doc_id": "memo",
            "text": "Memo.",
            "published_at": "2021-03-01 09:00",
            "timezone": "Europe/Berlin",
            "valid_from": "2021-03-01",
            "valid_until": "2021-04-01",
            "series_id": "memos",
            "version": "2",
        },
        {"doc_id": "utc", "text": "Note.", "published_at": "2021-03-01T09:00:00Z"},
    ]
    original = list(load_source(str(write_jsonl(tmp_path / "in.jsonl", rows))))
    again = list(load_source(str(write_jsonl(tmp_path / "out.jsonl", [source_record(d) for d in original]))))
    assert again == original
    assert original[0].source_timezone == "-05:00" and original[2].source_timezone == "Europe/Berlin"


def test_resolve_settings_prefers_params_then_lookup_and_rejects_missing() -> None:
    env = {
        "DIACHRON_SOURCES": "a.jsonl, b/*.jsonl",
        "DIACHRON_DB_URI": "/env/db",
        "DIACHRON_STAGING_DIR": "/stage",
        "DIACHRON_MAX_SHARDS": "3",
    }
    settings = resolve_settings({"db_uri": "/param/db", "sources": None}, env.get)
    assert settings.sources == ["a.jsonl", "b/*.jsonl"]
    assert (settings.db_uri, settings.staging_dir, settings.max_shards) == ("/param/db", "/stage", 3)
    with pytest.raises(ConfigError, match="DIACHRON_DB_URI"):
        resolve_settings({"sources": ["a.jsonl"], "staging_dir": "/s"}, {}.get)
    with pytest.raises(ConfigError, match="valid-time window"):
        resolve_settings({"valid_from": "2003-01-01", "valid_until": "2002-01-01"}, env.get)
    with pytest.raises(ConfigError, match="max_shards"):
        resolve_settings({"max_shards": 0}, env.get)


def test_settings_window_is_half_open_utc() -> None:
    window = Settings(
        ["x"], "db", "s", valid_from="2002-12-01", valid_until="2003-01-01T00:00:00+01:00"
    ).window()
    assert window is not None
    assert (window.start, window.end) == (
        datetime(2002, 12, 1, tzinfo=UTC),
        datetime(2002, 12, 31, 23, tzinfo=UTC),
    )


# --- Airflow fixtures ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dagbag(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """DAGs parsed from ``dags/`` under a fresh AIRFLOW_HOME with a migrated SQLite DB (set before import)."""
    home = tmp_path_factory.mktemp("airflow_home")
    env = {
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
        "DIACHRON_RETRY_DELAY_SECONDS": "1",
        "HF_HUB_OFFLINE": "1",
    }
    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        if "airflow.settings" in sys.modules:
            pytest.fail(
                "airflow was imported before this module could point it at a temporary AIRFLOW_HOME: "
                "import airflow only inside the DAG tests"
            )
        subprocess.run(
            [sys.executable, "-m", "airflow", "db", "migrate"],
            check=True,
            capture_output=True,
            env=os.environ.copy(),
            timeout=300,
        )
        from airflow.dag_processing.dagbag import BundleDagBag

        yield BundleDagBag(dag_folder=str(DAGS), bundle_path=DAGS)


@pytest.fixture(scope="module")
def local_ray() -> Any:
    import ray

    ray.init(num_cpus=2, include_dashboard=False, ignore_reinit_error=True)
    yield ray
    ray.shutdown()


_logical_days = count(1)


def run_dag(dagbag: Any, dag_id: str, conf: dict[str, Any]) -> Any:
    """One real ``dag.test()`` run with a distinct logical date; returns the finished DagRun."""
    dag = dagbag.get_dag(dag_id)
    logical = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(days=next(_logical_days))
    return dag.test(logical_date=logical, run_conf=conf)


def tables(db_uri: Path) -> dict[str, list[dict[str, Any]]]:
    import lancedb

    db = lancedb.connect(str(db_uri))
    names = set(getattr(db.list_tables(), "tables", db.list_tables()))
    return {
        n: db.open_table(n).to_arrow().drop_columns(["vector"] if n == "chunks" else []).to_pylist()
        for n in ("documents", "chunks", "runs", "quarantine")
        if n in names
    }


def dag_run_row(rows: dict[str, list[dict[str, Any]]], run_key: str) -> dict[str, Any]:
    (row,) = [
        r
        for r in rows["runs"]
        if r["run_id"].startswith("dag-") and json.loads(r["config_json"])["run_key"] == run_key
    ]
    return row


def conf_for(tmp: Path, sources: list[str], db: Path, **extra: Any) -> dict[str, Any]:
    return {"sources": sources, "db_uri": str(db), "staging_dir": str(tmp / "staging"), **extra}


# --- DagBag ---------------------------------------------------------------------------------------------


@pytest.mark.integration
def test_dagbag_imports_and_structure(dagbag: Any) -> None:
    assert dagbag.import_errors == {}
    assert sorted(dagbag.dag_ids) == ["backfill", "nightly_refresh"]
    nightly, backfill = dagbag.get_dag("nightly_refresh"), dagbag.get_dag("backfill")
    assert nightly.timetable.expression == "0 2 * * *"
    assert nightly.catchup is False and nightly.max_active_runs == 1
    assert backfill.timetable.can_be_scheduled is False
    assert set(backfill.params) >= {"sources", "valid_from", "valid_until", "reason", "fail_first_attempts"}
    for dag in (nightly, backfill):
        assert sorted(dag.task_ids) == sorted(TASKS)
        for upstream, downstream in pairwise(TASKS):
            assert downstream in dag.get_task(upstream).downstream_task_ids
        assert dag.get_task("discover").downstream_task_ids == {"plan_shards", "process_shard", "finalize"}
        assert dag.get_task("finalize").trigger_rule == "none_failed"
        for task in dag.tasks:
            assert task.retries == 3 and task.retry_exponential_backoff == 2.0
            assert task.retry_delay == timedelta(seconds=1)  # DIACHRON_RETRY_DELAY_SECONDS in the fixture
            assert task.max_retry_delay == timedelta(minutes=30)
    from airflow.sdk.definitions.mappedoperator import MappedOperator

    assert isinstance(nightly.get_task("process_shard"), MappedOperator)
    assert not isinstance(nightly.get_task("finalize"), MappedOperator)


def test_dag_files_are_thin() -> None:
    """About 50 lines each, and no heavy import at module level (ingest, Ray, LanceDB load inside tasks)."""
    allowed = {"__future__", "os", "datetime", "typing", "_ingest_tasks", "airflow.sdk"}
    for name in ("nightly_refresh.py", "backfill.py", "_ingest_tasks.py"):
        source = (DAGS / name).read_text()
        assert len(source.splitlines()) <= 60
        tree = ast.parse(source)
        top = {
            n.module if isinstance(n, ast.ImportFrom) else a.name
            for n in tree.body
            if isinstance(n, ast.Import | ast.ImportFrom)
            for a in n.names
        }
        assert top <= allowed, (name, top - allowed)


# --- real runs ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def first_nightly(dagbag: Any, local_ray: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Nightly run 1 on 30 stock summaries, split into 2 shards."""
    tmp = tmp_path_factory.mktemp("nightly")
    corpus = write_jsonl(tmp / "sources" / "stocks.jsonl", stock_lines(0, 30))
    run = run_dag(
        dagbag, "nightly_refresh", conf_for(tmp, [str(corpus)], tmp / "db", max_shards=2, shard_docs=15)
    )
    return {"tmp": tmp, "db": tmp / "db", "run": run, "corpus": corpus, "tables": tables(tmp / "db")}


@pytest.mark.integration
def test_nightly_ingests_a_small_corpus(first_nightly: dict[str, Any]) -> None:
    assert first_nightly["run"].state == "success"
    rows, expected = first_nightly["tables"], stock_lines(0, 30)
    assert sorted(d["doc_id"] for d in rows["documents"]) == sorted(r["doc_id"] for r in expected)
    assert {d["content_sha256"] for d in rows["documents"]} == {content_sha256(r["text"]) for r in expected}
    # every summary is < 120 words, well under the 256-token chunk size: one chunk per document
    assert max(len(r["text"].split()) for r in expected) < 120
    assert sorted(c["doc_id"] for c in rows["chunks"]) == sorted(r["doc_id"] for r in expected)
    dag_row = dag_run_row(rows, first_nightly["run"].run_id)
    shard_ids = json.loads(dag_row["config_json"])["shard_run_ids"]
    assert len(shard_ids) == 2
    assert {r["run_id"] for r in rows["runs"]} == {dag_row["run_id"], *shard_ids}
    assert (dag_row["documents_seen"], dag_row["documents_written"], dag_row["chunks_written"]) == (
        30,
        30,
        30,
    )
    assert sorted(r["documents_written"] for r in rows["runs"] if r["run_id"] in shard_ids) == [15, 15]


@pytest.mark.integration
def test_second_nightly_writes_only_the_new_and_the_changed_document(
    first_nightly: dict[str, Any], dagbag: Any, tmp_path: Path
) -> None:
    db = tmp_path / "db"
    shutil.copytree(first_nightly["db"], db)
    lines = stock_lines(0, 31)
    changed = dict(lines[4], text=lines[4]["text"] + " Figures revised after an exchange correction.")
    lines[4] = changed
    corpus = write_jsonl(tmp_path / "sources" / "stocks.jsonl", lines)
    run = run_dag(dagbag, "nightly_refresh", conf_for(tmp_path, [str(corpus)], db))
    assert run.state == "success"

    rows, before = tables(db), first_nightly["tables"]
    new_version = f"{changed['doc_id']}@{content_sha256(changed['text'])[:12]}"
    added = {d["doc_id"] for d in rows["documents"]} - {d["doc_id"] for d in before["documents"]}
    assert added == {lines[30]["doc_id"], new_version}
    assert len(rows["documents"]) == 32 and len(rows["chunks"]) == 32
    assert len({c["chunk_id"] for c in rows["chunks"]}) == 32
    (version,) = [d for d in rows["documents"] if d["doc_id"] == new_version]
    assert (version["supersedes"], version["relation"], version["series_id"]) == (
        changed["doc_id"],
        "supersedes",
        changed["doc_id"],
    )
    old = {d["doc_id"]: d for d in before["documents"]}
    for doc in rows["documents"]:  # nothing stored before was rewritten
        if doc["doc_id"] in old:
            assert doc == old[doc["doc_id"]]
    dag_row = dag_run_row(rows, run.run_id)
    assert (dag_row["documents_seen"], dag_row["documents_written"], dag_row["chunks_written"]) == (2, 2, 2)
    assert json.loads(dag_row["config_json"])["unchanged"] == 29


@pytest.mark.integration
def test_backfill_keeps_valid_time_and_survives_a_mid_write_crash(
    first_nightly: dict[str, Any], dagbag: Any, tmp_path: Path
) -> None:
    """Late documents keep their valid time and get a later ``recorded_at``; the shard task crashes once
    after committing its chunks (``fail_first_attempts=1``), is retried, and the tables end without
    duplicates."""
    db = tmp_path / "db"
    shutil.copytree(first_nightly["db"], db)
    late = [dict(r, valid_from=r["period_start"], valid_until=r["period_end"]) for r in stock_lines(100, 103)]
    assert [r["period_start"] for r in late] == ["2002-12-01", "2002-12-01", "2003-01-01"]
    write_jsonl(tmp_path / "late" / "a.jsonl", late[:2])
    write_jsonl(tmp_path / "late" / "b.jsonl", late[2:])
    conf = conf_for(
        tmp_path,
        [str(tmp_path / "late" / "*.jsonl")],
        db,
        valid_from="2002-12-01",
        valid_until="2003-01-01",
        reason="late December 2002 summaries",
        fail_first_attempts=1,
    )
    run = run_dag(dagbag, "backfill", conf)
    assert run.state == "success"
    assert task_instances(run.run_id, "process_shard") == [("success", 2)]

    rows, before = tables(db), first_nightly["tables"]
    first_recorded = max(d["recorded_at"] for d in before["documents"])
    added = {d["doc_id"] for d in rows["documents"]} - {d["doc_id"] for d in before["documents"]}
    assert added == {late[0]["doc_id"], late[1]["doc_id"]}  # the January 2003 one is outside the window
    for source in late[:2]:
        (doc,) = [d for d in rows["documents"] if d["doc_id"] == source["doc_id"]]
        assert (doc["valid_from"], doc["valid_until"]) == (
            datetime(2002, 12, 1, tzinfo=UTC),
            datetime(2003, 1, 1, tzinfo=UTC),
        )
        assert doc["recorded_at"] > first_recorded
    assert len(rows["documents"]) == 32
    assert len(rows["chunks"]) == len({c["chunk_id"] for c in rows["chunks"]}) == 32
    config = json.loads(dag_run_row(rows, run.run_id)["config_json"])
    assert (config["reason"], config["outside_window"], config["dag_id"]) == (
        "late December 2002 summaries",
        1,
        "backfill",
    )
    # attempt 1 committed its 2 documents and 2 chunks, then crashed before its quarantine and final runs
    # rows: its marker says "failed"; attempt 2 rewrote those rows under its own run id and commit time
    (shard_run,) = [r for r in rows["runs"] if r["run_id"] in config["shard_run_ids"]]
    assert (shard_run["status"], shard_run["documents_written"], shard_run["chunks_written"]) == (
        "success",
        2,
        2,
    )
    failed = [r for r in rows["runs"] if r["status"] == "failed"]
    assert len(failed) == 1 and json.loads(failed[0]["config_json"])["_commit"]["pid"] == os.getpid()
    new_docs = [d for d in rows["documents"] if d["doc_id"] in added]
    new_chunks = [c for c in rows["chunks"] if c["doc_id"] in added]
    assert len(new_chunks) == 2 and all(c["recorded_at"] > first_recorded for c in new_chunks)
    assert {c["run_id"] for c in new_chunks} == {d["run_id"] for d in new_docs} == {shard_run["run_id"]}
    assert {c["recorded_at"] for c in new_chunks} == {d["recorded_at"] for d in new_docs}


@pytest.mark.integration
def test_nightly_with_nothing_new_skips_the_shards_and_records_the_run(
    first_nightly: dict[str, Any], dagbag: Any, tmp_path: Path
) -> None:
    db = tmp_path / "db"
    shutil.copytree(first_nightly["db"], db)
    corpus = tmp_path / "sources" / "stocks.jsonl"
    write_jsonl(corpus, stock_lines(0, 30))
    with corpus.open("a", encoding="utf-8") as handle:
        handle.write('{"doc_id": "broken", "text": \n')  # an unreadable line: quarantined, never dropped
    run = run_dag(dagbag, "nightly_refresh", conf_for(tmp_path, [str(corpus)], db))
    assert run.state == "success"
    assert task_instances(run.run_id, "process_shard") == [
        ("skipped", 0)
    ]  # expanded over no shard: never ran
    rows = tables(db)
    assert len(rows["documents"]) == 30 and len(rows["chunks"]) == 30
    dag_row = dag_run_row(rows, run.run_id)
    assert (dag_row["documents_seen"], dag_row["documents_written"], dag_row["chunks_written"]) == (0, 0, 0)
    assert json.loads(dag_row["config_json"])["unchanged"] == 30
    assert dag_row["quarantined"] == 1
    assert [(q["stage"], q["record_id"]) for q in rows["quarantine"]] == [("source", f"{corpus}:31")]


@pytest.mark.integration
def test_terminal_error_fails_fast_without_retries(dagbag: Any, tmp_path: Path) -> None:
    conf = conf_for(
        tmp_path, [str(tmp_path / "missing" / "*.jsonl")], tmp_path / "db", reason="typo in the glob"
    )
    run = run_dag(dagbag, "backfill", conf)
    assert run.state == "failed"
    assert task_instances(run.run_id, "discover") == [("failed", 1)]  # retries=3, none spent


def task_instances(run_id: str, task_id: str) -> list[tuple[str, int]]:
    """(state, try_number) of each instance of ``task_id`` in the run, from the Airflow metadata DB."""
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session

    with create_session() as session:
        tis = session.query(TaskInstance).filter_by(run_id=run_id, task_id=task_id).all()
        return [(str(ti.state), ti.try_number) for ti in tis if ti.state is not None]
