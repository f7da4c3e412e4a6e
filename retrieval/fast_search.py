"""Exact interval-filtered top-k with an in-memory interval index over row offsets (TA-RAG §3.4).

The paper's design keeps an interval index (NCLS) beside a flat vector index: the interval index gives
the candidates, exact inner product ranks them. Here only the time columns live in memory — each chunk's
own event intervals in an :class:`ncls.NCLS64` over row offsets, plus valid time and transaction time as
int64 arrays — while the vectors stay in LanceDB: the candidates' vectors are read with ``take`` in
pieces and scored exactly as they arrive, then the top-``k`` rows are read. The result is the same as
:class:`diachron.retrieval.search.TemporalSearcher` (exact overlap semantics, cosine score, the same optional
re-ranking by temporal focus), with no SQL filter.

The searcher reads one snapshot of the table: the version current when it was built (row offsets change
when a table is compacted, so the index belongs to that version). Rows written later are not seen until a
new searcher is built; :meth:`FastSearcher.is_stale` tells when. Reads are fastest when rows are stored in
time order (a window's candidates then form a few contiguous runs).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from diachron.retrieval.filters import TimeFilter
from diachron.retrieval.search import COLUMNS, Hit
from diachron.schemas.time import Interval

__all__ = ["FastSearcher", "to_micros"]

log = logging.getLogger(__name__)

OPEN_PAST = -(2**61)
OPEN_FUTURE = 2**61
NCLS_SHIFT = 2**61  # NCLS needs non-negative coordinates; instants before 1970 are negative microseconds
PIECE_ROWS = 1024


def to_micros(column: pa.ChunkedArray | pa.Array, open_value: int) -> np.ndarray:
    """A timestamp column as int64 µs since the epoch (UTC); nulls (open sides) as ``open_value``."""
    return pc.fill_null(pc.cast(column, pa.int64()), open_value).to_numpy().astype(np.int64, copy=False)


def _matrix(data: pa.Table) -> np.ndarray:
    """The ``vector`` column of ``data`` as float32 ``(rows, dim)`` (no copy when contiguous)."""
    column = data.column("vector").combine_chunks()
    return column.values.to_numpy().reshape(len(column), -1)


def _bounds(q: Interval) -> tuple[int, int]:
    start = OPEN_PAST if q.start is None else int(q.start.timestamp() * 1_000_000)
    end = OPEN_FUTURE if q.end is None else int(q.end.timestamp() * 1_000_000)
    return start, end


class FastSearcher:
    """Exact filtered top-k over a LanceDB ``chunks`` table; time columns in memory, vectors in LanceDB.

    Building reads ``intervals``, ``valid_from``, ``valid_until`` and ``recorded_at`` once (≈0.2 s per
    100k rows; memory ≈ 40 bytes per interval plus 24 per row).

    Args:
        table: a LanceDB table with the ``chunks`` schema (vectors unit norm).
        temporal_weight: weight of temporal focus in the ranking, as in ``TemporalSearcher`` (0 = pure
            similarity, the paper's ranking).
        piece_rows: rows per ``take`` while scoring (bounded memory: ``piece_rows × dim × 4`` bytes).
    """

    def __init__(self, table: Any, *, temporal_weight: float = 0.1, piece_rows: int = PIECE_ROWS) -> None:
        from ncls import NCLS64

        t0 = time.perf_counter()
        self.table = table
        self.dataset = table.to_lance()
        self.version = self.dataset.version
        self.piece_rows = piece_rows
        self.temporal_weight = temporal_weight
        data = self.dataset.to_table(columns=["intervals", "valid_from", "valid_until", "recorded_at"],
                                       batch_size=8192)
        intervals = data.column("intervals").combine_chunks()
        counts = pc.list_value_length(intervals).fill_null(0).to_numpy()
        flat = pc.list_flatten(intervals)
        starts = to_micros(flat.field("start"), OPEN_PAST)
        ends = to_micros(flat.field("end"), OPEN_FUTURE)
        self.interval_row = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
        self.first_interval = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self.starts, self.ends = starts, ends
        self.index = NCLS64(starts + NCLS_SHIFT, ends + NCLS_SHIFT, np.arange(len(starts), dtype=np.int64))
        self.valid_from = to_micros(data.column("valid_from"), OPEN_PAST)
        self.valid_until = to_micros(data.column("valid_until"), OPEN_FUTURE)
        self.recorded_at = to_micros(data.column("recorded_at"), OPEN_FUTURE)
        self.num_rows = len(counts)
        self.build_seconds = time.perf_counter() - t0

    def is_stale(self) -> bool:
        """True when the table has a newer version than the snapshot this searcher reads."""
        return self.table.version != self.version

    def candidates(self, time_filter: TimeFilter) -> np.ndarray:
        """Sorted int64 row offsets passing ``time_filter`` exactly (half-open overlap, open sides open)."""
        rows = np.arange(self.num_rows, dtype=np.int64)
        if time_filter.event:
            qs, qe = zip(*(_bounds(q) for q in time_filter.event), strict=True)
            q_starts, q_ends = np.array(qs, dtype=np.int64), np.array(qe, dtype=np.int64)
            query, hit = self.index.all_overlaps_both(q_starts + NCLS_SHIFT, q_ends + NCLS_SHIFT,
                                                      np.arange(len(qs), dtype=np.int64))
            # NCLS also reports intervals that merely touch a query bound; keep exact half-open overlaps
            exact = (self.starts[hit] < q_ends[query]) & (self.ends[hit] > q_starts[query])
            hit = hit[exact]
            mask = np.zeros(self.num_rows, dtype=bool)
            mask[self.interval_row[hit]] = True
            rows = np.flatnonzero(mask)
        if time_filter.valid:
            ok = np.zeros(len(rows), dtype=bool)
            for q in time_filter.valid:
                start, end = _bounds(q)
                ok |= (self.valid_from[rows] < end) & (self.valid_until[rows] > start)
            rows = rows[ok]
        if time_filter.as_of is not None:
            rows = rows[self.recorded_at[rows] <= int(time_filter.as_of.timestamp() * 1_000_000)]
        return rows

    def top_k_offsets(self, vector: np.ndarray, time_filter: TimeFilter, *, k: int = 10
                      ) -> tuple[np.ndarray, np.ndarray]:
        """``(offsets, scores)`` of the top-``k`` candidates, best first; scores are cosine similarities."""
        rows = self.candidates(time_filter)
        best_rows = np.empty(0, dtype=np.int64)
        best_scores = np.empty(0, dtype=np.float32)
        for piece, scores in self._scored_pieces(rows, np.asarray(vector, dtype=np.float32)):
            best_rows = np.concatenate([best_rows, piece])
            best_scores = np.concatenate([best_scores, scores])
            if len(best_rows) > k:
                keep = np.argpartition(-best_scores, k)[:k]
                best_rows, best_scores = best_rows[keep], best_scores[keep]
        order = np.argsort(-best_scores, kind="stable")
        return best_rows[order], best_scores[order]

    def _scored_pieces(self, rows: np.ndarray, query: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Yield ``(offsets, scores)`` for ``rows``, read with ``take`` in pieces of ``piece_rows``.

        (Measured on 100k rows: ``take`` of sorted offsets beats reading dense spans as row ranges.)
        """
        for lo in range(0, len(rows), self.piece_rows):
            piece = rows[lo:lo + self.piece_rows]
            yield piece, _matrix(self.dataset.take(piece, columns=["vector"])) @ query

    def focus(self, offsets: np.ndarray, time_filter: TimeFilter) -> np.ndarray:
        """Temporal focus of rows: the fraction of each row's intervals overlapping the event filter.

        Same definition as :meth:`diachron.retrieval.filters.TimeFilter.focus`; 1.0 without an event filter or
        for a row without intervals. Returns float64 ``(len(offsets),)``.
        """
        lo, hi = self.first_interval[offsets], self.first_interval[offsets + 1]
        counts = hi - lo
        out = np.ones(len(offsets))
        if not time_filter.event or not counts.sum():
            return out
        idx = np.concatenate([np.arange(a, b) for a, b in zip(lo, hi, strict=True)])
        hit = np.zeros(len(idx), dtype=bool)
        for q in time_filter.event:
            start, end = _bounds(q)
            hit |= (self.starts[idx] < end) & (self.ends[idx] > start)
        sums = np.add.reduceat(hit, np.concatenate([[0], np.cumsum(counts)[:-1]])) if len(idx) else 0
        return np.where(counts > 0, sums / np.maximum(counts, 1), out)

    def search(self, vector: np.ndarray, time_filter: TimeFilter, *, k: int = 10,
               temporal_weight: float | None = None) -> list[Hit]:
        """Top-``k`` chunks passing ``time_filter``, best first (same contract as ``TemporalSearcher``).

        With an event filter and a non-zero weight, the ``max(3k, 50)`` most similar candidates are
        re-ranked by ``similarity + temporal_weight × focus``.

        Args:
            vector: query embedding, float32 ``(dim,)``, unit norm.
            time_filter: typed filter; an empty filter searches everything.
            k: number of hits (top-k).
            temporal_weight: weight of temporal focus (default: the searcher's).
        """
        weight = self.temporal_weight if temporal_weight is None else temporal_weight
        rerank = bool(time_filter.event) and bool(weight)
        offsets, scores = self.top_k_offsets(vector, time_filter, k=max(3 * k, 50) if rerank else k)
        focus = self.focus(offsets, time_filter)
        if rerank:
            order = np.argsort(-(scores + weight * focus), kind="stable")[:k]
            offsets, scores, focus = offsets[order], scores[order], focus[order]
        if not len(offsets):
            return []
        rows = self.dataset.take(offsets, columns=COLUMNS).to_pylist()
        return [Hit(row, float(s), float(f)) for row, s, f in zip(rows, scores, focus, strict=True)]
