"""Tiers and temporal fit: which chunks a time-constrained question admits, and how well their time fits.

**Tiers** (docs/design.md, "Search"). Tier 1: chunks whose validity spans — their own intervals, the spans
inferred from them, or the span they inherit from their section or document — overlap the question's
window. Tier 2: chunks of unknown time (no own, inherited or publication time): admitted by similarity at
a lower fit and marked ``time unknown`` on their card, never dropped silently. Chunks whose time is known
and does not overlap are rejected. ``strict=True`` (:class:`~diachron.retrieval.filters.TimeFilter`) keeps
tier 1 only: where time is known, a source not valid at the question's time is a hard failure.

**Fit** (the ``focus`` of the ranking ``similarity + temporal_weight × fit``), in [0, 1]: the largest of
``share``, the weighted share of the chunk's *mentions as written* (dates named in passing, and the
publication day) that overlap the window (a chunk that only quotes one in-window date among others fits
less: a prior close, a year-to-date base), ``stated``, the weight of an *event or state span as written*
that overlaps the window — the time of a fact the chunk states ("Palacio de Deportes (1986–1998)" fits a
question about 1988 fully, however many other spans the list names; so does "In 2005 she received …" in a
list of awards by year: a chronology states each of its facts, it does not quote the others in passing), and
``derived``, the largest weight × covered share of the window of a derived or inherited span (a span
covering the window counts fully; one touching its last day hardly at all). Weights by kind and
provenance (:data:`WEIGHTS`): an interval as written (event or state) 1.0; a state span closed by the
document's next or previous change 0.8; a span carried to the timeline's next change 0.6; a span left
open 0.5; an inherited section span 0.4, document span 0.3; a date named in passing (``mention``) 0.25.
A chunk of unknown time has fit :data:`UNKNOWN_FIT`. Without an event filter every row has fit 1.0.

**Open windows** ("before July 1988", "after 2005"): every interval on the open side overlaps, so the
weight of each is scaled by its nearness to the window's bound, ``1 / (1 + gap / PROXIMITY_SCALE)`` with
``gap`` the time between the interval and the bound (0 when it reaches the bound): "before July 1988"
asks first of all what held just before July 1988 (:func:`bound_proximity`).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

__all__ = [
    "STATED_KINDS",
    "STATE_KINDS",
    "UNKNOWN_FIT",
    "WEIGHTS",
    "bound_proximity",
    "describe",
    "interval_weights",
    "literal_mask",
    "row_fit",
    "state_mask",
    "window_cover",
]

#: weight of an interval by provenance (derived spans) or kind (intervals as written).
WEIGHTS: dict[str, float] = {
    "event": 1.0,
    "state": 1.0,
    "state_start": 1.0,
    "state_end": 1.0,
    "mention": 0.25,
    "published": 1.0,
    "inferred:next-change": 0.8,
    "inferred:previous-change": 0.8,
    "inferred:timeline": 0.6,
    "inferred:open": 0.5,
    "inferred:open-past": 0.5,
    "inferred:timeline-start": 0.5,
    "inferred:to-publication": 0.5,
    "inferred:future": 0.5,
    "inherited:section": 0.4,
    "inherited:document": 0.3,
}
UNKNOWN_FIT = 0.1
#: time (µs; one year) over which the fit of an interval on the open side of a window halves.
PROXIMITY_SCALE = 365.25 * 86_400 * 1_000_000
#: kinds of an interval as written that state a span the fact holds (not a point in it).
STATE_KINDS = frozenset({"state", "state_start", "state_end"})
#: kinds of an interval as written that date a fact the chunk states (all but a date named in passing).
STATED_KINDS = STATE_KINDS | {"event"}


def _field(flat: pa.StructArray | pa.ChunkedArray, name: str) -> list[str | None]:
    if isinstance(flat, pa.ChunkedArray):
        flat = flat.combine_chunks()
    if flat.type.get_field_index(name) < 0:
        return [None] * len(flat)
    return flat.field(name).to_pylist()


def interval_weights(flat: pa.StructArray | pa.ChunkedArray) -> np.ndarray:
    """Per-interval weight (float64) from the ``kind`` and ``provenance`` fields of flattened intervals.

    Intervals without the fields (tables written before kinds existed) weigh 1.0, as events.
    """
    kinds, provenance = _field(flat, "kind"), _field(flat, "provenance")
    return np.array(
        [
            WEIGHTS.get(p, 1.0) if p is not None else WEIGHTS.get(k or "event", 1.0)
            for k, p in zip(kinds, provenance, strict=True)
        ],
        dtype=np.float64,
    )


def literal_mask(flat: pa.StructArray | pa.ChunkedArray) -> np.ndarray:
    """True for intervals as written (no provenance, or the publication day)."""
    provenance = _field(flat, "provenance")
    return np.array([p is None or p == "published" for p in provenance], dtype=bool)


def state_mask(flat: pa.StructArray | pa.ChunkedArray) -> np.ndarray:
    """True for intervals as written whose kind dates a fact the chunk states (:data:`STATED_KINDS`).

    Intervals without a ``kind`` field (tables written before kinds existed) are not stated: they count in
    the ``share`` of :func:`row_fit`, as before.
    """
    kinds, provenance = _field(flat, "kind"), _field(flat, "provenance")
    return np.array(
        [p is None and k in STATED_KINDS for k, p in zip(kinds, provenance, strict=True)], dtype=bool
    )


def window_cover(starts: np.ndarray, ends: np.ndarray, q_start: int, q_end: int) -> np.ndarray:
    """Share of a window ``[q_start, q_end)`` (int64 µs) that each interval covers, in [0, 1].

    An unbounded window (open side) counts as covered by any interval overlapping it (1.0); open interval
    sides reach the window's bound.
    """
    from diachron.retrieval.interval_index import OPEN_FUTURE, OPEN_PAST

    if q_start <= OPEN_PAST or q_end >= OPEN_FUTURE:
        return ((starts < q_end) & (ends > q_start)).astype(np.float64)
    inside = np.minimum(ends, q_end) - np.maximum(starts, q_start)
    return np.clip(inside / float(q_end - q_start), 0.0, 1.0)


def bound_proximity(starts: np.ndarray, ends: np.ndarray, q_start: int, q_end: int) -> np.ndarray:
    """Nearness in (0, 1] of each interval to the bound of a window open on one side (int64 µs).

    ``[OPEN_PAST, b)``: ``gap = b - min(end, b)``; ``[a, OPEN_FUTURE)``: ``gap = max(start, a) - a``; the
    result is ``1 / (1 + gap / PROXIMITY_SCALE)``. A bounded or fully open window gives 1.0 everywhere.
    """
    from diachron.retrieval.interval_index import OPEN_FUTURE, OPEN_PAST

    past, future = q_start <= OPEN_PAST, q_end >= OPEN_FUTURE
    if past == future:
        return np.ones(len(starts))
    gap = q_end - np.minimum(ends, q_end) if past else np.maximum(starts, q_start) - q_start
    return 1.0 / (1.0 + np.maximum(gap, 0) / PROXIMITY_SCALE)


def row_fit(
    counts: np.ndarray,
    hit: np.ndarray,
    weights: np.ndarray,
    literal: np.ndarray,
    state: np.ndarray | None = None,
) -> np.ndarray:
    """Temporal fit per row (float64 ``(rows,)``) from its intervals, CSR-style.

    Args:
        counts: intervals per row, int64 ``(rows,)``; the rows' intervals are consecutive in the arrays.
        hit: bool per interval: overlaps the question's window.
        weights: per-interval weight (:func:`interval_weights`; derived spans already × window cover).
        literal: per-interval: written in the text (:func:`literal_mask`).
        state: per-interval: an event or state span as written (:func:`state_mask`); ``None`` = none
            (every literal interval then counts in the share, as a mention does).

    ``max(share, stated, derived)`` (module docstring). A row without intervals (unknown time) gets
    :data:`UNKNOWN_FIT`.
    """
    rows = np.repeat(np.arange(len(counts)), counts)
    out = np.full(len(counts), UNKNOWN_FIT)
    if not len(rows):
        return out
    state = np.zeros(len(rows), dtype=bool) if state is None else state
    hit_w = np.where(hit, weights, 0.0)
    best = np.zeros(len(counts))
    np.maximum.at(best, rows, np.where(~literal | state, hit_w, 0.0))  # derived spans and stated spans
    points = literal & ~state
    lit_n = np.bincount(rows, weights=points.astype(np.float64), minlength=len(counts))
    lit_hit = np.bincount(rows, weights=np.where(points, hit_w, 0.0), minlength=len(counts))
    share = np.divide(lit_hit, lit_n, out=np.zeros(len(counts)), where=lit_n > 0)
    return np.where(counts > 0, np.maximum(share, best), out)


def describe(time_source: str | None) -> str:
    """The card's time status: ``time unknown`` for a tier-2 chunk, else ``known``."""
    return "time unknown" if time_source in (None, "unknown") else "known"
