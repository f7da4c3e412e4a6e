"""Typed retrieval results: evidence items (citation cards), the trace, and the search result."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from diachron.schemas.intent import TemporalIntent
from diachron.schemas.lineage import Signal
from diachron.schemas.time import Interval, format_instant

__all__ = ["Evidence", "SearchResult", "SearchTrace", "SCHEMA_VERSION"]

SCHEMA_VERSION = "1.0"


@dataclass(frozen=True, slots=True)
class Evidence:
    """One retrieved chunk with its time metadata (a citation card).

    Attributes:
        score: cosine similarity to the query embedding (higher is closer), in [-1, 1].
        intervals: the chunk's event intervals, half-open UTC.
        time_source: ``event`` (stage 2 found intervals) or ``published`` (inherits the publication day).
        valid_from/valid_until: valid time of the document version (``None`` = open).
        recorded_at: transaction time of the chunk row.
        rank: 1-based position in the ranking (similarity + temporal focus) before chronological ordering.
        superseded_by: doc id of the next version of the same series in the lineage (as of the query's
            transaction time), when one is stored.
        corrected_by: doc id of a correction of this version (as of), when one is stored.
    """

    chunk_id: str
    doc_id: str
    series_id: str
    title: str
    text: str
    score: float
    published_at: datetime | None
    intervals: tuple[Interval, ...]
    time_source: str
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    recorded_at: datetime | None = None
    superseded_by: str | None = None
    corrected_by: str | None = None
    rank: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "chunk_id": self.chunk_id, "doc_id": self.doc_id, "series_id": self.series_id, "title": self.title,
            "published_at": format_instant(self.published_at), "intervals": [i.to_dict() for i in self.intervals],
            "time_source": self.time_source, "valid_from": format_instant(self.valid_from),
            "valid_until": format_instant(self.valid_until), "recorded_at": format_instant(self.recorded_at),
            "superseded_by": self.superseded_by, "corrected_by": self.corrected_by, "score": round(self.score, 6), "rank": self.rank,
            "text": self.text,
        }


@dataclass(frozen=True, slots=True)
class SearchTrace:
    """How a result was obtained.

    Attributes:
        filter: the typed time filter applied (intervals, as_of), as JSON-ready values.
        candidates_after_filter: chunks whose intervals overlap the query intervals (exact count).
        anchors: number of e_hypo anchors embedded (0 = the core query alone).
        rejected_examples: a few chunks that were similar but outside the time filter (chunk_id, why).
        seconds: wall time of the search, by step.
    """

    filter: dict[str, Any]
    candidates_after_filter: int
    anchors: int
    anchor_granularity: str | None
    rejected_examples: tuple[dict[str, Any], ...] = ()
    seconds: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"filter": self.filter, "candidates_after_filter": self.candidates_after_filter,
                "anchors": self.anchors, "anchor_granularity": self.anchor_granularity,
                "rejected_examples": list(self.rejected_examples),
                "seconds": {k: round(v, 4) for k, v in self.seconds.items()}}


@dataclass(frozen=True, slots=True)
class SearchResult:
    """Intent, chronologically ordered evidence, trace and lineage signals (conflicts, gaps, clarification).

    ``to_dict`` is the CLI's ``--json`` form; ``signals`` is a list of objects tagged by ``type``.
    """

    intent: TemporalIntent
    evidence: tuple[Evidence, ...]
    trace: SearchTrace
    signals: tuple[Signal, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"schema_version": SCHEMA_VERSION, "intent": self.intent.to_dict(),
                "evidence": [e.to_dict() for e in self.evidence], "trace": self.trace.to_dict(),
                "signals": [s.to_dict() for s in self.signals]}

    def to_arrow(self) -> Any:
        """Evidence as a ``pyarrow.Table`` (one row per item; intervals as a list of structs)."""
        import pyarrow as pa

        rows = [e.to_dict() for e in self.evidence]
        return pa.Table.from_pylist(rows) if rows else pa.table({"chunk_id": pa.array([], pa.string())})

    def to_pandas(self) -> Any:
        """Evidence as a ``pandas.DataFrame``."""
        return self.to_arrow().to_pandas()
