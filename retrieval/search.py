"""Interval-prefiltered vector search on the LanceDB ``chunks`` table (TA-RAG §3.4, DESIGN "Search").

Candidates are the chunks whose event intervals overlap the query intervals: LanceDB prefilters on the
chunk's interval hull (BTREE-indexed ``event_start``/``event_end``) inside the k-NN step, then each hit
is checked exactly against its own intervals; when the exact check leaves fewer than ``k``, the fetch
widens until ``k`` are found or the candidates run out.

Ranking: cosine similarity to e_hypo (TA-RAG), plus ``temporal_weight`` x the chunk's *temporal focus*:
the fraction of its event intervals that overlap the query intervals. A chunk that merely mentions one
in-window date as a reference point (a prior close, a year-to-date base) ranks below one whose events lie
in the window (time-aware ranking in the spirit of Kanhabua & Nørvåg, 2010). ``temporal_weight=0`` is the
paper's pure-similarity ranking; the candidates re-ranked are the top ``max(3k, 50)`` by similarity.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from diachron.retrieval.filters import TimeFilter
from diachron.schemas.records import intervals_from_arrow

__all__ = ["Hit", "TemporalSearcher"]

log = logging.getLogger(__name__)

COLUMNS = ["chunk_id", "doc_id", "series_id", "seq", "text", "published_at", "intervals", "time_source",
           "valid_from", "valid_until", "recorded_at"]


@dataclass(frozen=True, slots=True)
class Hit:
    """A search hit: the chunk row (``COLUMNS``), its cosine similarity and temporal focus in [0, 1]."""

    row: dict[str, Any]
    score: float
    focus: float = 1.0


class TemporalSearcher:
    """Exact interval-overlap prefiltered top-k over a LanceDB table with the ``chunks`` schema."""

    def __init__(self, table: Any, *, temporal_weight: float = 0.1) -> None:
        self.table = table
        self.temporal_weight = temporal_weight

    def search(self, vector: np.ndarray, time_filter: TimeFilter, *, k: int = 10,
               temporal_weight: float | None = None) -> list[Hit]:
        """Top-``k`` chunks passing ``time_filter``, best first.

        Args:
            vector: query embedding, float32 ``(dim,)``, unit norm.
            time_filter: typed filter; an empty filter searches everything.
            k: number of hits (top-k).
            temporal_weight: weight of temporal focus in the ranking (default: the searcher's).
        """
        weight = self.temporal_weight if temporal_weight is None else temporal_weight
        depth = max(3 * k, 50) if time_filter.event and weight else k
        hits = self._candidates(vector, time_filter, depth)
        if time_filter.event and weight:
            hits.sort(key=lambda h: h.score + weight * h.focus, reverse=True)
        return hits[:k]

    def _candidates(self, vector: np.ndarray, time_filter: TimeFilter, depth: int) -> list[Hit]:
        """The ``depth`` most similar chunks passing the exact filter, by cosine similarity."""
        where = time_filter.sql()
        limit = max(depth, 10)
        while True:
            query = self.table.search(vector.tolist()).distance_type("cosine").select(COLUMNS).limit(limit)
            if where:
                query = query.where(where, prefilter=True)
            rows = query.to_list()
            hits = []
            for r in rows:
                intervals = intervals_from_arrow(r["intervals"])
                if time_filter.matches(intervals):
                    hits.append(Hit(r, 1.0 - float(r["_distance"]), time_filter.focus(intervals)))
            if len(hits) >= depth or len(rows) < limit:
                return hits[:depth]
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
