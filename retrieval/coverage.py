"""Coverage-aware top-k: spread the k results across the query window's periods (diachron's own method).

TA-RAG ranks the prefiltered candidates by similarity to e_hypo alone, so k results may crowd into a few
periods of a long window. Here each candidate is assigned to the period (of the anchor granularity) its
event intervals overlap most, and the top-k is filled in rounds: each round takes the best remaining
candidate of every period that still has one, best first, until k are taken. With k below the number of
periods this gives k distinct periods; with k above it, every period gets ``k // periods`` or one more
(a per-period quota, when the candidates exist). Candidates outside every period are taken last.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from diachron.retrieval.anchors import Anchor
from diachron.retrieval.search import Hit
from diachron.schemas.records import intervals_from_arrow
from diachron.schemas.time import Interval, period

__all__ = ["anchor_periods", "coverage_top_k"]


def anchor_periods(anchor_list: Sequence[Anchor]) -> list[Interval]:
    """The periods ``[anchor, anchor + 1 granularity)`` of e_hypo anchors, half-open UTC, in order."""
    return [period(start, granularity) for start, granularity in anchor_list]


def _overlap(a: Interval, b: Interval) -> timedelta:
    part = a.intersection(b)
    if part is None or part.start is None or part.end is None:
        return timedelta(0)
    return part.end - part.start


def _home(intervals: Sequence[Interval], periods: Sequence[Interval]) -> int | None:
    """Index of the period the intervals overlap longest (earliest on ties); ``None`` when none overlaps."""
    best, best_overlap = None, timedelta(0)
    for n, p in enumerate(periods):
        total = sum((_overlap(i, p) for i in intervals), timedelta(0))
        if total > best_overlap:
            best, best_overlap = n, total
    return best


def coverage_top_k(hits: Sequence[Hit], periods: Sequence[Interval], *, k: int) -> list[Hit]:
    """Re-rank ``hits`` (best first, e.g. a prefiltered pool of several times k) to cover ``periods``.

    Args:
        hits: candidates ranked by similarity, rows with an Arrow ``intervals`` column.
        periods: the window's periods (half-open UTC), e.g. :func:`anchor_periods`.
        k: number of results (top-k).

    Returns:
        At most ``k`` hits in round order (each round best first); ``hits[:k]`` when ``periods`` is empty.
    """
    if not periods:
        return list(hits[:k])
    queues: dict[int | None, list[Hit]] = {}
    for hit in hits:
        queues.setdefault(_home(intervals_from_arrow(hit.row["intervals"]), periods), []).append(hit)
    leftovers = queues.pop(None, [])
    picked: list[Hit] = []
    while len(picked) < k and any(queues.values()):
        round_ = sorted((q.pop(0) for q in queues.values() if q), key=lambda h: -h.score)
        picked.extend(round_[: k - len(picked)])
    picked.extend(leftovers[: k - len(picked)])
    return picked
