"""The baselines of the query benchmark: vectors held in memory as one float32 ``(n, dim)`` array, or mapped.

* :class:`BruteForce` — NumPy masked scan: exact interval mask over all rows, inner product with all rows.
* :class:`PaperDesign` — the TA-RAG design: an interval index (NCLS) over the chunks' event intervals gives
  the candidate rows, then exact inner product over those candidates (NumPy flat IP = Faiss flat IP math),
  gathered in pieces into one reused buffer: a fresh copy of a wide window's candidates (≈ 1 GB at 1M rows,
  20 years) costs more in page faults on this VM than the products themselves (measured 2026-12-03: the
  7-year window at 1M took 772 ms with the copy, a third of that in an earlier boot), and Faiss's
  ID-selector search copies nothing either.

* :class:`StreamScan` — the on-disk reference (the ``10m`` tier, issue 30): the same NCLS candidates, their
  float32 vectors read from a memory-mapped file in pieces (no vectors held in memory); exact.

All return ``(offsets, scores)`` of the top-k rows, best first; windows are half-open ``[start, end)``
as int64 µs (UTC), open sides as :data:`diachron.retrieval.interval_index.OPEN_PAST` / ``OPEN_FUTURE``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow.compute as pc
from diachron.retrieval.interval_index import OPEN_FUTURE, OPEN_PAST, to_micros

GATHER_PIECE = 32_768  # candidate rows gathered per step into the reused buffer (48 MiB at 384 dims)
NCLS_SHIFT = 2**61  # NCLS needs non-negative coordinates; instants before 1970 are negative microseconds

__all__ = ["Arrays", "BruteForce", "PaperDesign", "StreamScan", "load_arrays", "top_k"]


@dataclass(frozen=True, slots=True)
class Arrays:
    """A table in memory: ``vectors`` float32 ``(n, dim)`` (``None`` when left on disk), flattened intervals
    (``row``, ``start``, ``end``)."""

    vectors: np.ndarray | None
    row: np.ndarray
    start: np.ndarray
    end: np.ndarray


def load_arrays(dataset: Any, *, vectors: bool = True) -> Arrays:
    """Read a Lance dataset's event intervals, and its vectors unless ``vectors=False``, into memory (row
    ``i`` = offset ``i``)."""
    data = dataset.to_table(columns=["vector", "intervals"] if vectors else ["intervals"], batch_size=8192)
    intervals = data.column("intervals").combine_chunks()
    counts = pc.list_value_length(intervals).fill_null(0).to_numpy()
    flat = pc.list_flatten(intervals)
    matrix = data.column("vector").combine_chunks() if vectors else None
    return Arrays(
        matrix.values.to_numpy().reshape(len(matrix), -1) if matrix is not None else None,
        np.repeat(np.arange(len(counts), dtype=np.int64), counts),
        to_micros(flat.field("start"), OPEN_PAST),
        to_micros(flat.field("end"), OPEN_FUTURE),
    )


def top_k(offsets: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best ``(offsets, scores)``, best first."""
    if len(scores) > k:
        keep = np.argpartition(-scores, k)[:k]
        offsets, scores = offsets[keep], scores[keep]
    order = np.argsort(-scores, kind="stable")
    return offsets[order], scores[order]


class BruteForce:
    """NumPy masked scan over every row (exact)."""

    def __init__(self, arrays: Arrays) -> None:
        self.a = arrays

    def search(self, vector: np.ndarray, start: int, end: int, k: int = 10) -> tuple[np.ndarray, np.ndarray]:
        a = self.a
        mask = np.zeros(len(a.vectors), dtype=bool)
        mask[a.row[(a.start < end) & (a.end > start)]] = True
        scores = a.vectors @ vector
        rows = np.flatnonzero(mask)
        return top_k(rows, scores[rows], k)


