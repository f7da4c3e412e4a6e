"""Exact top-k of a time window from the length-classed entries (issue 15).

Reads what :mod:`diachron.ingest.classed_layout` wrote into the time index directory: one entry per event
interval, grouped as :class:`~diachron.schemas.overlaps.SortedOverlaps` groups intervals, each holding a
copy of its row's int8 codes. The entries overlapping ``[qs, qe)`` are per group one contiguous slice:

* finite length class of width ``w = 2**k``: entries starting in ``(qs - w, qe)`` (binary searches on the
  sorted starts), of which those ending after ``qs`` overlap;
* open to the past (sorted by end): the suffix ending after ``qs``;
* open to the future (sorted by start): the prefix starting before ``qe``;
* open on both sides: all.

Each slice is estimated with one int8 matrix-vector product over contiguous memory
(:mod:`diachron.retrieval.quantized`); the shortlist is re-scored exactly from the time-ordered float32
vectors until the top-k is certified, so every returned score is an exact cosine (vectors unit norm):
this is an exact path, not an approximate one. A row with several overlapping intervals is returned once.
Everything is memory-mapped; only the group table is held in memory.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
from diachron.retrieval.mapped import load_mapped
from diachron.retrieval.quantized import Int8Query, certified_top, estimate, estimate_bound
from diachron.schemas import time_index as fmt
from diachron.schemas.overlaps import class_slice, future_stop, past_start

__all__ = ["ClassedEntries"]


class ClassedEntries:
    """The classed entries of one time index build (module docstring).

    Args:
        directory: the time index directory; raises ``OSError`` / ``ValueError`` when the files are
            missing or unreadable.
    """

    def __init__(self, directory: Path) -> None:
        self.segments = np.load(directory / fmt.CLASSED_SEGMENTS_FILE)
        self.start = load_mapped(directory / fmt.CLASSED_START_FILE)
        self.end = load_mapped(directory / fmt.CLASSED_END_FILE)
        self.row = load_mapped(directory / fmt.CLASSED_ROW_FILE)
        self.codes = load_mapped(directory / fmt.CLASSED_CODES_FILE, "c")  # copy-on-write: never written
        if not len(self.row) == len(self.start) == len(self.end) == len(self.codes):
            raise ValueError("classed entry files disagree in length")

    @property
    def resident_bytes(self) -> int:
        """Bytes held in memory (the group table; the entries are memory-mapped)."""
        return self.segments.nbytes

    def slices(self, windows: list[tuple[int, int]]) -> list[tuple[int, int, int]]:
        """``(first, stop, qs)`` entry slices that hold every entry overlapping one of ``windows``
        (``[qs, qe)`` int64 µs); ``qs`` is the end bound to check (``None``-free: the open groups need none
        and carry ``fmt.OPEN_PAST``)."""
        out = []
        for qs, qe in windows:
            if qs >= qe:
                continue
            for width, base, count in self.segments.tolist():
                a, b, check = base, base + count, fmt.OPEN_PAST
                if width > 0:
                    lo, hi = class_slice(self.start[base : base + count], width, qs, qe)
                    a, b, check = base + lo, base + hi, qs
                elif width == fmt.GROUP_PAST:
                    a = base + past_start(self.end[base : base + count], qs)
                elif width == fmt.GROUP_FUTURE:
                    b = base + future_stop(self.start[base : base + count], qe)
                if a < b:
                    out.append((a, b, check))
        return out

    @staticmethod
    def cost(slices: list[tuple[int, int, int]]) -> int:
        """Entries the slices score."""
        return sum(b - a for a, b, _ in slices)

    def top(
        self,
        slices: list[tuple[int, int, int]],
        query: Int8Query,
        exact: Callable[[np.ndarray], np.ndarray],
        depth: int,
        keep: Callable[[np.ndarray], np.ndarray] | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(row offsets int64, cosine float32)`` of the ``depth`` best distinct rows over ``slices``,
        best first, exact: int8 estimates, then ``exact`` (row offsets → float32 cosine) on a certified
        shortlist. ``keep`` (row offsets → bool mask) drops rows failing other filter clauses."""
        rows, est = [], []
        for a, b, check in slices:
            e = estimate(self.codes[a:b], query)
            r = self.row[a:b]
            if check != fmt.OPEN_PAST:
                hit = self.end[a:b] > check
                e, r = e[hit], r[hit]
            rows.append(r)
            est.append(e)
        if not rows:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        r, e = np.concatenate(rows).astype(np.int64), np.concatenate(est)
        if keep is not None:
            ok = keep(r)
            r, e = r[ok], e[ok]
        return certified_top(r, e, exact, depth, bound=estimate_bound(query), distinct=True)
