"""Typed retrieval results: evidence items (citation cards), the trace, and the search result."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

from diachron.schemas.intent import Relation, TemporalIntent
from diachron.schemas.lineage import (
    Clarification,
    ConflictKind,
    ConflictSignal,
    GapSignal,
    Signal,
    VersionSpan,
)
from diachron.schemas.time import Granularity, Interval, format_instant, parse_instant

__all__ = [
    "Evidence",
    "SearchResult",
    "SearchTrace",
    "SCHEMA_VERSION",
    "intent_from_dict",
    "signal_from_dict",
]

SCHEMA_VERSION = "1.0"


@dataclass(frozen=True, slots=True)
class Evidence:
    """One retrieved chunk with its time metadata (a citation card).

    Attributes:
        score: cosine similarity to the query embedding (higher is closer), in [-1, 1].
        intervals: the chunk's event intervals, half-open UTC.
        time_source: ``event`` (stage 2 found intervals), ``inherited:section`` / ``inherited:document``
            (no date of its own: its section's or document's span), ``published`` (the publication day) or
            ``unknown`` (no time known: a lower-tier card, ``time_status`` ``"time unknown"`` in ``to_dict``).
        valid_from/valid_until: valid time of the document version (``None`` = open).
        recorded_at: transaction time of the chunk row.
        rank: 1-based position in the ranking (similarity + temporal focus) before chronological ordering.
        superseded_by: doc id of the next version of the same series in the lineage (as of the query's
            transaction time), when one is stored.
        corrected_by: doc id of a correction of this version (as of), when one is stored.
        interval_kinds: per interval, ``(kind, provenance)`` (``event``/``state``/… and ``None`` for an
            interval as written, ``inferred:…``/``inherited:…`` for a derived span); empty for cards built
            without them. In ``to_dict`` each interval carries ``kind`` and ``provenance``.
        temporal_fit: the chunk's temporal fit to the question's window in [0, 1] (1.0 without a time
            filter; :mod:`diachron.retrieval.tiers`).
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
    interval_kinds: tuple[tuple[str, str | None], ...] = ()
    temporal_fit: float = 1.0

    def _interval_dicts(self) -> list[dict[str, Any]]:
        out = [i.to_dict() for i in self.intervals]
        if len(self.interval_kinds) == len(out):
            for d, (kind, provenance) in zip(out, self.interval_kinds, strict=True):
                d["kind"], d["provenance"] = kind, provenance
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "chunk_id": self.chunk_id,
            "doc_id": self.doc_id,
            "series_id": self.series_id,
            "title": self.title,
            "published_at": format_instant(self.published_at),
            "intervals": self._interval_dicts(),
            "time_source": self.time_source,
            "time_status": "time unknown" if self.time_source == "unknown" else "known",
            "valid_from": format_instant(self.valid_from),
            "valid_until": format_instant(self.valid_until),
            "recorded_at": format_instant(self.recorded_at),
            "superseded_by": self.superseded_by,
            "corrected_by": self.corrected_by,
            "score": round(self.score, 6),
            "rank": self.rank,
            "temporal_fit": round(self.temporal_fit, 6),
            "text": self.text,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Evidence:
        """The inverse of :meth:`to_dict` (the ``--json`` / service form); unknown keys are ignored.

        Raises:
            ValueError: a timestamp is not ISO-8601 or an interval is empty/inverted.
            KeyError: a required key (``chunk_id``, ``doc_id``, ``text``, …) is missing.
        """
        values: dict[str, Any] = {}
        for f in fields(cls):
            if f.name not in data:
                continue
            value = data[f.name]
            if f.name == "intervals":
                if value and all("kind" in i for i in value):
                    values["interval_kinds"] = tuple((i["kind"], i.get("provenance")) for i in value)
                value = tuple(Interval.from_dict(i) for i in value)
            elif "datetime" in str(f.type) and isinstance(value, str):
                value = parse_instant(value)
            values[f.name] = value
        return cls(**values)


