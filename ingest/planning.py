"""Version planning of a staged run, on a projection without texts, and its join back onto the documents.

:func:`plan_staged` runs as one Ray task (not in the driver): it reads the staged ``incoming`` table's
small columns (``seq``, ids, ``content_sha256``, lineage fields, validity; never ``text``) and the stored
``documents`` ids and hashes, and runs :func:`diachron.ingest.versioning.plan_versions` on them — the
unchanged/new/changed decision needs each document's series, and lineage (supersedes chains, version
strings resolved in scope) needs the whole batch, so this part sees the whole projection. It stages the
lineage notes and the duplicate-id records as quarantine rows and returns the plan as an Arrow table
(``seq`` → final ``doc_id``, series, predecessor, relation, ``valid_until``, metadata notes), which stays in
Ray's object store; the driver receives counts and fragment metadata only.

:func:`planned_block` (a Ray Data step on the workers) builds block ``k`` of the annotate stage's input:
the plan's rows ``k × batch_size …`` taken from the staged documents by row offset (unchanged and duplicate
documents are not in the plan), with their final ids and lineage.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from diachron.ingest.sources import SourceDocument
from diachron.ingest.versioning import (
    STORED_COLUMNS,
    LineageConfig,
    PlannedDocument,
    StoredVersion,
    plan_versions,
    select_stored,
)
from diachron.schemas.lineage import DERIVED_UNTIL_KEY, SERIES_INFERRED_KEY, UNRESOLVED_KEY

__all__ = ["DOC_INPUT_SCHEMA", "PLAN_SCHEMA", "plan_staged", "planned_block", "stored_versions"]

TS = pa.timestamp("us", tz="UTC")
#: the plan: one row per document to process (``p_notes``: JSON of the metadata keys planning adds)
PLAN_SCHEMA = pa.schema(
    [
        ("seq", pa.int64()),
        ("offset", pa.int64()),
        ("p_doc_id", pa.string()),
        ("p_series_id", pa.string()),
        ("p_supersedes", pa.string()),
        ("p_relation", pa.string()),
        ("p_valid_until", TS),
        ("p_notes", pa.string()),
    ]
)
#: the annotate stage's input: every ``documents`` field the stages do not compute
DOC_INPUT_SCHEMA = pa.schema(
    [
        ("doc_id", pa.string()),
        ("series_id", pa.string()),
        ("title", pa.string()),
        ("text", pa.string()),
        ("content_sha256", pa.string()),
        ("published_at", TS),
        ("source_timezone", pa.string()),
        ("version", pa.string()),
        ("supersedes", pa.string()),
        ("relation", pa.string()),
        ("valid_from", TS),
        ("valid_until", TS),
        ("source_uri", pa.string()),
        ("metadata_json", pa.string()),
    ]
)
_PROJECTION = [
    "seq",
    "doc_id",
    "content_sha256",
    "series_id",
    "version",
    "supersedes",
    "relation",
    "source_uri",
    "valid_from",
    "valid_until",
    "superseded_by",
]
_NOTES = (SERIES_INFERRED_KEY, UNRESOLVED_KEY, DERIVED_UNTIL_KEY)
_SEQ = "\x00seq"  # the projection's position, carried through planning in metadata


def stored_versions(
    store: Any, docs: list[SourceDocument], dead: set[str], lineage: LineageConfig | None = None
) -> list[StoredVersion]:
    """The stored versions planning ``docs`` needs (:func:`~diachron.ingest.versioning.select_stored`: same
    series, named ids, shared id prefixes); rows of dead (uncommitted) runs are not stored versions."""
    table = store.table("documents")
    if table.count_rows() == 0:
        return []
    data = table.to_lance().to_table(columns=[*STORED_COLUMNS, "run_id"])
    if dead:
        data = data.filter(pc.invert(pc.is_in(data["run_id"], value_set=pa.array(sorted(dead), pa.string()))))
    return select_stored(data, docs, lineage)


def _projection(incoming: Any) -> tuple[list[SourceDocument], list[str]]:
    """Text-free documents (already field-mapped) in source order, and their hashes; each document's
    ``seq`` and row offset in ``incoming`` ride along in its metadata."""
    table = incoming.to_table(columns=_PROJECTION)
    table = table.append_column("offset", pa.array(range(table.num_rows), pa.int64())).sort_by("seq")
    docs, hashes = [], []
    for r in table.to_pylist():
        meta: dict[str, Any] = {_SEQ: (r["seq"], r["offset"])}
        if r["superseded_by"] is not None:
            meta["superseded_by"] = r["superseded_by"]
        docs.append(
            SourceDocument(
                doc_id=r["doc_id"],
                title="",
                text="",
                source_uri=r["source_uri"],
                series_id=r["series_id"],
                version=r["version"],
                supersedes=r["supersedes"],
                relation=r["relation"],
                valid_from=r["valid_from"],
                valid_until=r["valid_until"],
                metadata=meta,
            )
        )
        hashes.append(r["content_sha256"])
    return docs, hashes


def _unique_ids(todo: list[PlannedDocument]) -> tuple[list[PlannedDocument], list[PlannedDocument]]:
    """Split off documents whose ``doc_id`` an earlier document of the batch already has (never two rows)."""
    seen: set[str] = set()
    keep, dups = [], []
    for p in todo:
        (dups if p.doc_id in seen else keep).append(p)
        seen.add(p.doc_id)
    return keep, dups


def plan_staged(
    incoming_uri: str,
    db_uri: str,
    dim: int,
    storage_options: dict[str, str] | None,
    dead: set[str],
    staging: Any,
    run_id: str,
    started: datetime,
) -> tuple[pa.Table, dict[str, Any]]:
    """Plan the staged documents of a run (a Ray task; see the module docstring).

    Returns ``(plan, info)``: the plan (:data:`PLAN_SCHEMA`, documents to process), and ``info`` with
    ``todo``, ``unchanged``, ``duplicates`` (counts) and ``quarantine`` (staged fragment metadata of the
    lineage notes and duplicate-id records).
    """
    import lance
    from diachron.ingest.stages import quarantine_row
    from diachron.ingest.store import Store
    from diachron.schemas.records import QuarantineRecord, arrow_schema

    incoming = lance.dataset(incoming_uri, storage_options=storage_options)
    docs, hashes = _projection(incoming)
    stored = stored_versions(Store(db_uri, dim=dim, storage_options=storage_options), docs, dead)
    plan = plan_versions(docs, stored, hashes=hashes)  # fields were mapped on the workers
    todo, duplicates = _unique_ids(plan.todo)
    rows = [quarantine_row(r.stage, r.record_id, r.reason, r.payload, run_id, started) for r in plan.issues]
    rows += _duplicate_rows(incoming, duplicates, run_id, started)
    unique = list({q["quarantine_id"]: q for q in rows}.values())
    fragments = staging.write(
        "quarantine", pa.Table.from_pylist(unique, schema=arrow_schema(QuarantineRecord))
    )
    out = pa.Table.from_pylist([_plan_row(p) for p in todo], schema=PLAN_SCHEMA)
    info = {
        "todo": len(todo),
        "unchanged": len(plan.unchanged),
        "duplicates": len(duplicates),
        "quarantine": fragments,
    }
    return out, info


def _duplicate_rows(
    incoming: Any, duplicates: list[PlannedDocument], run_id: str, started: datetime
) -> list[dict[str, Any]]:
    """One ``plan`` quarantine row per record whose ``doc_id`` an earlier record of the batch holds."""
    from diachron.ingest.stages import quarantine_row

    if not duplicates:
        return []
    offsets = [p.source.metadata[_SEQ][1] for p in duplicates]
    texts = incoming.take(offsets, columns=["text"]).column("text").to_pylist()
    reason = "duplicate doc_id in the batch: an earlier record has this id with other content"
    return [
        quarantine_row("plan", p.doc_id, reason, {"doc_id": p.doc_id, "text": t[:2000]}, run_id, started)
        for p, t in zip(duplicates, texts, strict=True)
    ]


def _plan_row(p: PlannedDocument) -> dict[str, Any]:
    """The plan row (:data:`PLAN_SCHEMA`) of one document to process."""
    notes = {k: p.source.metadata[k] for k in _NOTES if k in p.source.metadata}
    return {
        "seq": p.source.metadata[_SEQ][0],
        "offset": p.source.metadata[_SEQ][1],
        "p_doc_id": p.doc_id,
        "p_series_id": p.series_id,
        "p_supersedes": p.supersedes,
        "p_relation": p.relation,
        "p_valid_until": p.source.valid_until,
        "p_notes": json.dumps(notes) if notes else None,
    }


def planned_block(
    batch: pa.Table, *, plan: Any, incoming_uri: str, storage_options: dict[str, str] | None, batch_size: int
) -> pa.Table:
    """Ray Data step (a worker): the annotate input of block ``batch["block"][0]`` (:data:`DOC_INPUT_SCHEMA`).

    Block ``k`` is the plan's rows ``[k × batch_size, (k + 1) × batch_size)`` (source order); their
    documents are taken from the staged ``incoming`` table by row offset, final ids and lineage from the
    plan. ``plan``: the plan table or its Ray ``ObjectRef`` (read from the local object store).
    """
    import lance
    import ray

    table = ray.get(plan) if isinstance(plan, ray.ObjectRef) else plan
    parts = []
    for k in batch.column("block").to_pylist():
        rows = table.slice(k * batch_size, batch_size)
        docs = lance.dataset(incoming_uri, storage_options=storage_options).take(
            rows.column("offset").to_pylist()
        )
        parts.append(_planned(docs, rows))
    return pa.concat_tables(parts) if parts else DOC_INPUT_SCHEMA.empty_table()


def _planned(docs: pa.Table, rows: pa.Table) -> pa.Table:
    """Staged documents (in the plan rows' order) with the plan's ids, lineage and metadata notes."""
    merged = [
        m if n is None else json.dumps({**json.loads(m), **json.loads(n)}, default=str, sort_keys=True)
        for m, n in zip(
            docs.column("metadata_json").to_pylist(), rows.column("p_notes").to_pylist(), strict=True
        )
    ]
    columns = {name: docs.column(name) for name in DOC_INPUT_SCHEMA.names if name in docs.schema.names}
    columns.update(
        doc_id=rows.column("p_doc_id"),
        series_id=rows.column("p_series_id"),
        supersedes=rows.column("p_supersedes"),
        relation=rows.column("p_relation"),
        valid_until=rows.column("p_valid_until"),
        metadata_json=pa.array(merged, pa.string()),
    )
    return pa.table({name: columns[name] for name in DOC_INPUT_SCHEMA.names}, schema=DOC_INPUT_SCHEMA)
