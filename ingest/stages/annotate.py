"""The annotate stage: documents -> chunks with stage-1 and stage-2 time annotation (no vector yet)."""

from __future__ import annotations

import json
import logging
from datetime import datetime
from typing import Any

import pyarrow as pa
from diachron.ingest.annotation.document import AnnotatedDocument, annotate_document, build_chunker, hull
from diachron.ingest.stages.base import (
    ANNOTATED_SCHEMA,
    CHUNK,
    DOCUMENT,
    FAILED,
    PENDING_QUARANTINE,
    ROW_KIND,
    STAGED_DOCUMENTS,
    Stage,
    is_record_fault,
)
from diachron.ingest.stages.config import StageConfig, build_annotator
from diachron.ingest.stages.quarantine import one_line
from diachron.schemas.ids import chunk_id as make_chunk_id
from diachron.schemas.records import intervals_to_arrow

__all__ = ["AnnotateStage"]

log = logging.getLogger(__name__)

#: the ``documents`` fields the annotate stage copies from its input when it stages document rows
_STAGED_INPUTS = (
    "content_sha256",
    "source_timezone",
    "version",
    "supersedes",
    "relation",
    "source_uri",
    "metadata_json",
)


class AnnotateStage(Stage):
    """Documents -> chunks with stage-1 and stage-2 time annotation (:func:`annotate_document`).

    REQUIRES: doc_id, series_id, title, text, published_at, valid_from, valid_until (with a staging area
    also the other ``documents`` fields: content_sha256, source_timezone, version, supersedes, relation,
    source_uri, metadata_json). Returns rows of :data:`~diachron.ingest.stages.base.ANNOTATED_SCHEMA`:
    ``chunk`` rows, one ``failed`` row per document whose annotation raised (or panicked), and with a
    staging area one ``document`` row carrying the batch's staged ``documents`` fragments.
    """

    REQUIRES = ("doc_id", "series_id", "title", "text", "published_at", "valid_from", "valid_until")

    def __init__(
        self,
        config: StageConfig,
        staging: Any = None,
        run_id: str = "",
        placeholder_time: datetime | None = None,
    ) -> None:
        self.chunker = build_chunker(config.embedder, config.max_tokens)
        self.annotator = build_annotator(config)
        self.staging, self.run_id, self.placeholder = staging, run_id, placeholder_time

    def requires(self) -> tuple[str, ...]:
        return self.REQUIRES + (_STAGED_INPUTS if self.staging is not None else ())

    def process(self, batch: pa.Table) -> pa.Table:
        rows: list[dict[str, Any]] = []
        documents: list[dict[str, Any]] = []
        for doc in batch.to_pylist():
            try:
                annotated = self._annotate(doc)
            except BaseException as exc:  # one bad document (even a Rust panic) must not stop the batch
                if not is_record_fault(exc):
                    raise
                log.warning("annotation failed for %s: %s", doc["doc_id"], exc)
                rows.append(_failed_row(doc, one_line("annotation failed", exc)))
                continue  # one outcome per record: quarantined, never also written
            rows.extend(_chunk_rows(doc, annotated))
            if self.staging is not None:
                documents.append(self._document_row(doc, annotated))
        if self.staging is not None:
            rows.append(self._staged_row(documents))
        return pa.Table.from_pylist(rows, schema=ANNOTATED_SCHEMA)

    def _annotate(self, doc: dict[str, Any]) -> AnnotatedDocument:
        return annotate_document(
            doc["text"],
            doc_id=doc["doc_id"],
            title=doc["title"],
            published_at=doc["published_at"],
            annotator=self.annotator,
            chunker=self.chunker,
        )

    def _staged_row(self, documents: list[dict[str, Any]]) -> dict[str, Any]:
        """Stage the batch's ``documents`` rows as fragments; the ``document`` row that reports them."""
        from diachron.schemas.records import DocumentRecord, arrow_schema

        table = pa.Table.from_pylist(documents, schema=arrow_schema(DocumentRecord))
        staged = self.staging.write("documents", table)
        meta = {"documents": staged, "documents_staged": len(documents)}
        return {ROW_KIND: DOCUMENT, "text": "", STAGED_DOCUMENTS: json.dumps(meta)}

    def _document_row(self, doc: dict[str, Any], annotated: AnnotatedDocument) -> dict[str, Any]:
        """The ``documents`` row of an annotated document."""
        stage1 = annotated.stage1
        notes = annotated.notes
        return {
            **{k: doc[k] for k in ("doc_id", "series_id", "title", "text", "valid_from", "valid_until")},
            **{k: doc.get(k) for k in _STAGED_INPUTS},
            "published_at": stage1.published_at,
            "published_at_source": stage1.published_at_source,
            "abstract": stage1.abstract or "",
            "annotator": notes[0].annotator if notes else "none",
            "recorded_at": self.placeholder,
            "run_id": self.run_id,
        }


def _chunk_rows(doc: dict[str, Any], annotated: AnnotatedDocument) -> list[dict[str, Any]]:
    """The ``chunk`` rows of an annotated document."""
    stage1 = annotated.stage1
    rows = []
    for chunk, note, when in zip(annotated.chunks, annotated.notes, annotated.times, strict=True):
        start, end = hull([s.interval for s in when.spans])
        flags = [{"stage": "annotate", "reason": f} for f in note.flags]
        rows.append(
            {
                ROW_KIND: CHUNK,
                "chunk_id": make_chunk_id(doc["doc_id"], chunk.seq, chunk.text),
                "doc_id": doc["doc_id"],
                "series_id": doc["series_id"],
                "seq": chunk.seq,
                "text": chunk.text,
                "token_count": chunk.token_count,
                "published_at": stage1.published_at,
                "intervals": _span_rows(when.spans),
                "event_start": start,
                "event_end": end,
                "time_source": when.time_source,
                "time_status": when.time_status,
                "valid_from": doc["valid_from"],
                "valid_until": doc["valid_until"],
                "annotator": note.annotator,
                "published_at_source": stage1.published_at_source,
                "abstract": stage1.abstract,
                PENDING_QUARANTINE: json.dumps(flags) if flags else None,
            }
        )
    return rows


def _span_rows(spans: list[Any]) -> list[dict[str, Any]]:
    return intervals_to_arrow(
        [s.interval for s in spans],
        [s.text for s in spans],
        kinds=[s.kind for s in spans],
        provenance=[s.provenance for s in spans],
    )


def _failed_row(doc: dict[str, Any], reason: str) -> dict[str, Any]:
    """The ``failed`` row of a document whose annotation raised: its quarantine entry, no chunk."""
    payload = {"doc_id": doc["doc_id"], "text": (doc["text"] or "")[:2000]}
    return {
        ROW_KIND: FAILED,
        "doc_id": doc["doc_id"],
        "series_id": doc["series_id"],
        "text": "",
        PENDING_QUARANTINE: json.dumps([{"stage": "annotate", "reason": reason, "payload": payload}]),
    }
