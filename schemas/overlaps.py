"""Exact overlap queries over a static set of half-open intervals, output-sensitive (issue 15).

Which of ``n`` stored intervals ``[start, end)`` overlap a query ``[qs, qe)`` (``start < qe`` and
``end > qs``)? The paper uses a nested containment list (NCLS); measured here it costs ≈ 0.45 ms per query
at 135k intervals even for a one-day window, more than scoring that window's vectors. This module answers
with binary searches over sorted arrays instead:

* intervals with both ends finite are grouped by *length class* ``k`` (``2**(k-1) <= end - start < 2**k``)
  and sorted by start within a class. An interval of class ``k`` that overlaps the query has
  ``qs - 2**k < start < qe``: one contiguous slice of the class, of which only those with ``end > qs``
  are kept (at most the class's intervals starting in ``(qs - 2**k, qs]`` are read in vain);
* intervals open to the past (``start <= OPEN_PAST``) are sorted by end: the overlapping ones are a suffix;
* intervals open to the future are sorted by start: the overlapping ones are a prefix;
* intervals open on both sides overlap every query.

Cost per query: two binary searches per non-empty class (≈ 40 classes at most for µs timestamps) plus the
intervals read. Memory: 20 bytes per interval (sorted start and end as int64, interval id as int32).
Coordinates are int64 µs (UTC); ``OPEN_PAST`` / ``OPEN_FUTURE`` mark open sides (see
:mod:`diachron.retrieval.interval_index`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["SortedOverlaps", "class_slice", "future_stop", "past_start"]


def class_slice(sorted_starts: np.ndarray, width: int, qs: int, qe: int) -> tuple[int, int]:
    """``[lo, hi)`` of a length class of ``width`` (its intervals sorted by start) that can overlap
    ``[qs, qe)``: those starting in ``(qs - width, qe)``, of which the ones ending after ``qs`` overlap."""
    return (
        int(np.searchsorted(sorted_starts, qs - width, side="right")),
        int(np.searchsorted(sorted_starts, qe, side="left")),
    )


def past_start(sorted_ends: np.ndarray, qs: int) -> int:
    """First of the intervals open to the past (sorted by end) that overlaps ``[qs, …)``: it ends after
    ``qs``."""
    return int(np.searchsorted(sorted_ends, qs, side="right"))


def future_stop(sorted_starts: np.ndarray, qe: int) -> int:
    """End of the prefix of the intervals open to the future (sorted by start) starting before ``qe``."""
    return int(np.searchsorted(sorted_starts, qe, side="left"))


class SortedOverlaps:
    """Length-classed sorted intervals (module docstring).

    Args:
        starts, ends: int64 ``(n,)``, half-open ``[start, end)``; open sides as ``open_past`` /
            ``open_future`` (or beyond them).
        labels: int32 ``(n,)`` returned for each interval by :meth:`overlapping` (default: its position in
            ``starts``; e.g. the row each interval belongs to, so that no lookup follows a query).
    """

    def __init__(
        self,
        starts: np.ndarray,
        ends: np.ndarray,
        open_past: int,
        open_future: int,
        labels: np.ndarray | None = None,
    ) -> None:
        starts = np.asarray(starts, dtype=np.int64)
        ends = np.asarray(ends, dtype=np.int64)
        ids = np.arange(len(starts), dtype=np.int32) if labels is None else np.asarray(labels, dtype=np.int32)
        past, future = starts <= open_past, ends >= open_future
        finite = ~past & ~future
        length = np.maximum(ends[finite] - starts[finite], 0)
        cls = np.zeros(len(length), dtype=np.int64)
        positive = length > 0
        cls[positive] = np.floor(np.log2(length[positive].astype(np.float64))).astype(np.int64) + 1
        # float log2 may round at exact powers of two: correct so that 2**(k-1) <= length < 2**k
        cls[positive] += length[positive] >= (np.int64(1) << np.minimum(cls[positive], 62))
        cls[positive] -= length[positive] < (np.int64(1) << np.maximum(cls[positive] - 1, 0))
        fid, fstart, fend = ids[finite], starts[finite], ends[finite]
        self.classes: list[tuple[int, np.ndarray, np.ndarray, np.ndarray]] = []
        for k in np.unique(cls):
            sel = np.flatnonzero(cls == k)
            order = sel[np.argsort(fstart[sel], kind="stable")]
            self.classes.append((int(1 << int(k)), fstart[order], fend[order], fid[order]))
        only_past = past & ~future
        order = np.flatnonzero(only_past)[np.argsort(ends[only_past], kind="stable")]
        self.past_ends, self.past_ids = ends[order], ids[order]
        only_future = future & ~past
        order = np.flatnonzero(only_future)[np.argsort(starts[only_future], kind="stable")]
        self.future_starts, self.future_ids = starts[order], ids[order]
        self.always = ids[past & future]
        self.size = len(starts)

    @property
    def nbytes(self) -> int:
        """Bytes held by the sorted arrays."""
        arrays = [a for _, *parts in self.classes for a in parts]
        arrays += [self.past_ends, self.past_ids, self.future_starts, self.future_ids, self.always]
        return sum(a.nbytes for a in arrays)

    def count_upper_bound(self, qs: int, qe: int) -> int:
        """Intervals read by :meth:`overlapping` for ``[qs, qe)`` (≥ the exact count; binary searches
        only)."""
        total = len(self.always) + len(self.past_ends) - past_start(self.past_ends, qs)
        total += future_stop(self.future_starts, qe)
        for width, st, _, _ in self.classes:
            lo, hi = class_slice(st, width, qs, qe)
            total += hi - lo
        return total

    def overlapping(self, qs: int, qe: int) -> np.ndarray:
        """int32 labels (default: positions in the constructor's arrays) of the intervals overlapping
        ``[qs, qe)``, exact and half-open (touching is no overlap); unsorted, each interval once (a label
        repeats when several of its intervals overlap). Empty when ``qs >= qe``."""
        if qs >= qe:
            return np.empty(0, dtype=np.int32)
        parts = [
            self.always,
            self.past_ids[past_start(self.past_ends, qs) :],
            self.future_ids[: future_stop(self.future_starts, qe)],
        ]
        for width, st, en, ids in self.classes:
            lo, hi = class_slice(st, width, qs, qe)
            if lo < hi:
                parts.append(ids[lo:hi][en[lo:hi] > qs])
        return np.concatenate(parts)