def _ncls(arrays: Arrays) -> Any:
    from ncls import NCLS64

    # NCLS needs non-negative coordinates: shift (open past and instants before 1970 are negative)
    return NCLS64(
        arrays.start + NCLS_SHIFT, arrays.end + NCLS_SHIFT, np.arange(len(arrays.start), dtype=np.int64)
    )


def _overlapping(index: Any, arrays: Arrays, start: int, end: int) -> np.ndarray:
    """Indices of the flattened intervals overlapping ``[start, end)`` (half-open), by NCLS."""
    _, hit = index.all_overlaps_both(
        np.array([start + NCLS_SHIFT], dtype=np.int64),
        np.array([end + NCLS_SHIFT], dtype=np.int64),
        np.zeros(1, dtype=np.int64),
    )
    return hit[(arrays.start[hit] < end) & (arrays.end[hit] > start)]  # NCLS also reports touching ones


class PaperDesign:
    """NCLS interval index -> candidate rows -> exact inner product over the candidates (TA-RAG §3.4)."""

    def __init__(self, arrays: Arrays) -> None:
        assert arrays.vectors is not None, "PaperDesign holds the vectors in memory"
        self.a = arrays
        self._buffer = np.empty((GATHER_PIECE, arrays.vectors.shape[1]), dtype=arrays.vectors.dtype)
        self.index = _ncls(arrays)

    def search(self, vector: np.ndarray, start: int, end: int, k: int = 10) -> tuple[np.ndarray, np.ndarray]:
        a = self.a
        hit = _overlapping(self.index, a, start, end)
        mask = np.zeros(len(a.vectors), dtype=bool)
        mask[a.row[hit]] = True
        rows = np.flatnonzero(mask)
        scores = np.empty(len(rows), dtype=np.float32)
        for lo in range(0, len(rows), GATHER_PIECE):
            piece = rows[lo : lo + GATHER_PIECE]
            gathered = np.take(a.vectors, piece, axis=0, out=self._buffer[: len(piece)])
            np.matmul(gathered, vector, out=scores[lo : lo + len(piece)])
        return top_k(rows, scores, k)


class StreamScan:
    """NCLS candidates -> exact inner product streamed from a memory-mapped float32 file (nothing in RAM).

    Args:
        arrays: the intervals (``vectors`` may be ``None``).
        vectors: float32 ``(n, dim)``, memory-mapped; file row ``p`` holds the vector of offset ``order[p]``
            (the time index's ``vectors.npy`` and ``order.npy``).
        order: int ``(n,)`` file row -> row offset.
    """

    def __init__(self, arrays: Arrays, vectors: np.ndarray, order: np.ndarray) -> None:
        self.a = arrays
        self.vectors = vectors
        self.order = np.asarray(order)
        self.position = np.empty(len(self.order), dtype=np.int32)  # row offset -> file row
        self.position[self.order] = np.arange(len(self.order), dtype=np.int32)
        self.index = _ncls(arrays)
        self._buffer = np.empty((GATHER_PIECE, vectors.shape[1]), dtype=np.float32)

    def search(self, vector: np.ndarray, start: int, end: int, k: int = 10) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` ``(offsets, scores)``: candidates read in file order, ``GATHER_PIECE`` rows at a time."""
        hit = _overlapping(self.index, self.a, start, end)
        mask = np.zeros(len(self.position), dtype=bool)
        mask[self.position[self.a.row[hit]]] = True
        positions = np.flatnonzero(mask)  # sorted: the file is read forward
        scores = np.empty(len(positions), dtype=np.float32)
        for lo in range(0, len(positions), GATHER_PIECE):
            piece = positions[lo : lo + GATHER_PIECE]
            gathered = np.take(self.vectors, piece, axis=0, out=self._buffer[: len(piece)])
            np.matmul(gathered, vector, out=scores[lo : lo + len(piece)])
        best, best_scores = top_k(positions, scores, k)
        return self.order[best].astype(np.int64), best_scores