@dataclass(frozen=True, slots=True)
class SearchTrace:
    """How a result was obtained.

    Attributes:
        filter: the typed time filter applied (intervals, as_of), as JSON-ready values.
        candidates_after_filter: chunks whose intervals overlap the query intervals (exact count).
        anchors: number of e_hypo anchors embedded (0 = the core query alone).
        rejected_examples: a few chunks that were similar but outside the time filter (chunk_id, why).
        seconds: wall time of the search, by step.
        plan: which search path ran: ``path`` (``exact`` | ``approximate``), ``candidates``, ``scored_rows``
            and ``expected_recall`` (recall@10 against exact, measured when the index was built; 1.0 exact).
    """

    filter: dict[str, Any]
    candidates_after_filter: int
    anchors: int
    anchor_granularity: str | None
    rejected_examples: tuple[dict[str, Any], ...] = ()
    seconds: dict[str, float] = field(default_factory=dict)
    plan: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "filter": self.filter,
            "candidates_after_filter": self.candidates_after_filter,
            "anchors": self.anchors,
            "anchor_granularity": self.anchor_granularity,
            "rejected_examples": list(self.rejected_examples),
            "seconds": {k: round(v, 4) for k, v in self.seconds.items()},
            "plan": dict(self.plan),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SearchTrace:
        """The inverse of :meth:`to_dict`; keys added in later 1.x versions are ignored."""
        return cls(
            filter=dict(data.get("filter") or {}),
            candidates_after_filter=int(data["candidates_after_filter"]),
            anchors=int(data.get("anchors", 0)),
            anchor_granularity=data.get("anchor_granularity"),
            rejected_examples=tuple(data.get("rejected_examples") or ()),
            seconds={k: float(v) for k, v in (data.get("seconds") or {}).items()},
            plan=dict(data.get("plan") or {}),
        )


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
        return {
            "schema_version": SCHEMA_VERSION,
            "intent": self.intent.to_dict(),
            "evidence": [e.to_dict() for e in self.evidence],
            "trace": self.trace.to_dict(),
            "signals": [s.to_dict() for s in self.signals],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SearchResult:
        """A typed result from its JSON form (``--json``, ``diachron serve``'s ``/search``).

        Accepts any ``schema_version`` 1.x (fields added later are ignored); signals come back typed
        (:class:`~diachron.schemas.lineage.ConflictSignal`, ``GapSignal``, ``Clarification``).

        Raises:
            ValueError: another major ``schema_version``, or a malformed timestamp/interval.
            KeyError: a required key is missing.
        """
        version = str(data.get("schema_version", ""))
        if version.split(".")[0] != SCHEMA_VERSION.split(".")[0]:
            raise ValueError(
                f"unsupported schema_version {version!r} (this client reads {SCHEMA_VERSION.split('.')[0]}.x)"
            )
        return cls(
            intent=intent_from_dict(data["intent"]),
            evidence=tuple(Evidence.from_dict(e) for e in data.get("evidence") or ()),
            trace=SearchTrace.from_dict(data["trace"]),
            signals=tuple(signal_from_dict(s) for s in data.get("signals") or ()),
        )

    def to_arrow(self) -> Any:
        """Evidence as a ``pyarrow.Table`` (one row per item; intervals as a list of structs)."""
        import pyarrow as pa

        rows = [e.to_dict() for e in self.evidence]
        return pa.Table.from_pylist(rows) if rows else pa.table({"chunk_id": pa.array([], pa.string())})

    def to_pandas(self) -> Any:
        """Evidence as a ``pandas.DataFrame``."""
        return self.to_arrow().to_pandas()


def _instant(value: str | None) -> datetime | None:
    return parse_instant(value) if value else None


def intent_from_dict(data: dict[str, Any]) -> TemporalIntent:
    """A :class:`~diachron.schemas.intent.TemporalIntent` from its ``to_dict`` form (ISO-8601 UTC strings)."""
    granularity = data.get("granularity")
    return TemporalIntent(
        core_query=data["core_query"],
        relation=Relation(data["relation"]),
        intervals=tuple(Interval.from_dict(i) for i in data.get("intervals") or ()),
        reference_time=parse_instant(data["reference_time"]),
        granularity=Granularity(granularity) if granularity else None,
        confidence=float(data.get("confidence", 1.0)),
        needs_clarification=bool(data.get("needs_clarification", False)),
        assumptions=tuple(data.get("assumptions") or ()),
    )


def signal_from_dict(data: dict[str, Any]) -> Signal:
    """A typed signal from its ``to_dict`` form, chosen by ``type`` (``conflict`` | ``gap`` |
    ``clarification``).

    A clarification's candidates carry no ``recorded_at`` on the wire: it comes back as ``None``.

    Raises:
        ValueError: an unknown ``type``.
    """
    kind = data.get("type")
    if kind == "gap":
        return GapSignal(Interval.from_dict(data["interval"]), data.get("reason"))
    if kind == "conflict":
        interval = data.get("interval")
        return ConflictSignal(
            kind=ConflictKind(data["kind"]),
            series_id=data["series_id"],
            doc_ids=tuple(data.get("doc_ids") or ()),
            interval=Interval.from_dict(interval) if interval else None,
        )
    if kind == "clarification":
        candidates = tuple(
            VersionSpan(
                doc_id=c["doc_id"],
                series_id=data["series_id"],
                version=c.get("version"),
                valid=Interval.from_dict(c["interval"]) if c.get("interval") else None,
                recorded_at=_instant(c.get("recorded_at")),
            )  # type: ignore[arg-type]
            for c in data.get("candidates") or ()
        )
        return Clarification(reason=data["reason"], series_id=data["series_id"], candidates=candidates)
    raise ValueError(f"unknown signal type {kind!r}")
