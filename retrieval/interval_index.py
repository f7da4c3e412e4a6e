"""The time columns of a ``chunks`` snapshot in memory: which rows pass a :class:`TimeFilter` (TA-RAG §3.4).

The paper keeps an interval index (NCLS) beside the vectors: the interval index gives the candidates. Ours is
:class:`~diachron.schemas.overlaps.SortedOverlaps` (length-classed sorted endpoints: output-sensitive
binary searches, ≈ 3-8× faster than NCLS per query here).
:class:`IntervalIndex` holds, per *interval* (one entry per event interval of every chunk, CSR layout:
the intervals of row ``r`` are ``first_interval[r]:first_interval[r + 1]``):

* ``starts`` / ``ends`` — int64 µs since the epoch (UTC), half-open, open sides ``OPEN_PAST``/``OPEN_FUTURE``;

and per *row*: ``valid_from`` / ``valid_until`` (valid time), ``recorded_at`` (transaction time); the rows
without intervals are ``unknown_rows`` (unknown time). Per-interval attributes (e.g. a ``kind`` weight) go
beside ``starts``; :meth:`IntervalIndex.focus` is the one place that turns a row's intervals into its temporal
fit. The sorted endpoints hold each interval's row offset, so a query's candidate rows need no lookup.

Memory: ≈ 46 bytes per interval (the arrays below, 20 of them the sorted endpoints) plus 32 bytes per row.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from diachron.retrieval.filters import TimeFilter, strong_rows
from diachron.retrieval.tiers import (
    bound_proximity,
    interval_weights,
    literal_mask,
    row_fit,
    state_mask,
    window_cover,
)
from diachron.schemas.overlaps import SortedOverlaps
from diachron.schemas.time import OPEN_FUTURE, OPEN_PAST, Interval

__all__ = ["OPEN_FUTURE", "OPEN_PAST", "IntervalIndex", "bounds", "to_micros"]

SPARSE_HITS = 64  # fewer rows than all rows / SPARSE_HITS: sort those rows instead of a pass over every row
TIME_COLUMNS = ["intervals", "valid_from", "valid_until", "recorded_at"]


def to_micros(column: pa.ChunkedArray | pa.Array, open_value: int) -> np.ndarray:
    """A timestamp column as int64 µs since the epoch (UTC); nulls (open sides) as ``open_value``."""
    return pc.fill_null(pc.cast(column, pa.int64()), open_value).to_numpy().astype(np.int64, copy=False)


def bounds(q: Interval) -> tuple[int, int]:
    """``[start, end)`` of ``q`` as int64 µs (UTC); open sides as ``OPEN_PAST`` / ``OPEN_FUTURE``."""
    start = OPEN_PAST if q.start is None else int(q.start.timestamp() * 1_000_000)
    end = OPEN_FUTURE if q.end is None else int(q.end.timestamp() * 1_000_000)
    return max(start, OPEN_PAST), min(end, OPEN_FUTURE)


class IntervalIndex:
    """Exact row selection by event, valid and transaction time over one snapshot of a ``chunks`` table.

    Args:
        data: an Arrow table with the ``TIME_COLUMNS`` of the ``chunks`` schema; row ``i`` is offset ``i``.
    """

    def __init__(self, data: pa.Table) -> None:
        intervals = data.column("intervals").combine_chunks()
        counts = pc.list_value_length(intervals).fill_null(0).to_numpy().astype(np.int64)
        flat = pc.list_flatten(intervals)
        self.num_rows = len(counts)
        self.starts = to_micros(flat.field("start"), OPEN_PAST)
        self.ends = to_micros(flat.field("end"), OPEN_FUTURE)
        interval_row = np.repeat(np.arange(self.num_rows, dtype=np.int32), counts)
        self.weights, self.literal = interval_weights(flat), literal_mask(flat)  # kinds -> fit (tiers)
        self.state = state_mask(flat)
        self.strong_rows = strong_rows(flat, interval_row, self.num_rows)  # may be rejected (filters)
        self.first_interval = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self.unknown_rows = np.flatnonzero(counts == 0).astype(np.int32)  # rows of unknown time (no interval)
        self._overlaps = SortedOverlaps(self.starts, self.ends, OPEN_PAST, OPEN_FUTURE, labels=interval_row)
        self.valid_from = to_micros(data.column("valid_from"), OPEN_PAST)
        self.valid_until = to_micros(data.column("valid_until"), OPEN_FUTURE)
        self.recorded_at = to_micros(data.column("recorded_at"), OPEN_FUTURE)

    @classmethod
    def from_dataset(cls, dataset: Any) -> IntervalIndex:
        """Read ``TIME_COLUMNS`` of a Lance dataset (one snapshot) and index them."""
        return cls(dataset.to_table(columns=TIME_COLUMNS, batch_size=8192))

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays (the sorted endpoints included)."""
        arrays = (
            self.starts,
            self.ends,
            self.first_interval,
            self.valid_from,
            self.valid_until,
            self.recorded_at,
            self.unknown_rows,
        )
        return sum(a.nbytes for a in arrays) + self._overlaps.nbytes

    def event_rows(self, time_filter: TimeFilter) -> np.ndarray:
        """int32 row offsets of the intervals overlapping some event interval of the filter (exact, half-open;
        unsorted, a row repeats once per overlapping interval and query interval)."""
        hits = [self._overlaps.overlapping(*bounds(q)) for q in time_filter.event]
        return np.concatenate(hits) if hits else np.empty(0, dtype=np.int32)

    def mask(self, time_filter: TimeFilter) -> np.ndarray:
        """Bool ``(num_rows,)``: which rows pass ``time_filter`` exactly.

        Event filter: a row with some interval overlapping some query interval (rows of unknown time have
        none; with ``admit_unknown`` they pass too). Valid filter: the row's ``[valid_from, valid_until)``
        overlaps some interval. ``as_of``: ``recorded_at <= as_of``. Open sides are unbounded; an empty
        filter passes every row.
        """
        if time_filter.event:
            mask = np.zeros(self.num_rows, dtype=bool)
            mask[self.event_rows(time_filter)] = True
            if time_filter.admit_unknown:  # tier 2: rows of unknown time (diachron.retrieval.tiers)
                mask[self.unknown_rows] = True
        else:
            mask = np.ones(self.num_rows, dtype=bool)
        if time_filter.valid:
            any_q = np.zeros(self.num_rows, dtype=bool)
            for q in time_filter.valid:
                start, end = bounds(q)
                any_q |= (self.valid_from < end) & (self.valid_until > start)
            mask &= any_q
        if time_filter.as_of is not None:
            mask &= self.recorded_at <= int(time_filter.as_of.timestamp() * 1_000_000)
        return mask

    def focus(self, offsets: np.ndarray, time_filter: TimeFilter) -> np.ndarray:
        """Temporal fit of rows to the event filter (:func:`diachron.retrieval.tiers.row_fit`), in [0, 1].

        Weighs each overlapping interval by its kind and provenance (a span covering the window beats a
        date named in passing); 1.0 for every row without an event filter; rows of unknown time get
        ``tiers.UNKNOWN_FIT``. Returns float64 ``(len(offsets),)``.
        """
        offsets = np.asarray(offsets, dtype=np.int64)
        lo, hi = self.first_interval[offsets], self.first_interval[offsets + 1]
        counts = hi - lo
        if not time_filter.event:
            return np.ones(len(offsets))
        idx = (
            np.concatenate([np.arange(a, b) for a, b in zip(lo, hi, strict=True)])
            if len(offsets)
            else np.empty(0, dtype=np.int64)
        )
        hit = np.zeros(len(idx), dtype=bool)
        cover = np.zeros(len(idx))  # per interval: share of the window covered (derived spans) x nearness
        literal = self.literal[idx]
        for q in time_filter.event:
            start, end = bounds(q)
            starts, ends = self.starts[idx], self.ends[idx]
            overlap = (starts < end) & (ends > start)
            hit |= overlap
            near = bound_proximity(starts, ends, start, end)
            cover = np.maximum(
                cover,
                np.where(overlap, np.where(literal, 1.0, window_cover(starts, ends, start, end)) * near, 0.0),
            )
        return row_fit(counts, hit, self.weights[idx] * cover, literal, self.state[idx])
