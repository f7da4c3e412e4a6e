"""A run's rows become visible together; a kill at any commit point is repaired by the next run; accounting.

Real local Ray, real LanceDB in tmp_path, real embedder. The killed runs are subprocesses that SIGKILL
themselves from the ``committed`` progress event (after the runs marker, the documents, the chunks, the
quarantine commit, or the final runs row), connected to this process's Ray. Expected states are worked
out from the commit order documented in ``diachron.ingest.store`` (marker, documents, chunks,
quarantine, runs row), and the repaired store must equal an uninterrupted run of the same input.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import lancedb
import pytest
from diachron.ingest.pipeline import IngestConfig, RunSummary, run_ingest

pytestmark = pytest.mark.integration

KILL_AT = """
import os, signal, sys
from diachron.ingest.pipeline import IngestConfig, run_ingest
source, db, point = sys.argv[1:4]
def progress(event, info):
    if event == "committed" and info["table"] == point:
        os.kill(os.getpid(), signal.SIGKILL)
run_ingest([source], IngestConfig(db_uri=db, num_cpus=2), progress=progress)
"""
INGEST = """
import json, sys
from dataclasses import asdict
from diachron.ingest.pipeline import IngestConfig, run_ingest
summary = run_ingest([sys.argv[1]], IngestConfig(db_uri=sys.argv[2], num_cpus=2))
print("SUMMARY " + json.dumps(asdict(summary)))
"""
TABLES = ("documents", "chunks", "quarantine", "runs")


def _note(n: int) -> dict[str, Any]:
    return {
        "doc_id": f"note-{n:02d}",
        "title": f"Note {n}",
        "published_at": f"2021-{n % 12 + 1:02d}-15",
        "text": f"The committee met on {n % 28 + 1} March 2021 to review budget line {n}.",
    }


def _write(path: Path, records: list[dict[str, Any]], extra: list[str] = ()) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join([json.dumps(r) for r in records] + list(extra)) + "\n", encoding="utf-8")
    return path


def snapshot(db: Path | str) -> dict[str, list[dict[str, Any]]]:
    conn = lancedb.connect(str(db))
    names = set(getattr(conn.list_tables(), "tables", conn.list_tables()))
    return {n: (conn.open_table(n).to_arrow().to_pylist() if n in names else []) for n in TABLES}


def content(snap: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """What must not depend on which run wrote it (ids, text, time, vectors rounded)."""
    docs = sorted(
        (d["doc_id"], d["content_sha256"], d["published_at"], d["abstract"]) for d in snap["documents"]
    )
    chunks = sorted(
        (
            c["chunk_id"],
            c["doc_id"],
            c["text"],
            c["event_start"],
            c["event_end"],
            tuple(round(x, 4) for x in c["vector"]),
        )
        for c in snap["chunks"]
    )
    quarantine = sorted(
        (q["quarantine_id"], q["stage"], q["record_id"], q["reason"]) for q in snap["quarantine"]
    )
    return {"documents": docs, "chunks": chunks, "quarantine": quarantine}


def check_invariants(
    db: Path | str, summary: RunSummary, *, records_in: int
) -> dict[str, list[dict[str, Any]]]:
    """Ids unique, no orphan chunk, every row of a committed run, one recorded_at per run, accounting (also
    through the shared helper ``tests/accounting.py``)."""
    from tests.accounting import assert_accounted

    assert_accounted(str(db), summary, records_in=records_in)
    snap = snapshot(db)
    for name, key in (
        ("documents", "doc_id"),
        ("chunks", "chunk_id"),
        ("quarantine", "quarantine_id"),
        ("runs", "run_id"),
    ):
        ids = [r[key] for r in snap[name]]
        assert len(ids) == len(set(ids)), f"duplicate ids in {name}"
    doc_ids = {d["doc_id"] for d in snap["documents"]}
    assert {c["doc_id"] for c in snap["chunks"]} <= doc_ids, "a chunk without its document"
    committed = {r["run_id"] for r in snap["runs"] if r["status"] == "success"}
    for name in ("documents", "chunks"):
        assert {r["run_id"] for r in snap[name]} <= committed, f"{name} rows of an uncommitted run"
    stamp = {d["doc_id"]: (d["run_id"], d["recorded_at"]) for d in snap["documents"]}
    for c in snap["chunks"]:
        assert (c["run_id"], c["recorded_at"]) == stamp[c["doc_id"]], (
            "chunk and document from different commits"
        )
    s = summary
    assert s.documents_seen == s.documents_written + s.documents_quarantined + s.documents_unchanged
    assert s.chunks_seen == s.chunks_written + s.chunks_quarantined + s.chunks_unchanged
    (row,) = [r for r in snap["runs"] if r["run_id"] == s.run_id]
    assert (row["status"], row["documents_seen"], row["documents_written"], row["chunks_written"]) == (
        "success",
        s.documents_seen,
        s.documents_written,
        s.chunks_written,
    )
    accounting = json.loads(row["config_json"])["accounting"]
    assert (accounting["documents_unchanged"], accounting["chunks_unchanged"]) == (
        s.documents_unchanged,
        s.chunks_unchanged,
    )
    return snap


def _indexed(db: Path | str) -> set[str]:
    return {c for i in lancedb.connect(str(db)).open_table("chunks").list_indices() for c in i.columns}


def _env() -> dict[str, str]:
    import ray

    return {**os.environ, "RAY_ADDRESS": ray.get_runtime_context().gcs_address, "LANCE_LOG": "error"}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three notes and one unreadable line (one source quarantine row)."""
    return _write(
        tmp_path_factory.mktemp("corpus") / "notes.jsonl",
        [_note(n) for n in (1, 2, 3)],
        ['{"doc_id": "broken", "text": '],
    )


