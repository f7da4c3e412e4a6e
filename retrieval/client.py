"""The Python client: question -> intent -> e_hypo -> prefiltered search -> chronological evidence.

Example:
    >>> from diachron.retrieval import Client
    >>> client = Client("data/diachron.lancedb")                       # doctest: +SKIP
    >>> result = client.search("How did presidents talk about tariffs between 1920 and 1940?", k=5)
    >>> [e.published_at.year for e in result.evidence]                   # chronological
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from diachron.ingest.embedding import Embedder
from diachron.retrieval.anchors import AnchorPolicy, anchors, hypothetical_embedding
from diachron.retrieval.arguments import clock_argument
from diachron.retrieval.context import build_evidence
from diachron.retrieval.coverage import anchor_periods, coverage_top_k
from diachron.retrieval.errors import EmbedderMismatchError, StoreNotFoundError
from diachron.retrieval.filters import TimeFilter
from diachron.retrieval.intent import IntentConfig, parse_intent
from diachron.retrieval.lineage import (
    Lineage,
    clarify,
    conflicts,
    latest_first,
    load_lineage,
    mentions_earlier_version,
    window_gaps,
)
from diachron.retrieval.search import Hit, Hits, Searcher
from diachron.retrieval.weights import DEFAULT_WEIGHTS, RankingWeights
from diachron.schemas.errors import ConfigError
from diachron.schemas.evidence import Evidence, SearchResult, SearchTrace
from diachron.schemas.intent import Relation, TemporalIntent
from diachron.schemas.lineage import Clarification, GapSignal, Signal
from diachron.schemas.time import Granularity, Interval, format_instant

__all__ = ["Client"]


class Client:
    """Time-aware search over a diachron LanceDB database (read-only).

    Args:
        uri: LanceDB URI written by ``diachron ingest``.
        embedder: an :class:`~diachron.ingest.embedding.Embedder` or model name/path; must match the index.
        intent_config: time zone and fiscal calendar for question parsing.
        anchor_policy: ``adaptive`` (TA-RAG's text) or ``monthly`` (the paper's reference code).
        weights: the ranking's weights and pool sizes (:class:`~diachron.retrieval.weights.RankingWeights`;
            default: its named defaults); ``temporal_weight`` / ``context_weight`` / ``lexical_weight``, when
            given, override one of them.
        temporal_weight: weight of temporal focus in the ranking (0 = pure e_hypo similarity, as in the
            paper); see :mod:`diachron.retrieval.search`.
        context_weight: weight of a chunk's document context when a time filter re-ranks (0 = none; see
            :mod:`diachron.retrieval.search`).
        lexical_weight: weight of the BM25 score of the core query when a time filter re-ranks (0 = none;
            see :mod:`diachron.retrieval.search`).

    Raises:
        StoreNotFoundError: the URI has no ``chunks`` table (``uri`` attribute).
        EmbedderMismatchError: the index was built with a different embedder (``uri``, ``expected`` = the
            index's embedder ids, ``found`` = this client's).

        ConfigError: ``uri`` is an ``http(s)://`` URL: a service is searched with
            ``diachron.connect(url)`` or :class:`~diachron.retrieval.remote.RemoteClient` (the same
            ``search``/``parse`` results over HTTP).
    """

    def __init__(
        self,
        uri: str,
        *,
        embedder: Embedder | str | None = None,
        intent_config: IntentConfig | None = None,
        anchor_policy: AnchorPolicy = "adaptive",
        weights: RankingWeights | None = None,
        temporal_weight: float | None = None,
        context_weight: float | None = None,
        lexical_weight: float | None = None,
    ) -> None:
        import lancedb

        self.uri = str(uri)
        if self.uri.startswith(("http://", "https://")):
            raise ConfigError(
                f"Client({self.uri!r}) opens a local or s3:// index; for a service "
                "use diachron.connect(url) or diachron.RemoteClient(url)",
                setting="uri",
            )
        missing = StoreNotFoundError(
            f"no diachron index at {self.uri!r}: run `diachron ingest SOURCE --db {self.uri}`", uri=self.uri
        )
        if "://" not in self.uri and Path(self.uri).is_file():
            raise StoreNotFoundError(
                f"{self.uri!r} is a file, not a LanceDB directory: point --db (Python: Client(uri)) at the "
                "folder `diachron ingest` wrote (e.g. data/diachron.lancedb)",
                uri=self.uri,
            )
        if "://" not in self.uri and not Path(self.uri).is_dir():  # don't let connect() create an empty dir
            raise missing
        self.db = lancedb.connect(self.uri)
        names = self.db.list_tables()
        names = set(getattr(names, "tables", names))
        if "chunks" not in names:
            raise missing
        self.chunks = self.db.open_table("chunks")
        self.documents = self.db.open_table("documents") if "documents" in names else None
        # one intra-op thread: a query's few short anchor sentences gain nothing from more (see Embedder)
        self.embedder = embedder if isinstance(embedder, Embedder) else Embedder(embedder, threads=1)
        self.intent_config = intent_config or IntentConfig()
        self.anchor_policy = anchor_policy
        self.weights = (weights or DEFAULT_WEIGHTS).override(
            temporal=temporal_weight, context=context_weight, lexical=lexical_weight
        )
        self.temporal_weight = self.weights.temporal
        self.context_weight = self.weights.context
        self.lexical_weight = self.weights.lexical
        self._index: Searcher | None = None
        self._check_embedder(names)
        self._extent: Interval | None = None

    def _check_embedder(self, names: set[str]) -> None:
        if "runs" not in names:
            return
        runs = self.db.open_table("runs")
        built = set(runs.to_lance().to_table(columns=["embedder"]).column("embedder").to_pylist())
        if built and built != {self.embedder.spec.id}:
            raise EmbedderMismatchError(
                f"index at {self.uri!r} was built with {sorted(built)}; "
                f"this client embeds with {self.embedder.spec.id}",
                uri=self.uri,
                expected=sorted(built),
                found=self.embedder.spec.id,
            )

    @property
    def extent(self) -> Interval | None:
        """The index's event-time extent ``[min start, max end)``, used to bound open-ended questions."""
        self._searcher()  # a newer table version resets the extent
        if self._extent is None:
            import pyarrow.compute as pc

            data = self.chunks.to_lance().to_table(columns=["event_start", "event_end"])
            lo, hi = pc.min(data["event_start"]).as_py(), pc.max(data["event_end"]).as_py()
            self._extent = Interval(lo, hi) if lo and hi and lo < hi else None
        return self._extent

    def parse(self, question: str, *, now: datetime | None = None) -> TemporalIntent:
        """The question's temporal intent, read against ``now`` (default: the current UTC time)."""
        clock = clock_argument(now, "now")  # ConfigError (a ValueError) naming it, for a non-datetime
        return parse_intent(question, now=clock or datetime.now(UTC), config=self.intent_config)

    def search(
        self,
        question: str,
        *,
        k: int = 10,
        now: datetime | None = None,
        as_of: datetime | None = None,
        use_time_filter: bool = True,
        use_ehypo: bool = True,
        chronological: bool = True,
        diversify: Literal["coverage"] | None = None,
        strict: bool = False,
    ) -> SearchResult:
        """Answer ``question`` with the top-``k`` evidence inside the time it means.

        Args:
            question: natural-language question; its time expressions become the filter.
            k: number of evidence chunks (top-k).
            now: reference time (aware; default: the current time, UTC).
            as_of: transaction-time bound: ignore rows recorded after it.
            use_time_filter / use_ehypo / chronological: ablation switches (all on = TA-RAG).
            diversify: ``"coverage"`` spreads the top-k across the window's periods
                (:mod:`diachron.retrieval.coverage`, re-ranking a prefiltered pool of ``max(5k, 100)``).
            strict: only chunks whose time is known and overlaps the window; by default chunks of unknown
                time are a lower tier admitted by similarity (:mod:`diachron.retrieval.tiers`).

        Returns:
            :class:`~diachron.schemas.evidence.SearchResult`; evidence in chronological order,
            ``score`` = cosine.

        Raises:
            ConfigError: ``now`` or ``as_of`` is no datetime (a ``ValueError`` naming the argument).
        """
        t0 = time.perf_counter()
        as_of = clock_argument(as_of, "as_of")
        intent = self.parse(question, now=now)
        if use_time_filter:
            intent = self.anchored(question, intent, as_of=as_of)
        return self.search_intent(
            intent,
            k=k,
            as_of=as_of,
            use_time_filter=use_time_filter,
            use_ehypo=use_ehypo,
            chronological=chronological,
            diversify=diversify,
            strict=strict,
            _t0=t0,
        )

    def answer(
        self,
        question: str,
        *,
        k: int = 10,
        now: datetime | None = None,
        as_of: datetime | None = None,
        llm: Any = None,
    ) -> Any:
        """A cited answer to ``question`` that keeps the temporal contract (:mod:`diachron.retrieval.answer`).

        Args:
            question / k / now / as_of: as for :meth:`search` (whose result is ``answer.result``).
            llm: an :class:`~diachron.retrieval.answer.LLMConfig` (an OpenAI-compatible endpoint) or ``None``
                for the deterministic answer.

        Returns:
            :class:`~diachron.retrieval.answer.Answer` (``text``, ``citations``, ``scope``, ``checked``,
            ``reason``, ``source``, ``needs_clarification``, ``result``).

        Raises:
            ConfigError: ``now`` or ``as_of`` is no datetime. An LLM endpoint's failure is not raised: the
                deterministic answer comes back with ``reason``.
        """
        from diachron.retrieval.answer import answer

        return answer(self.search(question, k=k, now=now, as_of=as_of), llm=llm)

    def anchored(
        self, question: str, intent: TemporalIntent, *, as_of: datetime | None = None
    ) -> TemporalIntent:
        """``intent`` with an event-anchored time resolved ("after the merger": the event's time from a
        timeless search of this index first, :mod:`diachron.retrieval.event_anchor`, issue 12); unchanged
        when the question names no anchoring event."""
        from diachron.retrieval.event_anchor import anchor_event, event_query

        return anchor_event(
            question,
            intent,
            lambda event: (
                self.search_intent(
                    event_query(event, intent), k=5, as_of=as_of, use_time_filter=False, use_ehypo=False
                ).evidence
            ),
        )

    def search_intent(
        self,
        intent: TemporalIntent,
        *,
        k: int = 10,
        as_of: datetime | None = None,
        use_time_filter: bool = True,
        use_ehypo: bool = True,
        chronological: bool = True,
        diversify: Literal["coverage"] | None = None,
        strict: bool = False,
        _t0: float | None = None,
    ) -> SearchResult:
        """Like :meth:`search`, for an already-parsed (or hand-built) intent."""
        t0 = _t0 if _t0 is not None else time.perf_counter()
        seconds: dict[str, float] = {"parse": time.perf_counter() - t0}
        time_filter = (
            _time_filter(intent, as_of=clock_argument(as_of, "as_of"), strict=strict)
            if use_time_filter
            else TimeFilter()
        )
        anchor_list = (
            anchors(intent.intervals, extent=self.extent, policy=self.anchor_policy) if use_ehypo else []
        )
        t1 = time.perf_counter()
        vector = hypothetical_embedding(self.embedder.embed, intent.core_query, anchor_list)
        seconds["embed"] = time.perf_counter() - t1
        t2 = time.perf_counter()
        lineage = (
            load_lineage(self.documents, as_of=time_filter.as_of) if self.documents is not None else None
        )
        admit, clarifications = (
            self._admission(intent, lineage, vector, time_filter) if use_time_filter else (None, [])
        )
        current = (
            use_time_filter
            and lineage is not None
            and intent.relation is Relation.CURRENT
            and diversify is None
        )
        pool = k if diversify is None else self.weights.coverage_depth(k)
        depth = self.weights.current_depth(k) if current else pool
        hits = self._search(vector, time_filter, depth, admit, text=intent.core_query)
        plan = hits.plan.to_dict() if isinstance(hits, Hits) and hits.plan is not None else {}
        if current:  # "current / latest as of D": the latest published first (retrieval/lineage.py)
            hits, intent = _latest_first(hits, lineage, intent, k)  # type: ignore[arg-type]
        if diversify == "coverage":
            periods = anchor_periods(anchors(intent.intervals, extent=self.extent, policy=self.anchor_policy))
            hits = coverage_top_k(hits, periods, k=k)
        seconds["search"] = time.perf_counter() - t2
        evidence = self._evidence(hits, lineage, chronological)
        signals = [*clarifications, *self._signals(intent, lineage, evidence, time_filter, use_time_filter)]
        if clarifications:
            intent = replace(intent, needs_clarification=True)
        trace = self._trace(time_filter, anchor_list, vector, seconds, t0, plan)
        return SearchResult(intent=intent, evidence=tuple(evidence), trace=trace, signals=tuple(signals))

    def _evidence(self, hits: Any, lineage: Lineage | None, chronological: bool) -> list[Evidence]:
        """The hits as evidence (document titles, dates; chronological if asked), with their lineage."""
        if self.documents is None:
            return []
        evidence = build_evidence(hits, self.documents, chronological=chronological)
        return [_with_lineage(e, lineage) for e in evidence] if lineage is not None else evidence

    def _trace(
        self,
        time_filter: TimeFilter,
        anchor_list: list[Any],
        vector: Any,
        seconds: dict[str, float],
        t0: float,
        plan: dict[str, Any],
    ) -> SearchTrace:
        """What the search did: its filter, candidate count, anchors, rejected examples, timings (``total``
        since ``t0``, a ``time.perf_counter()``), plan."""
        return SearchTrace(
            filter=time_filter.to_dict(),
            candidates_after_filter=self._count(time_filter),
            anchors=len(anchor_list),
            anchor_granularity=anchor_list[0][1].value if anchor_list else None,
            rejected_examples=tuple(self._searcher().outside_examples(vector, time_filter)),
            seconds={**seconds, "total": time.perf_counter() - t0},
            plan=plan,
        )

    def _searcher(self, time_filter: TimeFilter | None = None) -> Searcher:
        """The searcher over the latest table version (:mod:`diachron.retrieval.search`, every filter kind).

        Checks the table's latest version on storage per call (≈ 20 µs) and rebuilds the in-memory
        interval index when rows were written since it was built, so a long-lived client sees new rows.
        """
        if self._index is None or self._index.is_stale():
            if self._index is not None:
                self.chunks.checkout_latest()
                if self.documents is not None:
                    self.documents.checkout_latest()
                self._extent = None
            self._index = Searcher(
                self.chunks,
                weights=self.weights,
            )
        return self._index

    def _count(self, time_filter: TimeFilter) -> int:
        return self._searcher().count(time_filter)

    def _admission(
        self, intent: TemporalIntent, lineage: Lineage | None, vector: Any, time_filter: TimeFilter
    ) -> tuple[Callable[[dict[str, Any]], bool] | None, list[Clarification]]:
        """Which versions may answer: those valid at t (``at``/``current``), or the earlier ones ("the old
        rule")."""
        if lineage is None:
            return None, []
        if intent.relation is Relation.CURRENT:
            windows = intent.intervals or (Interval.at(intent.reference_time),)
            return (lambda row: any(lineage.current(row["doc_id"], row["series_id"], w) for w in windows)), []
        if intent.relation is Relation.AT and intent.intervals:
            windows = intent.intervals
            return (lambda row: any(lineage.admits(row["doc_id"], row["series_id"], w) for w in windows)), []
        if intent.relation is Relation.UNKNOWN and mentions_earlier_version(intent.core_query):
            top = [h.row["series_id"] for h in self._searcher().search(vector, time_filter, k=10)]
            series = [sid for sid in top if lineage.is_versioned(sid)][:1]
            clarifications, admitted = clarify(lineage, series, intent.reference_time)
            return (lambda row: row["doc_id"] in admitted or row["series_id"] not in series), clarifications
        return None, []

    def _search(
        self,
        vector: Any,
        time_filter: TimeFilter,
        k: int,
        admit: Callable[[dict[str, Any]], bool] | None,
        *,
        text: str | None = None,
    ) -> Hits:
        """Top-``k`` hits passing ``admit``, widening the fetch while admitted hits are too few (with the
        plan of the last fetch); ``text``: the core query, for the lexical signal."""
        limit = k
        while True:
            hits = self._searcher().search(vector, time_filter, k=limit, text=text)
            kept = hits if admit is None else [h for h in hits if admit(h.row)]
            if len(kept) >= k or len(hits) < limit:
                out = Hits(kept[:k])
                out.plan = hits.plan
                return out
            limit *= 4

    def _signals(
        self,
        intent: TemporalIntent,
        lineage: Lineage | None,
        evidence: list[Evidence],
        time_filter: TimeFilter,
        use_time_filter: bool,
    ) -> list[Signal]:
        """Conflicts over the evidence; gaps over each bounded window of a ``between`` or period question."""
        windows = [w for w in intent.intervals if not w.is_open]
        hull = windows[0] if len(windows) == 1 else None
        out: list[Signal] = (
            [*conflicts(lineage, [e.doc_id for e in evidence], window=hull)] if lineage else []
        )
        periodic = (
            intent.relation is Relation.AT
            and (intent.granularity or Granularity.DAY).rank >= Granularity.MONTH.rank
        )
        if use_time_filter and (intent.relation is Relation.BETWEEN or periodic):
            for window in windows:
                out.extend(window_gaps(self.chunks, time_filter.sql(), window))
        if (
            use_time_filter and not evidence
        ):  # an empty answer says why, in its gaps (the whole window if none)
            recorded = f" recorded by {format_instant(time_filter.as_of)}" if time_filter.as_of else ""
            why = f"no chunk with known time in the window{recorded}"
            if not any(isinstance(s, GapSignal) for s in out):
                out.extend(GapSignal(w) for w in intent.intervals)  # open sides too ("before 1900")
            out = [
                replace(s, reason=why) if isinstance(s, GapSignal) and s.reason is None else s for s in out
            ]
        return out

    def naive_search(self, question: str, *, k: int = 10) -> SearchResult:
        """Baseline: the raw question's embedding, no time filter, no e_hypo (plain vector RAG)."""
        intent = TemporalIntent(
            core_query=question,
            intervals=(),
            relation=Relation.UNKNOWN,
            reference_time=datetime.now(UTC),
            confidence=0.0,
        )
        return self.search_intent(intent, k=k, use_time_filter=False)


