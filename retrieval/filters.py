"""Time filters for LanceDB, built from typed values only (never from user text).

Every literal is produced by :func:`diachron.schemas.time.format_instant` from an aware UTC datetime, so a
filter string holds nothing but column names, operators and ``TIMESTAMP '…Z'`` literals. The SQL filter
is a coarse superset on the chunk's hull ``[event_start, event_end)``; :func:`overlaps_any` is the
exact check on the chunk's own intervals (half-open overlap, open sides unbounded). With
``admit_unknown`` the event filter has two tiers (:mod:`diachron.retrieval.tiers`): chunks whose spans
overlap, then chunks of unknown time; the SQL string always selects the first tier only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from diachron.schemas.time import Interval, format_instant, to_utc

__all__ = ["TimeFilter", "overlaps_any"]


def _ts(value: datetime) -> str:
    text = format_instant(to_utc(value))
    assert text is not None and "'" not in text
    return f"TIMESTAMP '{text}'"


def _overlap_sql(q: Interval, start_col: str, end_col: str) -> str:
    parts = []
    if q.end is not None:
        parts.append(f"({start_col} IS NULL OR {start_col} < {_ts(q.end)})")
    if q.start is not None:
        parts.append(f"({end_col} IS NULL OR {end_col} > {_ts(q.start)})")
    return "(" + " AND ".join(parts) + ")" if parts else "TRUE"


@dataclass(frozen=True, slots=True)
class TimeFilter:
    """A typed time filter over the ``chunks`` table.

    Attributes:
        event: event-time intervals; a chunk qualifies when one of its intervals overlaps one of these.
        valid: valid-time intervals; the chunk's document version must be valid during one of these.
        as_of: transaction-time bound: only rows with ``recorded_at <= as_of``.
        admit_unknown: with an event filter, also admit chunks of unknown time as a lower tier (tier 2,
            ranked with :data:`diachron.retrieval.tiers.UNKNOWN_FIT`); ``False`` = strict: known,
            overlapping time only (``Client.search(strict=True)``).
    """

    event: tuple[Interval, ...] = ()
    valid: tuple[Interval, ...] = ()
    as_of: datetime | None = None
    admit_unknown: bool = False

    @property
    def is_empty(self) -> bool:
        return not self.event and not self.valid and self.as_of is None

    def sql(self) -> str | None:
        """The LanceDB ``where`` string (a superset for event time), or ``None`` when unfiltered."""
        clauses = []
        if self.event:
            clauses.append("time_status = 'known'")
            clauses.append(
                "(" + " OR ".join(_overlap_sql(q, "event_start", "event_end") for q in self.event) + ")"
            )
        if self.valid:
            clauses.append(
                "(" + " OR ".join(_overlap_sql(q, "valid_from", "valid_until") for q in self.valid) + ")"
            )
        if self.as_of is not None:
            clauses.append(f"recorded_at <= {_ts(self.as_of)}")
        return " AND ".join(clauses) if clauses else None

    def matches(self, intervals: Sequence[Interval]) -> bool:
        """Exact event-time check of one chunk's intervals (the SQL hull check is only a superset).

        A chunk without intervals (unknown time) matches only with ``admit_unknown`` (tier 2).
        """
        if not self.event:
            return True
        return overlaps_any(intervals, self.event) or (self.admit_unknown and not intervals)

    def focus(self, intervals: Sequence[Interval]) -> float:
        """Temporal focus of a chunk: the fraction of its intervals overlapping the event intervals (1.0 if none)."""
        if not self.event or not intervals:
            return 1.0
        return sum(overlaps_any([i], self.event) for i in intervals) / len(intervals)

    def to_dict(self) -> dict[str, Any]:
        return {
            "event": [i.to_dict() for i in self.event],
            "valid": [i.to_dict() for i in self.valid],
            "as_of": format_instant(self.as_of),
            "strict": not self.admit_unknown,
        }


def overlaps_any(intervals: Sequence[Interval], query: Sequence[Interval]) -> bool:
    """True when some interval of ``intervals`` overlaps some interval of ``query`` (half-open)."""
    return any(i.overlaps(q) for i in intervals for q in query)
