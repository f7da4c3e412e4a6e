"""Typed lineage records and the signals a search result carries (docs/design.md, "Lineage and conflicts").

A :class:`VersionSpan` is one document version with its *effective* valid interval, derived from the
lineage at query time (v1 is valid until v2 takes effect); rows in the store are never updated, so a
``valid_until`` implied by a later version exists only here. Signals are typed values, never prose:
:class:`ConflictSignal` (overlapping versions of one series, a correction next to its target),
:class:`GapSignal` (part of the query window with no evidence) and :class:`Clarification` (the reference
time is ambiguous and the answer would change). All intervals are half-open UTC ``[start, end)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from diachron.schemas.time import Interval, format_instant

__all__ = [
    "DERIVED_UNTIL_KEY",
    "SERIES_INFERRED_KEY",
    "UNRESOLVED_KEY",
    "Clarification",
    "ConflictKind",
    "ConflictSignal",
    "GapSignal",
    "Signal",
    "VersionSpan",
]

#: key in ``documents.metadata_json`` marking a ``valid_until`` that ingest derived from its batch (not stated
#: by the source): retrieval re-derives it from the full lineage.
DERIVED_UNTIL_KEY = "valid_until_derived"
#: key in ``documents.metadata_json`` marking a ``series_id`` that ingest inferred from the ``supersedes``
#: chain
#: or the shared id prefix (the source gave none).
SERIES_INFERRED_KEY = "series_inferred"
#: key in ``documents.metadata_json`` keeping a ``supersedes`` value that resolved to no document.
UNRESOLVED_KEY = "supersedes_unresolved"


@dataclass(frozen=True, slots=True)
class VersionSpan:
    """One version of a series with its effective valid interval.

    Attributes:
        doc_id: the version's id.
        series_id: the series it belongs to.
        version: the source's version string, or ``None``.
        valid: effective valid interval ``[start, end)``, UTC; ``start=None`` = open past, ``end=None`` =
            still valid. ``None`` when the version is fully replaced by a correction.
        recorded_at: transaction time of the version's row (UTC).
        supersedes: doc id of the version it replaces, or ``None``.
        relation: ``supersedes`` | ``corrects`` | ``narrows`` | ``expands`` | ``coexists`` | ``None``.
        superseded_by: doc id of the next version in the lineage, or ``None``.
        corrected_by: doc id of a correction of this version, or ``None``.
        published_at: publication time (UTC), or ``None``.
    """

    doc_id: str
    series_id: str
    version: str | None
    valid: Interval | None
    recorded_at: datetime
    supersedes: str | None = None
    relation: str | None = None
    superseded_by: str | None = None
    corrected_by: str | None = None
    published_at: datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "doc_id": self.doc_id,
            "series_id": self.series_id,
            "version": self.version,
            "valid": self.valid.to_dict() if self.valid else None,
            "recorded_at": format_instant(self.recorded_at),
            "supersedes": self.supersedes,
            "relation": self.relation,
            "superseded_by": self.superseded_by,
            "corrected_by": self.corrected_by,
            "published_at": format_instant(self.published_at),
        }


class ConflictKind(StrEnum):
    """``overlap``: two versions of one series are valid at once; ``correction``: a correction and the
    version it corrects are both in the evidence."""

    OVERLAP = "overlap"
    CORRECTION = "correction"


@dataclass(frozen=True, slots=True)
class ConflictSignal:
    """Evidence that must not be blended: ``doc_ids`` disagree during ``interval`` (half-open UTC)."""

    kind: ConflictKind
    series_id: str
    doc_ids: tuple[str, ...]
    interval: Interval | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "conflict",
            "kind": self.kind.value,
            "series_id": self.series_id,
            "doc_ids": list(self.doc_ids),
            "interval": self.interval.to_dict() if self.interval else None,
        }


@dataclass(frozen=True, slots=True)
class GapSignal:
    """``interval`` (half-open UTC, whole periods of ``interval.granularity``) of the query window has no
    evidence in the store. ``reason`` (optional, in ``to_dict`` only when set) says why in one line, e.g.
    ``"no chunk with known time in the window"`` for an answer that came back empty."""

    interval: Interval
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {"type": "gap", "interval": self.interval.to_dict()}
        return out if self.reason is None else {**out, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class Clarification:
    """The question's reference time is ambiguous: each candidate version would give another answer.

    Attributes:
        reason: why ("several earlier versions of refund-policy").
        series_id: the series the candidates belong to.
        candidates: the candidate versions, oldest first, each with its effective valid interval.
    """

    reason: str
    series_id: str
    candidates: tuple[VersionSpan, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "clarification",
            "reason": self.reason,
            "series_id": self.series_id,
            "candidates": [
                {"doc_id": c.doc_id, "version": c.version, "interval": c.valid.to_dict() if c.valid else None}
                for c in self.candidates
            ],
        }


Signal = ConflictSignal | GapSignal | Clarification
