"""Each fault a hostile batch found (issue 13, ``shared/cases/faults``) as its minimal input, now passing.

Fast tests read each fault file through the real source reader and planner; one module-scoped ingest
(real local Ray, embedder, LanceDB) takes every fault file at once, beside a 10 MB text and a record
without ``doc_id``, and checks the tables: the good records are written, each bad one is one quarantine
row with its reason, and records in = written + quarantined + unchanged (``tests/accounting.py``). The
``--db`` refusals run before any table is created.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from diachron.ingest.errors import DatabaseRefusedError
from diachron.ingest.preflight import check_database
from diachron.ingest.sources import Rejected, SourceDocument, load_source
from diachron.ingest.versioning import plan_versions

SHARED = Path(os.environ.get("DIACHRON_SHARED") or Path(__file__).resolve().parents[2] / "shared")
FAULTS = SHARED / "cases" / "faults"

#: fault file -> (id of the bad record's quarantine row, a fragment its reason must contain)
REJECTED = {
    "01_overflow_9999_offset.jsonl": ("year-9999-offset", "out of range"),
    "02_bad_timezone_name.jsonl": ("ts-bad-tzname", "unknown time zone 'Mars/Olympus_Mons'"),
    "03_invalid_utf8.jsonl": ("bad-utf8", "invalid UTF-8"),
    "04_deep_nesting_recursion.jsonl": ("04_deep_nesting_recursion.jsonl:2", "nested too deep"),
    "05_lone_surrogate.jsonl": ("surrogate", "lone surrogate U+DCFF"),
    "09_relation_int.jsonl": ("relation-int", "'relation' must be one of"),
    "11_duplicate_quarantine_id.jsonl": ("year-0001", "out of range"),
    "12_year9999_dec31_no_dates.jsonl": ("y9999", "out of range"),
}


def lines(path: Path) -> list[bytes]:
    return [line for line in path.read_bytes().splitlines() if line.strip()]


def good_ids(path: Path, bad: str) -> list[str]:
    """Doc ids of the file's good records, read from the raw lines (the bad line may not even decode)."""
    out = []
    for raw in lines(path):
        try:
            record = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            continue
        if record.get("doc_id") != bad:
            out.append(record["doc_id"])
    return out


@pytest.mark.parametrize("name", sorted(REJECTED))
def test_bad_record_is_rejected_with_its_reason_and_the_rest_kept(name: str) -> None:
    path = FAULTS / name
    record_id, reason = REJECTED[name]
    items = list(load_source(str(path)))
    docs = [i for i in items if isinstance(i, SourceDocument)]
    (rejected,) = [i for i in items if isinstance(i, Rejected)]
    assert [d.doc_id for d in docs] == good_ids(path, record_id)
    assert rejected.record_id.endswith(record_id) and reason in rejected.reason
    assert "\n" not in rejected.reason and rejected.stage == "source"
    json.dumps(rejected.payload, ensure_ascii=False).encode("utf-8")  # storable as it is: no surrogate left
    assert len(items) == len(lines(path))


def test_invalid_utf8_line_is_kept_escaped() -> None:
    (bad,) = [i for i in load_source(str(FAULTS / "03_invalid_utf8.jsonl")) if isinstance(i, Rejected)]
    raw = lines(FAULTS / "03_invalid_utf8.jsonl")[1]
    assert bad.payload["line"] == raw.decode("utf-8", "backslashreplace") and bad.payload["bytes"] == len(raw)
    assert "\\xff" in bad.payload["line"]


def test_non_string_series_id_is_written_as_text() -> None:
    docs = list(load_source(str(FAULTS / "08_series_id_int.jsonl")))
    assert [(d.doc_id, d.series_id) for d in docs] == [("ok-a", None), ("series-int", "5")]
    assert {p.series_id for p in plan_versions(docs, []).todo} == {"ok-a", "5"}


def test_duplicate_doc_id_in_a_batch_becomes_a_second_version() -> None:
    docs = list(load_source(str(FAULTS / "10_duplicate_doc_id_in_batch.jsonl")))
    plan = plan_versions(docs, [])
    ids = [p.doc_id for p in plan.todo]
    assert len(ids) == len(set(ids)) == 3 and plan.unchanged == []
    first, second = (p for p in plan.todo if p.source.doc_id == "dup-1")
    assert first.doc_id == "dup-1" and second.doc_id.startswith("dup-1@")
    assert (second.supersedes, second.relation, second.series_id) == ("dup-1", "supersedes", first.series_id)
    assert "version TWO" in second.source.text


