"""Typed records of the bitemporal tables, and the Arrow schemas derived from them.

Each table (``documents``, ``chunks``, ``quarantine``, ``runs``) is one dataclass; :func:`arrow_schema`
derives its Arrow schema from the type hints, so the dataclass is the single source of the contract.
All instants are ``timestamp[us, tz=UTC]``; intervals are half-open ``[start, end)`` (docs/design.md).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pyarrow as pa
from diachron.schemas.time import Interval

__all__ = [
    "ChunkRecord",
    "DocumentRecord",
    "QuarantineRecord",
    "RunRecord",
    "INTERVAL_TYPE",
    "TABLES",
    "arrow_schema",
    "intervals_from_arrow",
    "intervals_to_arrow",
]

TIMESTAMP = pa.timestamp("us", tz="UTC")
#: One chunk interval. ``kind``: ``event`` | ``state`` | ``state_start`` | ``state_end`` | ``mention`` |
#: ``inherited`` (null = ``event``, rows written before kinds existed); ``provenance``: null for an interval
#: as written, else how a bound was derived (``inferred:next-change``, ``inferred:previous-change``,
#: ``inferred:timeline``, ``inferred:open``, ``inferred:open-past``, ``inherited:section``,
#: ``inherited:document``, ``published``); see :mod:`diachron.ingest.annotation.spans`.
INTERVAL_TYPE = pa.struct(
    [
        ("start", TIMESTAMP),
        ("end", TIMESTAMP),
        ("granularity", pa.string()),
        ("text", pa.string()),
        ("kind", pa.string()),
        ("provenance", pa.string()),
    ]
)


class Vector:
    """Marker type: a fixed-size float32 embedding column (its dimension is given at schema time)."""


_SCALARS: dict[Any, pa.DataType] = {
    str: pa.string(),
    int: pa.int64(),
    float: pa.float64(),
    bool: pa.bool_(),
    datetime: TIMESTAMP,
}


@dataclass(slots=True)
class DocumentRecord:
    """One version of one document (table ``documents``; key ``doc_id``).

    ``valid_from``/``valid_until``: valid time of this version, half-open, ``None`` = open.
    ``recorded_at``: transaction time, set at first write and never rewritten.
    ``published_at_source``: ``metadata`` | ``llm`` | ``rules`` | ``unknown``.
    """

    doc_id: str
    series_id: str
    title: str
    text: str
    content_sha256: str
    published_at: datetime | None
    published_at_source: str
    source_timezone: str | None
    abstract: str
    version: str | None
    supersedes: str | None
    relation: str | None
    valid_from: datetime | None
    valid_until: datetime | None
    source_uri: str
    metadata_json: str
    annotator: str
    recorded_at: datetime
    run_id: str


@dataclass(slots=True)
class ChunkRecord:
    """One chunk with its event time and embedding (table ``chunks``; key ``chunk_id``).

    ``intervals``: the chunk's validity spans (stage 2 intervals with their ``kind`` and derived spans with
    their ``provenance``, see :data:`INTERVAL_TYPE`), or the span it inherits, or the publication day;
    empty when ``time_status`` is ``unknown``. ``time_source``: ``event`` (own intervals),
    ``inherited:section`` / ``inherited:document`` (no own date: the section's or document's span),
    ``published`` (the publication day) or ``unknown``. ``event_start``/``event_end``: the hull of
    ``intervals`` (null start = open past, null end = open future), used as a coarse prefilter.
    """

    chunk_id: str
    doc_id: str
    series_id: str
    seq: int
    text: str
    token_count: int
    published_at: datetime | None
    intervals: list[Interval]
    event_start: datetime | None
    event_end: datetime | None
    time_source: str
    time_status: str
    valid_from: datetime | None
    valid_until: datetime | None
    annotator: str
    embedder: str
    recorded_at: datetime
    run_id: str
    vector: Vector = field(default=None)  # type: ignore[assignment]


@dataclass(slots=True)
class QuarantineRecord:
    """A record that failed validation or processing (table ``quarantine``), kept with its reason."""

    quarantine_id: str
    run_id: str
    stage: str
    record_id: str
    reason: str
    payload_json: str
    recorded_at: datetime


@dataclass(slots=True)
class RunRecord:
    """One ingest run (table ``runs``): counts and configuration."""

    run_id: str
    started_at: datetime
    finished_at: datetime
    sources_json: str
    config_json: str
    embedder: str
    embedding_dim: int
    documents_seen: int
    documents_written: int
    chunks_written: int
    quarantined: int
    status: str


TABLES: dict[str, type] = {
    "documents": DocumentRecord,
    "chunks": ChunkRecord,
    "quarantine": QuarantineRecord,
    "runs": RunRecord,
}


def _arrow_type(hint: Any, dim: int | None) -> tuple[pa.DataType, bool]:
    nullable = False
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        nullable, hint = True, args[0]
    if hint is Vector:
        if dim is None:
            raise ValueError("a vector column needs the embedding dimension")
        return pa.list_(pa.float32(), dim), False
    if typing.get_origin(hint) is list and typing.get_args(hint) == (Interval,):
        return pa.list_(INTERVAL_TYPE), False
    return _SCALARS[hint], nullable


def arrow_schema(record: type, *, dim: int | None = None) -> pa.Schema:
    """The Arrow schema of a record type; ``dim`` is the embedding dimension for vector columns."""
    hints = typing.get_type_hints(record)
    fields = []
    for f in dataclasses.fields(record):
        dtype, nullable = _arrow_type(hints[f.name], dim)
        fields.append(pa.field(f.name, dtype, nullable=nullable))
    return pa.schema(fields)


def intervals_to_arrow(
    intervals: list[Interval],
    texts: list[str | None] | None = None,
    *,
    kinds: list[str | None] | None = None,
    provenance: list[str | None] | None = None,
) -> list[dict[str, Any]]:
    """Intervals as Arrow struct rows ``{start, end, granularity, text, kind, provenance}``.

    ``texts``, ``kinds`` and ``provenance`` are parallel to ``intervals`` (default: all ``None``; a null
    kind reads as ``event``).
    """
    n = len(intervals)
    texts, kinds, provenance = texts or [None] * n, kinds or [None] * n, provenance or [None] * n
    return [
        {
            "start": i.start,
            "end": i.end,
            "granularity": i.granularity.value,
            "text": t,
            "kind": k,
            "provenance": p,
        }
        for i, t, k, p in zip(intervals, texts, kinds, provenance, strict=True)
    ]


def intervals_from_arrow(rows: list[dict[str, Any]] | None) -> list[Interval]:
    """Inverse of :func:`intervals_to_arrow` (surface text, kind and provenance are dropped)."""
    return [Interval(r["start"], r["end"], r["granularity"]) for r in rows or []]
