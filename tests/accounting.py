"""The ingest invariant, checked after every ingest in the tests: records in = written + quarantined +
unchanged.

``assert_accounted(db_uri, summary, records_in=N)`` checks it for documents and for chunks, in the run
summary and in the tables (issue 13), plus the table facts it rests on: ids unique in every table, no
chunk without its document, no record both written and quarantined, every row of the run's summary
present under the run's id. ``records_in`` is counted by the test itself from its inputs (non-blank
source lines / records), never taken from the pipeline.

Record-level quarantine stages (the record is not written): ``source``, ``plan``, and ``annotate`` rows
without a chunk. ``lineage`` rows are notes about documents that *are* written; chunk-level rows
(``validate_chunk``) are chunk outcomes; interval rows (``validate_interval``, ``annotate`` flags on a
chunk) are notes about chunks that are written.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

RECORD_STAGES = {"source", "plan"}


def _table(db: Any, name: str, columns: list[str]) -> list[dict[str, Any]]:
    names = db.list_tables()
    names = set(getattr(names, "tables", names))
    if name not in names:
        return []
    return db.open_table(name).to_lance().to_table(columns=columns).to_pylist()


def _record_level(row: dict[str, Any]) -> bool:
    if row["stage"] in RECORD_STAGES:
        return True
    if row["stage"] != "annotate":
        return False
    payload = json.loads(row["payload_json"] or "{}")
    return "chunk_id" not in payload or payload.get("chunk_id") is None


def assert_accounted(db_uri: str, summary: Any, *, records_in: int) -> dict[str, Any]:
    """Assert the accounting invariant of one run; returns the table facts (for further asserts).

    Args:
        db_uri: the LanceDB the run wrote.
        summary: the run's :class:`~diachron.ingest.pipeline.RunSummary`.
        records_in: source records the test fed in (counted independently).

    Returns:
        ``{"documents", "chunks", "quarantine"}``: the tables' rows (selected columns) after the run.
    """
    import lancedb

    db = lancedb.connect(db_uri)
    documents = _table(db, "documents", ["doc_id", "run_id"])
    chunks = _table(db, "chunks", ["chunk_id", "doc_id", "run_id"])
    quarantine = _table(
        db, "quarantine", ["quarantine_id", "run_id", "stage", "record_id", "reason", "payload_json"]
    )
    run = summary.run_id

    # ids are unique in every table
    for name, rows, key in (
        ("documents", documents, "doc_id"),
        ("chunks", chunks, "chunk_id"),
        ("quarantine", quarantine, "quarantine_id"),
    ):
        dup = [k for k, n in Counter(r[key] for r in rows).items() if n > 1]
        assert not dup, f"{name}: {len(dup)} ids on two rows, e.g. {dup[:3]}"

    # the summary's counts are the run's rows
    written_docs = {r["doc_id"] for r in documents if r["run_id"] == run}
    written_chunks = [r for r in chunks if r["run_id"] == run]
    assert len(written_docs) == summary.documents_written, (len(written_docs), summary.documents_written)
    assert len(written_chunks) == summary.chunks_written, (len(written_chunks), summary.chunks_written)

    # no chunk without its document; one outcome per record
    doc_ids = {r["doc_id"] for r in documents}
    orphans = {r["doc_id"] for r in chunks} - doc_ids
    assert not orphans, f"chunks without a document: {sorted(orphans)[:3]}"
    rejected = {r["record_id"] for r in quarantine if _record_level(r)}
    both = written_docs & rejected
    assert not both, f"records both written and quarantined: {sorted(both)[:3]}"
    empty = written_docs - {r["doc_id"] for r in written_chunks}
    assert not empty, f"documents written with no chunk: {sorted(empty)[:3]}"

    # records in = written + quarantined + unchanged (documents), seen = written + quarantined + unchanged
    # (chunks)
    quarantined_docs = getattr(summary, "documents_quarantined", None)
    if quarantined_docs is None:  # a summary without the field: count the run's record-level rows
        quarantined_docs = len(
            {r["record_id"] for r in quarantine if r["run_id"] == run and _record_level(r)}
        )
    assert summary.documents_seen == records_in, (summary.documents_seen, records_in)
    assert records_in == summary.documents_written + quarantined_docs + summary.documents_unchanged, (
        records_in,
        summary.documents_written,
        quarantined_docs,
        summary.documents_unchanged,
    )
    added = {r["record_id"] for r in quarantine if r["run_id"] == run and _record_level(r)}
    assert len(added) <= quarantined_docs, (len(added), quarantined_docs)
    if hasattr(summary, "chunks_seen") and summary.chunks_seen:
        assert (
            summary.chunks_seen
            == summary.chunks_written + summary.chunks_quarantined + summary.chunks_unchanged
        ), (summary.chunks_seen, summary.chunks_written, summary.chunks_quarantined, summary.chunks_unchanged)
    return {"documents": documents, "chunks": chunks, "quarantine": quarantine}