@pytest.fixture(scope="module")
def reference(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    db = tmp_path_factory.mktemp("reference") / "db"
    summary = run_ingest([str(corpus)], IngestConfig(db_uri=str(db), num_cpus=2))
    snap = check_invariants(db, summary, records_in=4)
    assert (summary.documents_seen, summary.documents_written, summary.documents_quarantined) == (4, 3, 1)
    assert (summary.chunks_seen, summary.chunks_written, summary.quarantined) == (3, 3, 1)
    return {"summary": summary, "content": content(snap)}


# what a kill right after each commit leaves: (documents, chunks, quarantine rows, marker status)
LEFT = {
    "runs:begin": (0, 0, 0, "committing"),
    "documents": (3, 0, 0, "committing"),
    "chunks": (3, 3, 0, "committing"),
    "quarantine": (3, 3, 1, "committing"),
    "runs": (3, 3, 1, "success"),
}


@pytest.fixture(scope="module")
def killed(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """One run per commit point, killed right after that commit, two at a time on the session's Ray.

    (A run's pools hold one CPU at their minimum, so two fit a 2-CPU Ray, as in the concurrent-ingest test
    below; five drivers at once deadlock: each holds part of its pools' minimum and waits for the rest.)
    """
    from concurrent.futures import ThreadPoolExecutor

    root = tmp_path_factory.mktemp("killed")

    def kill_at(point: str) -> dict[str, Any]:
        db = root / point.replace(":", "_")
        proc = subprocess.run(
            [sys.executable, "-c", KILL_AT, str(corpus), str(db), point],
            env=_env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            timeout=900,
        )
        return {"db": db, "returncode": proc.returncode, "stderr": proc.stderr[-2000:]}

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(LEFT, pool.map(kill_at, LEFT)))


@pytest.mark.parametrize("point", list(LEFT))
def test_kill_at_each_commit_point_is_repaired_by_the_next_run(
    point: str, corpus: Path, reference: dict[str, Any], killed: dict[str, dict[str, Any]]
) -> None:
    db = killed[point]["db"]
    assert killed[point]["returncode"] == -9, killed[point]["stderr"]
    left = snapshot(db)
    (marker,) = left["runs"]
    assert (len(left["documents"]), len(left["chunks"]), len(left["quarantine"]), marker["status"]) == LEFT[
        point
    ]
    assert not _indexed(db) if left["chunks"] else True  # killed before its indexes were built

    summary = run_ingest([str(corpus)], IngestConfig(db_uri=str(db), num_cpus=2))
    snap = check_invariants(db, summary, records_in=4)
    assert content(snap) == reference["content"]
    assert _indexed(db) >= {"event_start", "event_end", "doc_id", "recorded_at"}  # ensured on every run
    runs = {r["run_id"]: r["status"] for r in snap["runs"]}
    if point == "runs":  # the killed run had committed: the re-run finds everything unchanged
        assert (summary.documents_written, summary.documents_unchanged, summary.chunks_written) == (0, 3, 0)
        assert runs == {marker["run_id"]: "success", summary.run_id: "success"}
    else:  # its rows are rewritten by the re-run, with the re-run's run_id and commit time
        assert (summary.documents_written, summary.chunks_written, summary.documents_unchanged) == (3, 3, 0)
        assert summary.replaced == len(left["documents"]) + len(left["chunks"])
        assert (
            {d["run_id"] for d in snap["documents"]}
            == {c["run_id"] for c in snap["chunks"]}
            == {summary.run_id}
        )
        assert runs == {marker["run_id"]: "failed", summary.run_id: "success"}
        assert summary.quarantined == 1  # the source quarantine row, (re)written once


def test_duplicate_ids_quarantine_once_per_content_and_one_outcome_per_record(tmp_path: Path) -> None:
    """Faults 10, 11, 12 of ``shared/cases/faults`` in one run, then a re-run of the same files."""
    from tests.conftest import shared_path

    faults = shared_path() / "cases" / "faults"
    sources = [
        str(faults / f)
        for f in (
            "10_duplicate_doc_id_in_batch.jsonl",
            "11_duplicate_quarantine_id.jsonl",
            "12_year9999_dec31_no_dates.jsonl",
        )
    ]
    db = tmp_path / "db"
    first = run_ingest(sources, IngestConfig(db_uri=str(db), num_cpus=2))
    records = sum(1 for s in sources for line in Path(s).read_bytes().splitlines() if line.strip())
    assert records == 7
    snap = check_invariants(db, first, records_in=records)
    ids = [q["quarantine_id"] for q in snap["quarantine"]]
    assert len(ids) == len(set(ids)) == first.quarantined
    quarantined_docs = {
        q["record_id"]
        for q in snap["quarantine"]
        if q["stage"] in ("source", "plan", "annotate")
        and q["record_id"] in {"y9999", "dup-1", "year-0001"} | {d["doc_id"] for d in snap["documents"]}
    }
    written = {d["doc_id"] for d in snap["documents"]}
    # one outcome per record: a document quarantined as a whole is never also written
    doc_level = {
        q["record_id"]
        for q in snap["quarantine"]
        if q["stage"] in ("source", "plan")
        or (q["stage"] == "annotate" and q["reason"].startswith("annotation failed"))
    }
    assert not (doc_level & written), quarantined_docs
    # two records with doc_id dup-1 and different text: never two rows with one id (one written per version)
    dup = [d for d in snap["documents"] if d["doc_id"].startswith("dup-1")]
    assert 1 <= len(dup) <= 2 and len({d["doc_id"] for d in dup}) == len(dup)

    again = run_ingest(sources, IngestConfig(db_uri=str(db), num_cpus=2))
    after = check_invariants(db, again, records_in=records)
    assert (again.documents_written, again.chunks_written, again.quarantined) == (
        0,
        0,
        0,
    )  # nothing re-quarantined
    assert len(after["quarantine"]) == len(snap["quarantine"])
    assert again.documents_quarantined == first.documents_quarantined


def test_two_concurrent_overlapping_ingests_are_accounted_right(tmp_path: Path) -> None:
    """Two ingests started together, 40 documents each, 30 in common: 50 documents, each written once."""
    a = _write(tmp_path / "a.jsonl", [_note(n) for n in range(0, 40)])
    b = _write(tmp_path / "b.jsonl", [_note(n) for n in range(10, 50)])
    db = tmp_path / "db"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", INGEST, str(src), str(db)],
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for src in (a, b)
    ]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1][-2000:] for o in outs]
    summaries = [
        RunSummary(**json.loads(next(line for line in o[0].splitlines() if line.startswith("SUMMARY "))[8:]))
        for o in outs
    ]
    snap = snapshot(db)
    assert sorted(d["doc_id"] for d in snap["documents"]) == [f"note-{n:02d}" for n in range(50)]
    assert len(snap["chunks"]) == len({c["chunk_id"] for c in snap["chunks"]}) == 50
    for s in summaries:
        assert s.documents_seen == 40
        assert s.documents_seen == s.documents_written + s.documents_quarantined + s.documents_unchanged
        assert s.chunks_seen == s.chunks_written + s.chunks_quarantined + s.chunks_unchanged
    assert sum(s.documents_written for s in summaries) == 50  # the 30 shared ones counted once
    assert sum(s.chunks_written for s in summaries) == 50
    for s in summaries:
        check_invariants(db, s, records_in=40)
