"""Time filters for LanceDB, built from typed values only (never from user text).

Every literal is produced by :func:`diachron.schemas.time.format_instant` from an aware UTC datetime, so a
filter string holds nothing but column names, operators and ``TIMESTAMP '…Z'`` literals. The SQL filter
is a coarse superset on the chunk's hull ``[event_start, event_end)``; :func:`overlaps_any` is the
exact check on the chunk's own intervals (half-open overlap, open sides unbounded). With
``admit_unknown`` the event filter has two tiers (:mod:`diachron.retrieval.tiers`): chunks whose spans
overlap, then chunks of unknown time; the SQL string always selects the first tier only.

**Demoted, not dropped** (issue 28). Without ``strict``, the event filter rejects a chunk only on strong
evidence that its time lies outside the window: an event or state span *as written* in its text (kinds
``event``, ``state``, ``state_start``, ``state_end`` without provenance) or its document's publication day
(metadata), none of its intervals overlapping the window. A chunk whose only time outside the window is
weak — a date named in passing (``mention``), a span inferred from its timeline (``inferred:*``) or
inherited from its section or document (``inherited:*``) — or that has no time at all, is *demoted*: a
lower tier ranked by similarity (fit ``tiers.UNKNOWN_FIT``, minus ``RankingWeights.demotion``), never
dropped (:func:`demoted_mask`). ``strict=True`` keeps the hard filter: known, overlapping time only. Valid
time (``valid``) and transaction time (``as_of``) are metadata and always filter hard.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import pyarrow as pa
from diachron.schemas.time import Interval, format_instant, to_utc

__all__ = ["STRONG_KINDS", "TimeFilter", "demoted_mask", "overlaps_any", "strong_rows"]

#: kinds of an interval as written (no provenance) that are strong evidence of a chunk's time.
STRONG_KINDS = frozenset({"event", "state", "state_start", "state_end"})


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
        """Temporal focus of a chunk: the fraction of its intervals overlapping the event intervals (1.0 if
        none)."""
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


def _field(flat: pa.StructArray, name: str) -> list[str | None]:
    return flat.field(name).to_pylist() if flat.type.get_field_index(name) >= 0 else [None] * len(flat)


def strong_rows(
    flat: pa.StructArray | pa.ChunkedArray, interval_row: np.ndarray, num_rows: int
) -> np.ndarray:
    """Bool ``(num_rows,)``: rows holding an interval that is strong evidence of their time (module docstring:
    a stated event or state span as written, or the publication day).

    Args:
        flat: the flattened ``intervals`` structs of a ``chunks`` snapshot (fields ``kind``, ``provenance``).
        interval_row: int row offset of each interval (same length as ``flat``).
        num_rows: rows of the snapshot.

    Intervals without ``kind`` (tables written before kinds existed) count as events: strong, as before.
    """
    if isinstance(flat, pa.ChunkedArray):
        flat = flat.combine_chunks()
    kinds, provenance = _field(flat, "kind"), _field(flat, "provenance")
    strong = np.array(
        [
            (p is None and (k or "event") in STRONG_KINDS) or p == "published"
            for k, p in zip(kinds, provenance)
        ],
        dtype=bool,
    )
    out = np.zeros(num_rows, dtype=bool)
    out[np.asarray(interval_row)[strong]] = True
    return out


def demoted_mask(index: Any, time_filter: TimeFilter) -> np.ndarray:
    """Bool ``(rows,)`` of the demoted tier (module docstring) of an
    :class:`~diachron.retrieval.interval_index.IntervalIndex` under ``time_filter``: rows with some interval,
    none overlapping the window, none strong, passing the valid and ``as_of`` clauses. All ``False`` for a
    strict filter or one without event time (rows of unknown time are admitted by ``index.mask`` itself).
    """
    if not time_filter.event or not time_filter.admit_unknown:
        return np.zeros(index.num_rows, dtype=bool)
    mask = ~index.strong_rows
    mask[index.event_rows(time_filter)] = False
    mask[index.unknown_rows] = False
    if time_filter.valid or time_filter.as_of is not None:
        mask &= index.mask(TimeFilter(valid=time_filter.valid, as_of=time_filter.as_of))
    return mask
