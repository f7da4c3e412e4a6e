"""Interval-prefiltered vector search on the LanceDB ``chunks`` table (TA-RAG §3.4, DESIGN "Search").

Candidates are the chunks whose event intervals overlap the query intervals: LanceDB prefilters on the
chunk's interval hull (BTREE-indexed ``event_start``/``event_end``) inside the k-NN step, then each hit
is checked exactly against its own intervals; when the exact check leaves fewer than ``k``, the fetch
widens until ``k`` are found or the candidates run out. Ranking is cosine similarity (higher is closer).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from retrieval.filters import TimeFilter
from schemas.records import intervals_from_arrow

__all__ = ["Hit", "TemporalSearcher"]

log = logging.getLogger(__name__)

COLUMNS = ["chunk_id", "doc_id", "series_id", "seq", "text", "published_at", "intervals", "time_source",
           "valid_from", "valid_until", "recorded_at"]


@dataclass(frozen=True, slots=True)
class Hit:
    """A search hit: the chunk row (``COLUMNS``) and its cosine similarity."""

    row: dict[str, Any]
    score: float


class TemporalSearcher:
    """Exact interval-overlap prefiltered top-k over a LanceDB table with the ``chunks`` schema."""

    def __init__(self, table: Any, *, overfetch: int = 3) -> None:
        self.table = table
        self.overfetch = overfetch

    def search(self, vector: np.ndarray, time_filter: TimeFilter, *, k: int = 10) -> list[Hit]:
        """Top-``k`` chunks passing ``time_filter``, best first.

        Args:
            vector: query embedding, float32 ``(dim,)``, unit norm.
            time_filter: typed filter; an empty filter searches everything.
            k: number of hits (top-k).
        """
        where = time_filter.sql()
        limit = max(k * self.overfetch, k)
        while True:
            query = self.table.search(vector.tolist()).distance_type("cosine").select(COLUMNS).limit(limit)
            if where:
                query = query.where(where, prefilter=True)
            rows = query.to_list()
            hits = [Hit(r, 1.0 - float(r["_distance"])) for r in rows
                    if time_filter.matches(intervals_from_arrow(r["intervals"]))]
            if len(hits) >= k or len(rows) < limit:
                return hits[:k]
            limit *= 4

    def count_candidates(self, time_filter: TimeFilter) -> int:
        """Exact number of chunks passing ``time_filter`` (scans the hull-prefiltered rows' intervals)."""
        where = time_filter.sql()
        if not time_filter.event:
            return int(self.table.count_rows(where)) if where else int(self.table.count_rows())
        data: pa.Table = self.table.to_lance().to_table(columns=["intervals"], filter=where)
        return sum(time_filter.matches(intervals_from_arrow(v)) for v in data.column("intervals").to_pylist())

    def outside_examples(self, vector: np.ndarray, time_filter: TimeFilter, *, n: int = 3) -> list[dict[str, Any]]:
        """The most similar chunks that the time filter rejected (for the trace)."""
        if time_filter.is_empty:
            return []
        rows = (self.table.search(vector.tolist()).distance_type("cosine")
                .select(["chunk_id", "doc_id", "intervals", "time_status"]).limit(n * 4).to_list())
        out = []
        for r in rows:
            if not time_filter.event or not time_filter.matches(intervals_from_arrow(r["intervals"])):
                out.append({"chunk_id": r["chunk_id"], "doc_id": r["doc_id"],
                            "score": round(1.0 - float(r["_distance"]), 6),
                            "why": "no event interval overlaps the query" if r["time_status"] == "known"
                            else "unknown time"})
            if len(out) == n:
                break
        return out
