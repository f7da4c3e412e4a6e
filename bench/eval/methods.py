"""The compared retrieval methods, all on the same index, embedder and k (issue 6).

Each method maps ``(question text, k)`` to the top-k retrieved chunks, best first, as metric items.
Vector methods rank by cosine; their top-k for a smaller k is the prefix of a larger one, so
:func:`run_methods` searches once at the largest k and cuts. Coverage-aware top-k depends on k and runs
once per k. Embeddings of identical texts are computed once (:class:`CachingEmbedder`): the model is
deterministic, so this changes no result, only the wall time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import numpy as np
from diachron.ingest.embedding import Embedder
from diachron.retrieval.baselines import BM25Searcher
from diachron.retrieval.client import Client
from diachron.retrieval.search import Hit
from diachron.schemas.evidence import SearchResult
from diachron.schemas.records import intervals_from_arrow
from diachron.schemas.time import Granularity, floor_to, to_utc

from bench.eval.metrics import Item

__all__ = ["METHODS", "CachingEmbedder", "Methods", "run_methods"]

#: name -> what it is, in report order.
METHODS: dict[str, str] = {
    "ta-rag": "TA-RAG full: intent -> time prefilter -> e_hypo (adaptive anchors)",
    "ta-rag-monthly": "TA-RAG with always-monthly anchors (the paper's reference code)",
    "ta-rag-sim": "TA-RAG ranked by e_hypo similarity alone (temporal_weight=0, the paper's ranking)",
    "ta-rag-sim-no-ehypo": (
        "similarity ranking without e_hypo (temporal_weight=0, core query, time prefilter)"
    ),
    "coverage": "TA-RAG + coverage-aware top-k (round-robin over the window's periods)",
    "no-ehypo": "TA-RAG without e_hypo (core query embedding, time prefilter kept)",
    "no-time-filter": "TA-RAG without the time filter (e_hypo kept)",
    "naive": "naive vector search on the raw question",
    "bm25": "BM25 (bm25s) on the raw question",
}
_PER_K = {"coverage"}


class CachingEmbedder(Embedder):
    """An :class:`Embedder` that embeds each distinct text once per process (float32 ``(n, dim)``)."""

    def __init__(self, model: str | None = None) -> None:
        super().__init__(model)
        self._cache: dict[str, np.ndarray] = {}

    def embed(self, texts: list[str]) -> np.ndarray:
        todo = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if todo:
            for text, vector in zip(todo, super().embed(todo), strict=True):
                self._cache[text] = vector
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._cache[t] for t in texts])


def _month(value: datetime | None) -> datetime | None:
    return floor_to(to_utc(value), Granularity.MONTH) if value else None


def _items_from_result(result: SearchResult) -> list[Item]:
    ranked = sorted(
        result.evidence, key=lambda e: e.rank
    )  # the search's ranking, not the chronological context
    return [Item(e.doc_id, e.intervals, _month(e.published_at)) for e in ranked]


def _items_from_hits(hits: Sequence[Hit]) -> list[Item]:
    return [
        Item(h.row["doc_id"], tuple(intervals_from_arrow(h.row["intervals"])), _month(h.row["published_at"]))
        for h in hits
    ]


class Methods:
    """The methods over one LanceDB index, with questions read against the fixed clock ``now``."""

    def __init__(self, uri: str, *, now: datetime, embedder: Embedder | None = None) -> None:
        self.embedder = embedder or CachingEmbedder()
        self.client = Client(uri, embedder=self.embedder)
        self.monthly = Client(uri, embedder=self.embedder, anchor_policy="monthly")
        self.similarity = Client(uri, embedder=self.embedder, temporal_weight=0.0)
        self.bm25 = BM25Searcher(self.client.chunks)
        self.now = now

    def runner(self, name: str) -> Callable[[str, int], list[Item]]:
        """The method ``name`` (a key of :data:`METHODS`) as ``(question, k) -> items``, best first."""
        c, now = self.client, self.now
        table: dict[str, Callable[[str, int], Any]] = {
            "ta-rag": lambda q, k: _items_from_result(c.search(q, k=k, now=now)),
            "ta-rag-monthly": lambda q, k: _items_from_result(self.monthly.search(q, k=k, now=now)),
            "ta-rag-sim": lambda q, k: _items_from_result(self.similarity.search(q, k=k, now=now)),
            "ta-rag-sim-no-ehypo": lambda q, k: _items_from_result(
                self.similarity.search(q, k=k, now=now, use_ehypo=False)
            ),
            "coverage": lambda q, k: _items_from_result(c.search(q, k=k, now=now, diversify="coverage")),
            "no-ehypo": lambda q, k: _items_from_result(c.search(q, k=k, now=now, use_ehypo=False)),
            "no-time-filter": lambda q, k: _items_from_result(
                c.search(q, k=k, now=now, use_time_filter=False)
            ),
            "naive": lambda q, k: _items_from_result(c.naive_search(q, k=k)),
            "bm25": lambda q, k: _items_from_hits(self.bm25.search(q, k=k)),
        }
        return table[name]


def run_methods(
    methods: Methods,
    names: Sequence[str],
    questions: Sequence[Any],
    ks: Sequence[int],
    *,
    progress: Callable[[str, int], None] | None = None,
) -> dict[str, dict[str, dict[int, list[Item]]]]:
    """Retrieve for every method, question and k: ``{method: {qid: {k: items}}}``."""
    out: dict[str, dict[str, dict[int, list[Item]]]] = {}
    for name in names:
        run = methods.runner(name)
        per_q: dict[str, dict[int, list[Item]]] = {}
        for n, q in enumerate(questions):
            if name in _PER_K:
                per_q[q.qid] = {k: run(q.text, k) for k in ks}
            else:
                items = run(q.text, max(ks))
                per_q[q.qid] = {k: items[:k] for k in ks}
            if progress:
                progress(name, n + 1)
        out[name] = per_q
    return out
