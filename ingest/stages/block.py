"""The last step of the pipeline: a block's chunk and quarantine rows written as staged Lance fragments."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pyarrow as pa
from diachron.ingest.stages.base import (
    CHUNK,
    DOCUMENT,
    EMBED_NODE,
    FAILED,
    PENDING_QUARANTINE,
    REJECTED,
    ROW_KIND,
    STAGED_DOCUMENTS,
)
from diachron.ingest.stages.quarantine import quarantine_row

__all__ = ["stage_block"]


@dataclass
class _Block:
    """What one block holds on its way to the staged fragments."""

    run_id: str
    recorded_at: datetime
    chunks: list[dict[str, Any]] = field(default_factory=list)
    quarantine: dict[str, dict[str, Any]] = field(default_factory=dict)
    documents: list[str] = field(default_factory=list)
    nodes: set[str] = field(default_factory=set)
    counts: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(
            ("chunks_in", "chunks_rejected", "documents_failed", "documents_staged"), 0
        )
    )

    def add_quarantine(self, row: dict[str, Any]) -> None:
        """The row's pending quarantine entries as ``quarantine`` rows (one per id)."""
        record = row["chunk_id"] or row["doc_id"]
        for entry in json.loads(row[PENDING_QUARANTINE]) if row[PENDING_QUARANTINE] else []:
            payload = entry.get("payload") or {"chunk_id": row["chunk_id"], "doc_id": row["doc_id"]}
            q = quarantine_row(
                entry["stage"], record, entry["reason"], payload, self.run_id, self.recorded_at
            )
            self.quarantine.setdefault(q["quarantine_id"], q)

    def take(self, row: dict[str, Any], extra: dict[str, Any]) -> None:
        """Sort one stage row into the block's chunks, quarantine, staged documents and counts."""
        kind = row[ROW_KIND]
        self.add_quarantine(row)
        if row.get(EMBED_NODE):
            self.nodes.add(row[EMBED_NODE])
        if kind == DOCUMENT:
            meta = json.loads(row[STAGED_DOCUMENTS])
            self.documents.extend(meta["documents"])
            self.counts["documents_staged"] += meta["documents_staged"]
        elif kind == FAILED:
            self.counts["documents_failed"] += 1
        elif kind in (CHUNK, REJECTED):
            self.counts["chunks_in"] += 1
            if kind == REJECTED:
                self.counts["chunks_rejected"] += 1
            else:
                self.chunks.append({**row, **extra})


def stage_block(
    batch: pa.Table, *, staging: Any, run_id: str, embedder_id: str, dim: int, placeholder_time: datetime
) -> pa.Table:
    """Last pipeline step (a Ray task per block): write the block's chunk and quarantine rows as staged
    fragments; return one small row of fragment metadata and counts for the driver.

    Counts: ``chunks_in`` (chunks produced), ``chunks_rejected`` (``rejected`` rows: quarantined, not
    written), ``documents_failed`` (``failed`` rows: annotation failed, quarantined, no document row),
    ``documents_staged`` (from the ``document`` rows); ``embed_nodes``: the Ray nodes that embedded them.
    """
    from diachron.schemas.records import ChunkRecord, QuarantineRecord, arrow_schema

    block = _Block(run_id, placeholder_time)
    extra = {"embedder": embedder_id, "recorded_at": placeholder_time, "run_id": run_id}
    for row in batch.to_pylist():
        block.take(row, extra)
    chunks = [{k: row[k] for k in ChunkRecord.__slots__} for row in block.chunks]
    chunk_table = pa.Table.from_pylist(chunks, schema=arrow_schema(ChunkRecord, dim=dim))
    if chunk_table.num_rows:
        chunk_table = chunk_table.sort_by([("event_start", "ascending")])  # time order within the fragment
    quarantine = pa.Table.from_pylist(list(block.quarantine.values()), schema=arrow_schema(QuarantineRecord))
    out = {
        "documents": json.dumps(block.documents),
        "chunks": json.dumps(staging.write("chunks", chunk_table)),
        "quarantine": json.dumps(staging.write("quarantine", quarantine)),
        "embed_nodes": json.dumps(sorted(block.nodes)),
        **block.counts,
    }
    return pa.Table.from_pylist([out])
