"""The per-run commit protocol of ``diachron.ingest.store`` on a real LanceDB (no Ray): which runs are dead,
what a merge replaces, duplicates, and staged fragments committed in one transaction."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest
from diachron.ingest.staging import Staging
from diachron.ingest.store import COMMIT_LEASE, Store
from diachron.schemas.records import QuarantineRecord, arrow_schema

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _run(run_id: str, status: str = "success") -> dict:
    return {
        "run_id": run_id,
        "started_at": T0,
        "finished_at": T0,
        "sources_json": "[]",
        "config_json": "{}",
        "embedder": "e",
        "embedding_dim": 4,
        "documents_seen": 0,
        "documents_written": 0,
        "chunks_written": 0,
        "quarantined": 0,
        "status": status,
    }


def _q(qid: str, run_id: str, reason: str = "bad") -> dict:
    return {
        "quarantine_id": qid,
        "run_id": run_id,
        "stage": "source",
        "record_id": qid,
        "reason": reason,
        "payload_json": "{}",
        "recorded_at": T0,
    }


def _batches(rows: list[dict]) -> list[pa.RecordBatch]:
    return pa.Table.from_pylist(rows, schema=arrow_schema(QuarantineRecord)).to_batches()


def _dead_pid() -> int:
    proc = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    return int(proc.stdout)


def test_dead_runs_are_gone_writers_expired_leases_and_failed_runs(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "db"), dim=4)
    store.begin_run(_run("live"), now=T0)  # this process: alive, lease in the future
    store.begin_run(_run("gone"), now=T0)
    store.begin_run(_run("old"), now=T0 - COMMIT_LEASE - timedelta(minutes=1))
    store.finish_run(_run("done"))
    store.finish_run(_run("broken", status="failed"))
    runs = store.table("runs")
    config = json.loads(runs.search().where("run_id = 'gone'").to_arrow().to_pylist()[0]["config_json"])
    config["_commit"]["pid"] = _dead_pid()  # as if its process had been killed
    runs.update(where="run_id = 'gone'", values={"config_json": json.dumps(config)})
    assert store.dead_runs(now=T0) == {"gone", "old", "broken"}
    store.finish_run(_run("live"))  # the marker becomes the final row
    assert _status(store)["live"] == "success"
    store.mark_failed({"gone", "old"})
    assert _status(store) == {
        "live": "success",
        "gone": "failed",
        "old": "failed",
        "done": "success",
        "broken": "failed",
    }


def _status(store: Store) -> dict[str, str]:
    return {r["run_id"]: r["status"] for r in store.table("runs").to_arrow().to_pylist()}  # a fresh handle


def test_merge_replaces_rows_of_dead_runs_only_and_writes_a_key_once(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "db"), dim=4)
    store.insert_new(
        "quarantine",
        pa.Table.from_pylist([_q("a", "dead"), _q("b", "alive")], schema=arrow_schema(QuarantineRecord)),
        now=T0,
    )
    later = T0 + timedelta(hours=1)
    rows = [_q("a", "new"), _q("b", "new"), _q("c", "new"), _q("c", "new")]
    result = store.merge_staged("quarantine", iter(_batches(rows)), recorded_at=later, replace_runs={"dead"})
    assert result == {"inserted": 1, "replaced": 1, "duplicates": 1}
    got = {
        r["quarantine_id"]: (r["run_id"], r["recorded_at"])
        for r in store.table("quarantine").to_arrow().to_pylist()
    }
    assert got == {"a": ("new", later), "b": ("alive", T0), "c": ("new", later)}
    assert store.ids_of_run("quarantine", "new") == {"a", "c"}


def test_fragments_written_apart_are_committed_together(tmp_path: Path) -> None:
    staging = Staging(str(tmp_path / "db"), "run1")
    schema = arrow_schema(QuarantineRecord)
    first = staging.write(
        "quarantine", pa.Table.from_pylist([_q("a", "run1"), _q("b", "run1")], schema=schema)
    )
    second = staging.write("quarantine", pa.Table.from_pylist([_q("c", "run1")], schema=schema))
    assert staging.write("quarantine", pa.Table.from_pylist([], schema=schema)) == []
    dataset = staging.commit("quarantine", first + second, schema)
    assert sorted(dataset.to_table().column("quarantine_id").to_pylist()) == ["a", "b", "c"]
    assert staging.commit("quarantine", [], schema) is None
    staging.drop()
    assert not (tmp_path / "db" / "_staging" / "run1").exists()


HOLD_LOCK = """
import sys, time
from diachron.ingest.store import Store
with Store(sys.argv[1], dim=4).commit_lock():
    print("held", flush=True)
    time.sleep(600)
"""


@pytest.mark.integration
def test_commit_lock_lets_one_run_commit_at_a_time_and_dies_with_its_holder(tmp_path: Path) -> None:
    """Insert-only merges of two runs at once would both insert a shared key (Lance does not see it), so
    commits take turns: a second run waits while another holds the lock, and gets it once the holder is
    SIGKILLed (no lock left behind)."""
    import threading

    store = Store(str(tmp_path / "db"), dim=4)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(tmp_path / "db")], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout.readline().strip() == "held"
    got = threading.Event()

    def take() -> None:
        with store.commit_lock():
            got.set()

    thread = threading.Thread(target=take, daemon=True)
    thread.start()
    assert not got.wait(0.5)  # the holder has it
    holder.kill()
    holder.wait(timeout=30)
    assert got.wait(10)  # released by the holder's death
    thread.join(timeout=10)
