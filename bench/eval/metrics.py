"""Retrieval metrics of the evaluation (issue 6), per question, on plain values.

A retrieved item is ``(doc_id, intervals, month)``: the chunk's document, its event intervals (half-open
UTC) and the month it is about (the start of its publication month, UTC). A question's window is the
half-open UTC interval ``[window_start, window_end)``, made of whole months.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from diachron.schemas.time import Granularity, Interval, add_months, floor_to

__all__ = ["Item", "endpoint_share", "in_window_precision", "months_of", "recall_at_k", "temporal_coverage"]


@dataclass(frozen=True, slots=True)
class Item:
    """One retrieved chunk: its document id, event intervals and the month (start, UTC) it is about."""

    doc_id: str
    intervals: tuple[Interval, ...]
    month: datetime | None


def months_of(window: Interval) -> list[datetime]:
    """The starts of the calendar months that ``window`` (bounded, half-open) overlaps, in order."""
    assert window.start is not None and window.end is not None
    out, cursor = [], floor_to(window.start, Granularity.MONTH)
    while cursor < window.end:
        out.append(cursor)
        cursor = add_months(cursor, 1)
    return out


def recall_at_k(retrieved: Sequence[Item], gold: set[str], k: int) -> float:
    """``|gold ∩ top-k doc ids| / min(k, |gold|)``; 1.0 when every reachable gold document is in the top k.

    Raises:
        ValueError: ``gold`` is empty or ``k < 1``.
    """
    if not gold or k < 1:
        raise ValueError("recall@k needs a non-empty gold set and k >= 1")
    found = {item.doc_id for item in retrieved[:k]} & gold
    return len(found) / min(k, len(gold))


def in_window_precision(retrieved: Sequence[Item], window: Interval, k: int) -> float | None:
    """Fraction of the top-k chunks with an event interval overlapping ``window``; ``None`` if none came
    back."""
    top = retrieved[:k]
    if not top:
        return None
    return sum(any(i.overlaps(window) for i in item.intervals) for item in top) / len(top)


def temporal_coverage(retrieved: Sequence[Item], gold: set[str], window: Interval, k: int) -> float:
    """Fraction of the window's months with at least one retrieved gold document (by the item's month)."""
    months = months_of(window)
    hit = {item.month for item in retrieved[:k] if item.doc_id in gold}
    return sum(m in hit for m in months) / len(months)


def endpoint_share(retrieved: Sequence[Item], window: Interval, k: int) -> tuple[float, float] | None:
    """``(observed, uniform)`` share of in-window top-k evidence in the window's first or last month.

    Only items whose month lies inside the window count. ``uniform`` is ``2 / n_months``, the share if the
    evidence were spread evenly. ``None`` when the window has fewer than 3 months (the endpoints are the
    whole window) or no top-k item lies inside it.
    """
    months = months_of(window)
    if len(months) < 3:
        return None
    inside = [item for item in retrieved[:k] if item.month in set(months)]
    if not inside:
        return None
    at_ends = sum(item.month in (months[0], months[-1]) for item in inside)
    return at_ends / len(inside), 2 / len(months)
