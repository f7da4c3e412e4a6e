"""Exact top-k of a time window from the length-classed vector entries (issue 15).

Reads what :mod:`diachron.ingest.classed_layout` wrote into the time index directory: one entry per event
interval, grouped as :class:`~diachron.schemas.overlaps.SortedOverlaps` groups intervals, each holding a
copy of its row's vector. The entries overlapping ``[qs, qe)`` are per group one contiguous slice:

* finite length class of width ``w = 2**k``: entries starting in ``(qs - w, qe)`` (binary searches on the
  sorted starts), of which those ending after ``qs`` overlap;
* open to the past (sorted by end): the suffix ending after ``qs``;
* open to the future (sorted by start): the prefix starting before ``qe``;
* open on both sides: all.

Each slice is scored with one matrix-vector product over contiguous memory; a row with several
overlapping intervals is scored once per entry (equal scores) and returned once. Every score is an exact
cosine (vectors unit norm): this is an exact path, not an approximate one. Everything is memory-mapped;
only the group table is held in memory.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from diachron.schemas import time_index as fmt

__all__ = ["ClassedEntries"]


class ClassedEntries:
    """The classed entries of one time index build (module docstring).

    Args:
        directory: the time index directory; raises ``OSError`` / ``ValueError`` when the files are
            missing or unreadable.
    """

    def __init__(self, directory: Path) -> None:
        self.segments = np.load(directory / fmt.CLASSED_SEGMENTS_FILE)
        self.start = np.load(directory / fmt.CLASSED_START_FILE, mmap_mode="r")
        self.end = np.load(directory / fmt.CLASSED_END_FILE, mmap_mode="r")
        self.row = np.load(directory / fmt.CLASSED_ROW_FILE, mmap_mode="r")
        self.vectors = np.load(directory / fmt.CLASSED_VECTORS_FILE, mmap_mode="r")
        if not len(self.row) == len(self.start) == len(self.end) == len(self.vectors):
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
                    st = self.start[base:base + count]
                    a = base + int(np.searchsorted(st, qs - width, side="right"))
                    b = base + int(np.searchsorted(st, qe, side="left"))
                    check = qs
                elif width == fmt.GROUP_PAST:
                    a = base + int(np.searchsorted(self.end[base:base + count], qs, side="right"))
                elif width == fmt.GROUP_FUTURE:
                    b = base + int(np.searchsorted(self.start[base:base + count], qe, side="left"))
                if a < b:
                    out.append((a, b, check))
        return out

    @staticmethod
    def cost(slices: list[tuple[int, int, int]]) -> int:
        """Entries the slices score."""
        return sum(b - a for a, b, _ in slices)

    def top(self, slices: list[tuple[int, int, int]], query: np.ndarray, depth: int,
            keep: Callable[[np.ndarray], np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(row offsets int64, cosine float32)`` of the ``depth`` best distinct rows over ``slices``,
        best first, exact. ``keep`` (row offsets → bool mask) drops rows failing other filter clauses."""
        rows, scores = [], []
        for a, b, check in slices:
            s = self.vectors[a:b] @ query
            r = self.row[a:b]
            if check != fmt.OPEN_PAST:
                hit = self.end[a:b] > check
                s, r = s[hit], r[hit]
            rows.append(r)
            scores.append(s)
        if not rows:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        r, s = np.concatenate(rows).astype(np.int64), np.concatenate(scores)
        if keep is not None:
            ok = keep(r)
            r, s = r[ok], s[ok]
        return _distinct_top(r, s, depth)


def _distinct_top(rows: np.ndarray, scores: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``depth`` best distinct rows (a row repeats with equal scores), best first."""
    m = min(len(rows), 4 * depth)
    while True:
        pick = np.argpartition(-scores, m - 1)[:m] if m < len(rows) else np.arange(len(rows))
        pick = pick[np.argsort(-scores[pick], kind="stable")]
        _, first = np.unique(rows[pick], return_index=True)
        pick = pick[np.sort(first)]
        if len(pick) >= depth or m >= len(rows):
            pick = pick[:depth]
            return rows[pick], scores[pick].astype(np.float32)
        m = min(len(rows), 4 * m)