def _time_filter(intent: TemporalIntent, *, as_of: datetime | None, strict: bool = False) -> TimeFilter:
    """Which axis a relation filters on (docs/design.md, "Which axis a question filters on")."""
    if intent.relation is Relation.CURRENT:
        return TimeFilter(valid=tuple(intent.intervals) or (Interval.at(intent.reference_time),), as_of=as_of)
    if intent.relation is Relation.UNKNOWN or not intent.intervals:
        return TimeFilter(as_of=as_of)
    valid = intent.intervals if intent.relation is Relation.AT else ()
    return TimeFilter(
        event=tuple(intent.intervals), valid=tuple(valid), as_of=as_of, admit_unknown=not strict
    )


def _latest_first(
    hits: list[Hit], lineage: Lineage, intent: TemporalIntent, k: int
) -> tuple[list[Hit], TemporalIntent]:
    """The ``k`` hits of a similarity pool published latest; the intent's assumptions say how documents
    without versions were read (:func:`diachron.retrieval.lineage.latest_first`)."""
    order, unversioned = latest_first([h.row for h in hits], lineage, k=k)
    if unversioned:
        window = intent.intervals[0] if intent.intervals else Interval.at(intent.reference_time)
        until = format_instant(window.end) if window.end is not None else "now"
        note = (
            f"{unversioned} document(s) without versions: 'current' read as published before {until}, "
            "latest first"
        )
        intent = replace(intent, assumptions=(*intent.assumptions, note))
    return [hits[p] for p in order], intent


def _with_lineage(card: Evidence, lineage: Lineage) -> Evidence:
    """The card with lineage-derived valid interval (versioned series) and successor/correction as of."""
    span = lineage.span(card.doc_id)
    if span is None:
        return card
    valid = span.valid if lineage.is_versioned(card.series_id) else None
    return replace(
        card,
        superseded_by=span.superseded_by,
        corrected_by=span.corrected_by,
        valid_from=valid.start if valid else card.valid_from,
        valid_until=valid.end if valid else card.valid_until,
    )


def with_intervals(intent: TemporalIntent, intervals: list[Interval], relation: Relation) -> TemporalIntent:
    """A copy of ``intent`` with explicit intervals (evaluation and tests)."""
    return replace(intent, intervals=tuple(intervals), relation=relation)
