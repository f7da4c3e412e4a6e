"""The typed form of a question's temporal intent (docs/design.md, "Retrieve: Intent"; TA-RAG §3.2)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from diachron.schemas.time import Granularity, Interval, format_instant

__all__ = ["Relation", "TemporalIntent"]


class Relation(StrEnum):
    """How the question's interval(s) select evidence.

    ``at``: a point or one named period ("on 20 April", "in March 2016"); ``between``: a range ("between
    A and B", "from A to B", "A–B"); ``before``/``after``: open-ended (``[None, t)`` / ``[t, None)``);
    ``current``: valid at the reference time; ``unknown``: no time in the question (no time filter).
    """

    AT = "at"
    BEFORE = "before"
    AFTER = "after"
    BETWEEN = "between"
    CURRENT = "current"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class TemporalIntent:
    """A question split into a core query and time intervals.

    Attributes:
        core_query: the question with its time expressions removed ("how did IBM stock perform?").
        intervals: the question's reference intervals, half-open UTC; empty when ``relation`` is unknown.
        relation: how the intervals select evidence.
        granularity: the coarsest granularity the question wrote its time in, or ``None``.
        reference_time: the clock the question was read against (aware UTC).
        confidence: 0..1, how sure the parser is.
        needs_clarification: True when the reference time is ambiguous and the answer would change.
        assumptions: human-readable notes on choices made ("'last quarter' read in UTC").
    """

    core_query: str
    intervals: tuple[Interval, ...]
    relation: Relation
    reference_time: datetime
    granularity: Granularity | None = None
    confidence: float = 1.0
    needs_clarification: bool = False
    assumptions: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {
            "core_query": self.core_query,
            "relation": self.relation.value,
            "reference_time": format_instant(self.reference_time),
            "intervals": [i.to_dict() for i in self.intervals],
            "granularity": self.granularity.value if self.granularity else None,
            "confidence": self.confidence,
            "needs_clarification": self.needs_clarification,
            "assumptions": list(self.assumptions),
        }