def test_ten_megabyte_text_is_quarantined_at_once_or_split(tmp_path: Path) -> None:
    from diachron.ingest.sources import SourceLimits

    text = "The board met on 3 March 2021 and approved the plan.\n\n" * 200_000  # 10.8 MB
    path = tmp_path / "huge.jsonl"
    path.write_text(
        json.dumps({"doc_id": "huge", "text": text})
        + "\n"
        + json.dumps({"doc_id": "ok", "text": "A short note of 2021."})
        + "\n",
        encoding="utf-8",
    )
    t0 = time.perf_counter()
    huge, ok = load_source(str(path))
    assert time.perf_counter() - t0 < 5
    assert isinstance(huge, Rejected) and f"{len(text):,} characters is over the limit" in huge.reason
    assert len(huge.payload["text"]) < 3000 and isinstance(ok, SourceDocument)
    parts = list(load_source(str(path), limits=SourceLimits(max_text_chars=1_000_000, oversize="split")))
    assert [p.doc_id for p in parts[:-1]] == [f"huge#part-{k}" for k in range(1, 12)] and parts[
        -1
    ].doc_id == "ok"
    assert "".join(p.text for p in parts[:-1]) == text  # nothing lost, nothing repeated
    assert max(len(p.text) for p in parts[:-1]) <= 1_000_000
    assert all(p.text.endswith("\n\n") for p in parts[:-2])  # cut at paragraph breaks


def test_record_without_doc_id_gets_the_same_id_by_any_path(tmp_path: Path) -> None:
    folder = tmp_path / "a" / "b"
    folder.mkdir(parents=True)
    path = folder / "notes.jsonl"
    path.write_text(json.dumps({"title": "n", "text": "Filed on 2021-04-30."}) + "\n", encoding="utf-8")
    (tmp_path / "link.jsonl").symlink_to(path)
    typed = [
        str(path),
        str(tmp_path / "a" / ".." / "a" / "b" / "notes.jsonl"),
        str(tmp_path / "link.jsonl"),
        os.path.relpath(path),
    ]
    ids = {doc.doc_id for p in typed for doc in load_source(p)}
    (only,) = ids
    assert only.startswith("record-") and "notes" not in only and str(tmp_path) not in only


# --- --db refused up front ------------------------------------------------------------------------------


def test_db_that_is_a_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "db"
    path.write_text("not a database")
    with pytest.raises(DatabaseRefusedError, match="is a file"):
        check_database(str(path), dim=384)
    with pytest.raises(DatabaseRefusedError, match="lies under the file"):
        check_database(str(path / "sub"), dim=384)
    assert path.read_text() == "not a database"


@pytest.mark.integration
def test_foreign_lancedb_is_refused_and_left_unchanged(tmp_path: Path) -> None:
    import lancedb
    import pyarrow as pa

    other = lancedb.connect(str(tmp_path / "other"))
    other.create_table("vectors", pa.table({"id": [1], "v": [[0.1, 0.2]]}))
    with pytest.raises(DatabaseRefusedError, match=r"another application \(tables: vectors\)"):
        check_database(str(tmp_path / "other"), dim=384)
    clash = lancedb.connect(str(tmp_path / "clash"))
    clash.create_table("chunks", pa.table({"chunk_id": ["a"], "body": ["text"]}))
    with pytest.raises(DatabaseRefusedError, match="table 'chunks' has no column 'doc_id'"):
        check_database(str(tmp_path / "clash"), dim=384)
    for db, names in ((other, ["vectors"]), (clash, ["chunks"])):
        listed = db.list_tables()
        assert sorted(getattr(listed, "tables", listed)) == names  # nothing was added


