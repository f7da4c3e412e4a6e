"""The Python client: question -> intent -> e_hypo -> prefiltered search -> chronological evidence.

Example:
    >>> from retrieval import Client
    >>> client = Client("data/diachron.lancedb")                       # doctest: +SKIP
    >>> result = client.search("How did presidents talk about tariffs between 1920 and 1940?", k=5)
    >>> [e.published_at.year for e in result.evidence]                   # chronological
"""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import UTC, datetime
from typing import Literal
from ingest.embedding import Embedder
from retrieval.anchors import AnchorPolicy, anchors, hypothetical_embedding
from retrieval.context import build_evidence
from retrieval.coverage import anchor_periods, coverage_top_k
from retrieval.errors import EmbedderMismatchError, StoreNotFoundError
from retrieval.filters import TimeFilter
from retrieval.intent import IntentConfig, parse_intent
from retrieval.search import TemporalSearcher
from schemas.evidence import SearchResult, SearchTrace
from schemas.intent import Relation, TemporalIntent
from schemas.time import Interval, to_utc

__all__ = ["Client"]


class Client:
    """Time-aware search over a diachron LanceDB database (read-only).

    Args:
        uri: LanceDB URI written by ``diachron ingest``.
        embedder: an :class:`~ingest.embedding.Embedder` or model name/path; must match the index.
        intent_config: time zone and fiscal calendar for question parsing.
        anchor_policy: ``adaptive`` (TA-RAG's text) or ``monthly`` (the paper's reference code).

    Raises:
        StoreNotFoundError: the URI has no ``chunks`` table.
        EmbedderMismatchError: the index was built with a different embedder.
    """

    def __init__(self, uri: str, *, embedder: Embedder | str | None = None, intent_config: IntentConfig | None = None,
                 anchor_policy: AnchorPolicy = "adaptive") -> None:
        import lancedb

        self.uri = str(uri)
        self.db = lancedb.connect(self.uri)
        names = self.db.list_tables()
        names = set(getattr(names, "tables", names))
        if "chunks" not in names:
            raise StoreNotFoundError(f"no diachron index at {self.uri!r}: run `diachron ingest SOURCE --db {self.uri}`")
        self.chunks = self.db.open_table("chunks")
        self.documents = self.db.open_table("documents") if "documents" in names else None
        self.embedder = embedder if isinstance(embedder, Embedder) else Embedder(embedder)
        self.intent_config = intent_config or IntentConfig()
        self.anchor_policy = anchor_policy
        self.searcher = TemporalSearcher(self.chunks)
        self._check_embedder(names)
        self._extent: Interval | None = None

    def _check_embedder(self, names: set[str]) -> None:
        if "runs" not in names:
            return
        runs = self.db.open_table("runs")
        built = set(runs.to_lance().to_table(columns=["embedder"]).column("embedder").to_pylist())
        if built and built != {self.embedder.spec.id}:
            raise EmbedderMismatchError(f"index at {self.uri!r} was built with {sorted(built)}; "
                                        f"this client embeds with {self.embedder.spec.id}")

    @property
    def extent(self) -> Interval | None:
        """The index's event-time extent ``[min start, max end)``, used to bound open-ended questions."""
        if self._extent is None:
            import pyarrow.compute as pc

            data = self.chunks.to_lance().to_table(columns=["event_start", "event_end"])
            lo, hi = pc.min(data["event_start"]).as_py(), pc.max(data["event_end"]).as_py()
            self._extent = Interval(lo, hi) if lo and hi and lo < hi else None
        return self._extent

    def parse(self, question: str, *, now: datetime | None = None) -> TemporalIntent:
        """The question's temporal intent, read against ``now`` (default: the current UTC time)."""
        return parse_intent(question, now=to_utc(now) if now else datetime.now(UTC), config=self.intent_config)

    def search(self, question: str, *, k: int = 10, now: datetime | None = None, as_of: datetime | None = None,
               use_time_filter: bool = True, use_ehypo: bool = True, chronological: bool = True,
               diversify: Literal["coverage"] | None = None) -> SearchResult:
        """Answer ``question`` with the top-``k`` evidence inside the time it means.

        Args:
            question: natural-language question; its time expressions become the filter.
            k: number of evidence chunks (top-k).
            now: reference time (aware; default: the current time, UTC).
            as_of: transaction-time bound: ignore rows recorded after it.
            use_time_filter / use_ehypo / chronological: ablation switches (all on = TA-RAG).
            diversify: ``"coverage"`` spreads the top-k across the window's periods
                (:mod:`retrieval.coverage`, re-ranking a prefiltered pool of ``max(5k, 100)``).

        Returns:
            :class:`~schemas.evidence.SearchResult`; evidence in chronological order, ``score`` = cosine.
        """
        t0 = time.perf_counter()
        intent = self.parse(question, now=now)
        return self.search_intent(intent, k=k, as_of=as_of, use_time_filter=use_time_filter, use_ehypo=use_ehypo,
                                  chronological=chronological, diversify=diversify, _t0=t0)

    def search_intent(self, intent: TemporalIntent, *, k: int = 10, as_of: datetime | None = None,
                      use_time_filter: bool = True, use_ehypo: bool = True, chronological: bool = True,
                      diversify: Literal["coverage"] | None = None, _t0: float | None = None) -> SearchResult:
        """Like :meth:`search`, for an already-parsed (or hand-built) intent."""
        t0 = _t0 if _t0 is not None else time.perf_counter()
        seconds: dict[str, float] = {"parse": time.perf_counter() - t0}
        time_filter = _time_filter(intent, as_of=to_utc(as_of) if as_of else None) if use_time_filter else TimeFilter()
        anchor_list = anchors(intent.intervals, extent=self.extent, policy=self.anchor_policy) if use_ehypo else []
        t1 = time.perf_counter()
        vector = hypothetical_embedding(self.embedder.embed, intent.core_query, anchor_list)
        seconds["embed"] = time.perf_counter() - t1
        t2 = time.perf_counter()
        hits = self.searcher.search(vector, time_filter, k=k if diversify is None else max(5 * k, 100))
        if diversify == "coverage":
            periods = anchor_periods(anchors(intent.intervals, extent=self.extent, policy=self.anchor_policy))
            hits = coverage_top_k(hits, periods, k=k)
        seconds["search"] = time.perf_counter() - t2
        evidence = build_evidence(hits, self.documents, chronological=chronological) if self.documents is not None \
            else []
        trace = SearchTrace(filter=time_filter.to_dict(), candidates_after_filter=self.searcher.count_candidates(time_filter),
                            anchors=len(anchor_list), anchor_granularity=anchor_list[0][1].value if anchor_list else None,
                            rejected_examples=tuple(self.searcher.outside_examples(vector, time_filter)),
                            seconds={**seconds, "total": time.perf_counter() - t0})
        return SearchResult(intent=intent, evidence=tuple(evidence), trace=trace)

    def naive_search(self, question: str, *, k: int = 10) -> SearchResult:
        """Baseline: the raw question's embedding, no time filter, no e_hypo (plain vector RAG)."""
        intent = TemporalIntent(core_query=question, intervals=(), relation=Relation.UNKNOWN,
                                reference_time=datetime.now(UTC), confidence=0.0)
        return self.search_intent(intent, k=k, use_time_filter=False)


def _time_filter(intent: TemporalIntent, *, as_of: datetime | None) -> TimeFilter:
    """Which axis a relation filters on (DESIGN.md, "Which axis a question filters on")."""
    if intent.relation is Relation.CURRENT:
        return TimeFilter(valid=(Interval.at(intent.reference_time),), as_of=as_of)
    if intent.relation is Relation.UNKNOWN or not intent.intervals:
        return TimeFilter(as_of=as_of)
    valid = intent.intervals if intent.relation is Relation.AT else ()
    return TimeFilter(event=tuple(intent.intervals), valid=tuple(valid), as_of=as_of)


def with_intervals(intent: TemporalIntent, intervals: list[Interval], relation: Relation) -> TemporalIntent:
    """A copy of ``intent`` with explicit intervals (evaluation and tests)."""
    return replace(intent, intervals=tuple(intervals), relation=relation)