def test_read_only_db_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DatabaseRefusedError, match="nearest existing parent '/sys'.* is not writable"):
        check_database("/sys/diachron-db", dim=384)  # sysfs: no one may create a file there, root neither
    folder = tmp_path / "ro"
    folder.mkdir()
    mounted = False
    if os.geteuid() == 0:  # root ignores mode bits: a read-only mount is what a read-only --db means for it
        mounted = (
            subprocess.run(
                ["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(folder)], capture_output=True
            ).returncode
            == 0
        )
    else:
        folder.chmod(0o555)
    try:
        if mounted or os.geteuid() != 0:
            with pytest.raises(DatabaseRefusedError, match="is not writable"):
                check_database(str(folder), dim=384)
            assert list(folder.iterdir()) == []
    finally:
        if mounted:
            subprocess.run(["umount", str(folder)], check=True)
        folder.chmod(0o755)


@pytest.mark.integration
def test_cli_refuses_a_bad_db_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "db"
    path.write_text("x")
    cli = str(Path(sys.executable).parent / "diachron")
    done = subprocess.run(
        [cli, "ingest", str(FAULTS / "01_overflow_9999_offset.jsonl"), "--db", str(path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    (line,) = [x for x in done.stderr.splitlines() if "--db" in x]
    assert "is a file" in line


# --- every fault in one real ingest ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from diachron.ingest.pipeline import IngestConfig, run_ingest

    tmp = tmp_path_factory.mktemp("faults")
    sources = []
    for name in sorted(p.name for p in FAULTS.glob("*.jsonl")):
        shutil.copyfile(FAULTS / name, tmp / name)
        sources.append(str(tmp / name))
    huge = tmp / "huge.jsonl"
    huge.write_text(
        json.dumps({"doc_id": "huge", "text": "The plan was approved in 2021. " * 340_000})
        + "\n"
        + json.dumps({"doc_id": "beside-huge", "text": "A short note filed in April 2021."})
        + "\n"
    )
    anon = tmp / "sub" / "anonymous.jsonl"
    anon.parent.mkdir()
    anon.write_text(json.dumps({"title": "no id", "text": "An undated memo about the warehouse."}) + "\n")
    sources += [str(huge), str(anon)]
    records_in = sum(len(lines(Path(s))) for s in sources)
    db = str(tmp / "db")
    t0 = time.perf_counter()
    summary = run_ingest(sources, IngestConfig(db_uri=db, num_cpus=2, optimize=False))
    seconds = time.perf_counter() - t0
    again = run_ingest(
        [str(tmp / "sub" / ".." / "sub" / "anonymous.jsonl")],
        IngestConfig(db_uri=db, num_cpus=2, optimize=False),
    )
    return {"db": db, "summary": summary, "again": again, "records_in": records_in, "seconds": seconds}


@pytest.mark.integration
def test_one_run_takes_every_fault_and_accounts_for_each_record(batch: dict[str, Any]) -> None:
    from accounting import assert_accounted

    tables = assert_accounted(batch["db"], batch["summary"], records_in=batch["records_in"])
    written = {r["doc_id"] for r in tables["documents"]}
    assert {"ok-1", "ok-a", "series-int", "dup-1", "inject", "beside-huge"} <= written
    assert len([d for d in written if d.startswith("dup-1@")]) == 1
    source_rows = {r["record_id"]: r for r in tables["quarantine"] if r["stage"] == "source"}
    for name, (record_id, reason) in REJECTED.items():
        (row,) = [r for rid, r in source_rows.items() if rid.endswith(record_id)]
        assert reason in row["reason"], name
        assert record_id not in written
    assert "huge" in source_rows and "huge" not in written
    assert batch["seconds"] < 900  # the 10 MB text no longer stalls a run for 32 minutes


@pytest.mark.integration
def test_same_file_by_another_path_writes_nothing_again(batch: dict[str, Any]) -> None:
    from accounting import assert_accounted

    again = batch["again"]
    assert (again.documents_written, again.documents_unchanged, again.chunks_written) == (0, 1, 0)
    assert_accounted(batch["db"], again, records_in=1)


@pytest.mark.integration
def test_one_sentence_claiming_two_centuries_is_not_event_time(batch: dict[str, Any]) -> None:
    import lancedb
    from diachron.retrieval.client import Client

    db = lancedb.connect(batch["db"])
    chunks = db.open_table("chunks").to_lance().to_table(columns=["doc_id", "intervals"]).to_pylist()
    spans = [iv for c in chunks if c["doc_id"] == "inject" for iv in c["intervals"]]
    assert spans and all(iv["start"] is None or iv["start"].year >= 2021 for iv in spans)
    flagged = [
        json.loads(r["payload_json"])
        for r in db.open_table("quarantine").to_lance().to_table().to_pylist()
        if r["stage"] == "validate_interval"
    ]
    assert any(
        p["interval"]["start"].startswith("1900") and p["interval"]["end"].startswith("2101") for p in flagged
    )
    result = Client(batch["db"]).search("What happened in 1950?", k=10)
    assert "inject" not in {e.doc_id for e in result.evidence}


# --- hostile folders: one bad file, one quarantine row (issue 32) ---------------------------------------

#: the hostile inputs of issue 32: record id -> a fragment of its one-line reason (None: any reason)
HOSTILE = {
    "loopA.txt": "unreadable file: Too many levels of symbolic links",
    "loopB.txt": "unreadable file: Too many levels of symbolic links",
    "random.txt": None,  # NUL bytes or invalid UTF-8, whichever comes first
    "nul.txt": "binary file: NUL byte at 8",
    "folder.txt": "unreadable file: Is a directory",
    "locked.txt": "unreadable file: Permission denied",
}
HOSTILE_LINES = {2: "[1, 2]", 3: '"x"', 4: "3", 5: "null"}


def hostile_sources(tmp: Path) -> tuple[list[str], int]:
    """A folder of hostile files beside two good ones and a JSONL of non-object lines; ``(sources, seen)``.

    Seen: the folder's 8 ``.txt``/``.md`` entries (``image.png`` is no text source, not seen) + 6 JSONL lines.
    """
    import random

    folder = tmp / "hostile"
    folder.mkdir()
    (folder / "good.txt").write_text("The depot opened on 3 March 2021.\n", encoding="utf-8")
    (folder / "good.md").write_text("# Note\n\nThe depot closed in May 2022.\n", encoding="utf-8")
    os.symlink("loopB.txt", folder / "loopA.txt")
    os.symlink("loopA.txt", folder / "loopB.txt")
    (folder / "random.txt").write_bytes(b"\xff" + random.Random(7).randbytes(4096))
    (folder / "nul.txt").write_bytes(b"In 2021 \x00\x00 the ledger was closed.")
    (folder / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
    (folder / "folder.txt").mkdir()
    locked = folder / "locked.txt"
    locked.write_text("A locked memo of 2021.", encoding="utf-8")
    locked.chmod(0)
    lines_path = tmp / "values.jsonl"
    rows = ['{"doc_id": "obj", "text": "An object line of June 2020."}', *HOSTILE_LINES.values()]
    rows.append(json.dumps({"doc_id": "nul-text", "text": "before\u0000after"}))
    lines_path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return [str(folder), str(lines_path)], 8 + len(rows)


def _as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def test_every_hostile_file_is_one_rejected_record_and_the_good_ones_are_read(tmp_path: Path) -> None:
    sources, seen = hostile_sources(tmp_path)
    items = [item for source in sources for item in load_source(source)]
    assert len(items) == seen  # nothing lost, nothing raised
    docs = {i.doc_id for i in items if isinstance(i, SourceDocument)}
    rejected = {i.record_id: i.reason for i in items if isinstance(i, Rejected)}
    assert {"good.txt", "good.md", "obj"} <= docs
    for record_id, reason in HOSTILE.items():
        if record_id == "locked.txt" and _as_root():
            assert "locked.txt" in docs  # root reads a mode-000 file: nothing to refuse
            continue
        assert reason is None or reason in rejected[record_id], (record_id, rejected[record_id])
        assert "\n" not in rejected[record_id]
    assert rejected["random.txt"].startswith(("binary file: NUL byte", "invalid UTF-8 at byte 0"))
    values = {
        k: v for k, v in rejected.items() if k.endswith(tuple(f"values.jsonl:{n}" for n in HOSTILE_LINES))
    }
    assert sorted(values.values()) == ["a JSONL line must be an object"] * 4
    assert rejected["nul-text"] == "'text' holds a NUL character at 6 (binary content, not text)"


@pytest.mark.integration
def test_a_hostile_folder_quarantines_each_bad_file_and_writes_the_rest(tmp_path: Path) -> None:
    from accounting import assert_accounted
    from diachron.ingest.pipeline import IngestConfig, run_ingest

    sources, seen = hostile_sources(tmp_path)
    db = str(tmp_path / "db")
    summary = run_ingest(sources, IngestConfig(db_uri=db, num_cpus=2, optimize=False))
    tables = assert_accounted(db, summary, records_in=seen)  # 0 lost: written + quarantined == seen
    written = {r["doc_id"] for r in tables["documents"]}
    source_rows = {r["record_id"] for r in tables["quarantine"] if r["stage"] == "source"}
    readable = {"good.txt", "good.md", "obj"} | ({"locked.txt"} if _as_root() else set())
    assert written == readable
    assert summary.documents_written + summary.documents_quarantined == seen
    assert len(source_rows) == seen - len(readable)


# --- query side (fixed by the owners of the parser and the edges; their inputs kept here) ---------------


def test_query_side_inputs_fail_fast_in_one_line() -> None:
    from datetime import UTC, datetime

    from diachron.retrieval.intent import QuestionTooLongError, parse_intent
    from diachron.schemas.time import format_instant

    from diachron.query import QueryInputError, check_question, parse_clock

    huge = "What happened in 2010? " * 4_500  # ≈100 KB, 4,500 dates: parsing it used to be quadratic
    t0 = time.perf_counter()
    with pytest.raises(QuestionTooLongError):
        parse_intent(huge, now=datetime(2026, 1, 1, tzinfo=UTC))
    assert time.perf_counter() - t0 < 1
    with pytest.raises(QueryInputError, match="the question is empty"):
        check_question("   ")
    with pytest.raises(QueryInputError, match="--now must be an ISO-8601 instant") as err:
        parse_clock("9999-12-31T23:00:00-05:00", "--now")  # past datetime.max once in UTC
    assert "\n" not in str(err.value)
    assert format_instant(datetime(1, 1, 1, tzinfo=UTC)) == "0001-01-01T00:00:00Z"
