"""Interval-filtered top-k over the ``chunks`` table: the one search path (TA-RAG §3.4, DESIGN "Search").

**Candidates.** :class:`~diachron.retrieval.interval_index.IntervalIndex` holds the time columns of one
table snapshot in memory and gives the exact candidates of every filter kind (event time: a chunk
interval overlaps a query interval, half-open; valid time; transaction time ``as_of``; none) as a row mask
(:class:`Candidates`: the count at once, sorted offsets or time positions only when a path needs them).
No SQL filter is built for search.

**Plan** (:meth:`Searcher.plan`, issue 15). With the time-partitioned index that ``optimize`` builds
(:mod:`diachron.retrieval.partitioned`), candidates are scored exactly: an int8 first pass over contiguous
codes — the length-classed entries of an event window, or in time order the whole blocks of rows that can
hold candidates (:meth:`~diachron.retrieval.partitioned.TimePartitionedIndex.hull`; rows failing the
filter there are dropped from the shortlist) — whose shortlist is re-scored from the float32 vectors until
the top-k is certified (:mod:`diachron.retrieval.quantized`), or scattered rows gathered from the float32
vectors; the planner takes the layout that reads least, from binary searches and block statistics alone.
Without the index, vectors are read from LanceDB with ``take`` in pieces of ``piece_rows``. When the
candidates are many (``> EXACT_MAX_ROWS``) and the index's tree covers them at less cost than the exact
layouts, at an expected recall@10 of at least ``MIN_RECALL`` (measured at build time), the approximate path
runs: IVF probes inside tree nodes whose rows all pass the filter, boundary rows exact. Either way every score
is an exact cosine (inner product of unit vectors) and every hit passes the filter; the plan (path,
candidates, rows scored, expected recall) rides on the result.

**Ranking** (:func:`rank`, the only place it is defined): cosine similarity to e_hypo (TA-RAG) plus
``temporal_weight`` x the chunk's *temporal focus* (:meth:`IntervalIndex.focus`: the fraction of its
event intervals that overlap the query intervals). A chunk that merely mentions one in-window date as a
reference point (a prior close, a year-to-date base) ranks below one whose events lie in the window
(time-aware ranking in the spirit of Kanhabua & Nørvåg, 2010). ``temporal_weight=0`` is the paper's
pure-similarity ranking; with an event filter and a non-zero weight the top ``max(3k, 50)`` by similarity
are re-ranked. The re-ranking also lends each chunk its *document's context*: ``context_weight`` x (the best
similarity among the pool's chunks of the same document − its own), so that within a document the
question is about, temporal fit decides which chunk answers (passage evidence combined with document
evidence, Callan, SIGIR 1994; on TimeQA a list of office holders "1559–1566 : John Griffith" is far less
similar to "who held the chair?" than the page's introduction, but it is the chunk whose span covers the
window). The pool is the top by similarity, so a document's best chunk is always in it. Finally the
*lexical* signal: ``lexical_weight`` x the chunk's BM25 score for the question's core query (LanceDB's
full-text index on ``text``, stemmed, stop words removed; the query prefiltered to the pool's chunks, scaled
by the pool's best so that it lies in [0, 1]) is added to its similarity before the document context is
taken — dense and sparse evidence combined, as hybrid retrieval does (Ma et al., "A replication study of
dense passage retriever", 2021, §5: BM25 + DPR beats either); on TimeQA it lifts the chunk that names the
thing asked ("record label") above a same-page chunk that is only about the same person. A table without
the full-text index (one ``optimize`` has not reached) ranks without it.

**Snapshot.** A :class:`Searcher` reads the table version current when it was built (row offsets belong
to that version); :meth:`Searcher.is_stale` compares it with the latest version on storage (≈ 20 µs), and
the ``Client`` rebuilds the searcher when rows were written since.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from diachron.retrieval import index_cache
from diachron.retrieval.filters import TimeFilter, demoted_mask
from diachron.retrieval.interval_index import SPARSE_HITS, IntervalIndex, bounds
from diachron.retrieval.partitioned import GATHER_COST, TimePartitionedIndex
from diachron.retrieval.quantized import first_pass_cost
from diachron.retrieval.tiers import UNKNOWN_FIT
from diachron.retrieval.weights import DEFAULT_WEIGHTS, RankingWeights
from diachron.schemas.time_index import MANIFEST, index_dir

__all__ = [
    "COLUMNS",
    "CONTEXT_WEIGHT",
    "LEXICAL_WEIGHT",
    "Candidates",
    "Hit",
    "Hits",
    "Plan",
    "Searcher",
    "document_context",
    "rank",
]

log = logging.getLogger(__name__)

COLUMNS = [
    "chunk_id",
    "doc_id",
    "series_id",
    "seq",
    "text",
    "published_at",
    "intervals",
    "time_source",
    "valid_from",
    "valid_until",
    "recorded_at",
]
PIECE_ROWS = 1024
EXAMPLE_POOL = 8192
EXACT_MAX_ROWS = 20_000
MIN_RECALL = 0.95
MEMO_FILTERS = 8
#: default weight of a chunk's document context (kept for callers; :class:`RankingWeights` holds it).
CONTEXT_WEIGHT = DEFAULT_WEIGHTS.context
#: default weight of the lexical (BM25) signal (kept for callers; :class:`RankingWeights` holds it).
LEXICAL_WEIGHT = DEFAULT_WEIGHTS.lexical


@dataclass(frozen=True, slots=True)
class Hit:
    """A search hit: the chunk row (``COLUMNS``), its cosine similarity and temporal focus in [0, 1]."""

    row: dict[str, Any]
    score: float
    focus: float = 1.0


@dataclass(frozen=True, slots=True)
class Plan:
    """Which path scored a query: ``exact`` or ``approximate``; candidates passing the filter, rows whose
    score was computed (entries for ``classed``), the expected recall@10 against exact (1.0 for ``exact``),
    and the vectors read: ``take`` (LanceDB, no time index), ``time`` (time-ordered copy), ``classed``
    (length-classed entries, :mod:`diachron.retrieval.classed`) or ``tree`` (IVF in tree nodes)."""

    path: str
    candidates: int
    scored_rows: int
    expected_recall: float = 1.0
    layout: str = "take"

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "candidates": self.candidates,
            "scored_rows": self.scored_rows,
            "expected_recall": round(self.expected_recall, 4),
            "layout": self.layout,
        }


class Hits(list):  # noqa: FURB189 — a list of Hit that also carries the plan that produced it
    """``list[Hit]`` plus ``plan`` (:class:`Plan`)."""

    plan: Plan | None = None


def rank(
    similarity: np.ndarray,
    focus: np.ndarray,
    temporal_weight: float,
    *,
    context: np.ndarray | None = None,
    context_weight: float = 0.0,
) -> np.ndarray:
    """Ranking score of candidates (float64, same shape as ``similarity``):

    ``similarity + context_weight × (context − similarity) + temporal_weight × focus``, where ``context`` is
    the best similarity of the chunk's document (:func:`document_context`; ``None`` = its own similarity).
    :meth:`Searcher.search` passes as ``similarity`` the cosine plus ``lexical_weight`` × the lexical signal.
    """
    sim = np.asarray(similarity, dtype=np.float64)
    out = sim + temporal_weight * np.asarray(focus, dtype=np.float64)
    if context is not None and context_weight:
        out += context_weight * (np.asarray(context, dtype=np.float64) - sim)
    return out


def document_context(similarity: np.ndarray, doc_ids: np.ndarray) -> np.ndarray:
    """Per candidate, the highest ``similarity`` among the candidates of the same document (float64)."""
    _, group = np.unique(doc_ids, return_inverse=True)
    best = np.full(int(group.max()) + 1 if len(group) else 0, -np.inf)
    np.maximum.at(best, group, np.asarray(similarity, dtype=np.float64))
    return best[group]


def _matrix(data: Any) -> np.ndarray:
    """The ``vector`` column of an Arrow table as float32 ``(rows, dim)`` (no copy when contiguous)."""
    column = data.column("vector").combine_chunks()
    return column.values.to_numpy().reshape(len(column), -1)


class Candidates:
    """The rows of one snapshot passing one filter: ``mask`` bool ``(rows,)`` and ``count``; the sorted
    offsets, the late rows (written after the time index's build), the candidates of unknown time and the
    sorted time positions of the indexed ones are worked out when first asked for (treat all as read-only)."""

    def __init__(self, mask: np.ndarray) -> None:
        self.mask = mask
        self.count = int(np.count_nonzero(mask))
        self._rows: np.ndarray | None = None
        self._positions: np.ndarray | None = None

    @property
    def rows(self) -> np.ndarray:
        """Sorted int64 row offsets."""
        if self._rows is None:
            self._rows = np.flatnonzero(self.mask)
        return self._rows

    def late(self, indexed: int) -> np.ndarray:
        """Sorted int64 offsets ``>= indexed`` (rows the time index does not hold)."""
        return np.flatnonzero(self.mask[indexed:]) + indexed

    def unknown(self, unknown_rows: np.ndarray, indexed: int) -> np.ndarray:
        """Sorted int64 offsets ``< indexed`` among the sorted ``unknown_rows`` (rows of unknown time)."""
        rows = unknown_rows[: np.searchsorted(unknown_rows, indexed)]
        return rows[self.mask[rows]].astype(np.int64)

    def positions(self, ti: TimePartitionedIndex) -> np.ndarray:
        """Sorted int64 time positions of the indexed candidates."""
        if self._positions is None:
            if self.count * SPARSE_HITS < ti.num_rows:  # few: their positions, sorted
                rows = self.rows
                self._positions = ti.positions_of(rows[: np.searchsorted(rows, ti.num_rows)])
            else:  # many: the mask read in time order
                self._positions = np.flatnonzero(self.mask[: ti.num_rows][ti.order])
        return self._positions


class Searcher:
    """Exact filtered top-k over one snapshot of a LanceDB ``chunks`` table (vectors unit norm).

    Args:
        table: a LanceDB table with the ``chunks`` schema.
        weights: the ranking's weights and pool sizes (:class:`~diachron.retrieval.weights.RankingWeights`).
        temporal_weight / context_weight / lexical_weight: override one weight of ``weights`` (``None``:
            keep it); 0 turns the signal off (``temporal_weight=0`` = the paper's pure similarity ranking).
        piece_rows: rows per ``take`` while scoring (bounded memory: ``piece_rows × dim × 4`` bytes).
        approximate: let the planner choose the approximate path (``False``: always exact).

    Raises:
        ConfigError: an override is negative or not a number.
    """

    def __init__(
        self,
        table: Any,
        *,
        weights: RankingWeights = DEFAULT_WEIGHTS,
        temporal_weight: float | None = None,
        piece_rows: int = PIECE_ROWS,
        approximate: bool = True,
        context_weight: float | None = None,
        lexical_weight: float | None = None,
    ) -> None:
        t0 = time.perf_counter()
        self.table = table
        self.dataset = table.to_lance()
        self.version = self.dataset.version
        self.weights = weights.override(
            temporal=temporal_weight, context=context_weight, lexical=lexical_weight
        )
        self.temporal_weight = self.weights.temporal
        self.context_weight = self.weights.context
        self.lexical_weight = self.weights.lexical
        self.has_text_index = _has_text_index(self.dataset)
        self.piece_rows = piece_rows
        self.approximate = approximate
        self.index = IntervalIndex.from_dataset(self.dataset)
        self.num_rows = self.index.num_rows
        self.time_index = _open_time_index(self.dataset)
        if self.time_index is not None:
            self.time_index.attach_times(self.index.starts, self.index.ends, self.index.first_interval)
        self._memo: dict[TimeFilter, Candidates] = {}
        self._demoted: dict[TimeFilter, np.ndarray | None] = {}
        self._index_stamp = _stamp(self.dataset)
        self.build_seconds = time.perf_counter() - t0

    def is_stale(self) -> bool:
        """True when the table on storage has a newer version than this searcher's snapshot, or its time
        index was rebuilt since (``optimize`` writes it after the table's last commit). On object storage
        both are asked at most once a second (:mod:`diachron.retrieval.index_cache`)."""
        return (
            index_cache.latest_version(self.dataset) != self.version
            or _stamp(self.dataset) != self._index_stamp
        )

    def candidates(self, time_filter: TimeFilter) -> np.ndarray:
        """Sorted int64 row offsets passing ``time_filter`` exactly (see :meth:`IntervalIndex.mask`); treat
        the returned array as read-only."""
        return self._candidates(time_filter).rows

    def _candidates(self, time_filter: TimeFilter) -> Candidates:
        """The :class:`Candidates` of ``time_filter``; the last few filters' are kept (a query asks for its
        candidates several times: count, search, rejected examples)."""
        found = self._memo.get(time_filter)
        if found is None:
            found = Candidates(self.index.mask(time_filter))
            if len(self._memo) >= MEMO_FILTERS:
                self._memo = {}  # replaced, not mutated while another thread may read it
            self._memo[time_filter] = found
        return found

    def count(self, time_filter: TimeFilter) -> int:
        """Number of rows passing ``time_filter`` (exact, from the in-memory index)."""
        return self._candidates(time_filter).count

    def scored_pieces(self, rows: np.ndarray, vector: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Yield ``(offsets, cosine float32)`` for ``rows``, read with ``take`` in pieces of
        ``piece_rows``."""
        query = np.asarray(vector, dtype=np.float32)
        for lo in range(0, len(rows), self.piece_rows):
            piece = rows[lo : lo + self.piece_rows]
            yield piece, _matrix(self.dataset.take(piece, columns=["vector"])) @ query

    def exact_top(self, rows: np.ndarray, vector: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
        """``(offsets, cosine)`` of the ``depth`` most similar of sorted ``rows``, best first (exact): indexed
        rows from the time index's vectors, the others (written after its build, or no index) with
        ``take``."""
        query = np.asarray(vector, dtype=np.float32)
        ti = self.time_index
        if ti is None:
            return self._take_top(rows, query, depth)
        indexed = rows if not len(rows) or rows[-1] < ti.num_rows else rows[rows < ti.num_rows]
        pos, scores = ti.exact(ti.positions_of(indexed), query, depth)
        return self._merge(ti.order[pos], scores, *self._take_top(rows[len(indexed) :], query, depth), depth)

    @staticmethod
    def _merge(
        a_rows: np.ndarray, a_scores: np.ndarray, b_rows: np.ndarray, b_scores: np.ndarray, depth: int
    ) -> tuple[np.ndarray, np.ndarray]:
        offsets = np.concatenate([a_rows.astype(np.int64), b_rows.astype(np.int64)])
        scores = np.concatenate([a_scores, b_scores])
        order = np.argsort(-scores, kind="stable")[:depth]
        return offsets[order], scores[order]

    def _take_top(self, rows: np.ndarray, vector: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
        """``(offsets, cosine)`` of the best ``depth`` of ``rows``, vectors read with ``take`` in pieces."""
        best_rows = np.empty(0, dtype=np.int64)
        best_scores = np.empty(0, dtype=np.float32)
        for piece, scores in self.scored_pieces(rows, vector):
            best_rows = np.concatenate([best_rows, piece])
            best_scores = np.concatenate([best_scores, scores])
            if len(best_rows) > depth:
                keep = np.argpartition(-best_scores, depth)[:depth]
                best_rows, best_scores = best_rows[keep], best_scores[keep]
        order = np.argsort(-best_scores, kind="stable")
        return best_rows[order], best_scores[order]

    def plan(self, time_filter: TimeFilter) -> tuple[Plan, Any]:
        """Choose the path for ``time_filter``; returns ``(plan, detail)``: the tree
        :class:`~diachron.retrieval.partitioned.Cover` (approximate), the classed entry slices (exact,
        ``layout == "classed"``), the ``(lo, hi)`` time positions of an int8 pass (exact, ``layout ==
        "time"``) or ``None`` (exact, the candidates gathered).

        Costs are counted in float32 rows read contiguously; a gathered row costs
        :data:`~diachron.retrieval.partitioned.GATHER_COST`, an int8 estimate
        :func:`~diachron.retrieval.quantized.first_pass_cost`. The exact layouts: the time-ordered vectors (an
        int8 pass over the positions that can hold candidates, :meth:`TimePartitionedIndex.hull`, or the
        candidates gathered), or the length-classed entries of an event filter (an int8 pass over their
        slices).
        """
        return self._plan(time_filter, self._candidates(time_filter))

    def _plan(self, time_filter: TimeFilter, cand: Candidates) -> tuple[Plan, Any]:
        ti = self.time_index
        if ti is None:
            return Plan("exact", cand.count, cand.count, layout="take"), None
        unit = first_pass_cost(ti.dim)
        late = len(cand.late(ti.num_rows))
        indexed = cand.count - late
        lo, hi = ti.hull(time_filter)
        options: list[tuple[float, Plan, Any]] = [
            (unit * (hi - lo), Plan("exact", cand.count, hi - lo + late, layout="time"), (lo, hi)),
            (GATHER_COST * indexed, Plan("exact", cand.count, cand.count, layout="time"), None),
        ]
        if time_filter.event:
            slices = ti.classed.slices([bounds(q) for q in time_filter.event])
            entries = ti.classed.cost(slices)
            unknown = (
                len(cand.unknown(self.index.unknown_rows, ti.num_rows)) if time_filter.admit_unknown else 0
            )
            options.append(
                (
                    unit * entries + GATHER_COST * unknown,
                    Plan("exact", cand.count, entries + unknown + late, layout="classed"),
                    slices,
                )
            )
        exact_cost, best_plan, best_detail = min(options, key=lambda o: o[0])
        if not self.approximate or cand.count <= EXACT_MAX_ROWS or not ti.has_ivf:
            return best_plan, best_detail
        if (
            GATHER_COST * (indexed - ti.inside_rows(time_filter)) >= exact_cost
        ):  # its boundary rows alone cost more
            return best_plan, best_detail
        cover = ti.cover(cand.positions(ti), time_filter)
        work = cover.scored_rows + late
        if (
            work <= 0.5 * cand.count
            and cover.expected_recall >= MIN_RECALL
            and GATHER_COST * cover.scored_rows < exact_cost
        ):
            return Plan("approximate", cand.count, work, cover.expected_recall, layout="tree"), cover
        return best_plan, best_detail

    def top_k_offsets(
        self, vector: np.ndarray, time_filter: TimeFilter, *, k: int = 10
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(offsets, cosine)`` of the ``k`` most similar candidates, best first (by the planned path)."""
        offsets, scores, _ = self.top_k_planned(vector, time_filter, k=k)
        return offsets, scores

    def top_k_planned(
        self, vector: np.ndarray, time_filter: TimeFilter, *, k: int = 10
    ) -> tuple[np.ndarray, np.ndarray, Plan]:
        """``(offsets, cosine, plan)``: the ``k`` best candidates by the path :meth:`plan` chooses."""
        cand = self._candidates(time_filter)
        plan, detail = self._plan(time_filter, cand)
        ti, query = self.time_index, np.asarray(vector, dtype=np.float32)
        if plan.layout == "take":
            return (*self._take_top(cand.rows, query, k), plan)
        if plan.layout == "classed":
            keep = None
            if time_filter.valid or time_filter.as_of is not None:  # the entries pass the event clause only
                keep = lambda r: cand.mask[r]  # noqa: E731
            offsets, scores = ti.classed.top(
                detail, ti.prepare(query), lambda r: ti.exact_scores(ti.position[r], query), k, keep
            )
            if time_filter.admit_unknown:  # rows of unknown time have no entries: scored from the time order
                unknown = cand.unknown(self.index.unknown_rows, ti.num_rows)
                offsets, scores = self._merge(offsets, scores, *self.exact_top(unknown, query, k), k)
        else:
            if plan.layout == "tree":
                pos, scores = ti.approximate(detail, query, k)
            elif detail is not None:  # an int8 pass over the positions that can hold candidates
                pos, scores = ti.hull_top(*detail, query, k, lambda p: cand.mask[ti.order[p]])
            else:
                pos, scores = ti.exact(cand.positions(ti), query, k)
            offsets = ti.order[pos]
        return (*self._merge(offsets, scores, *self._take_top(cand.late(ti.num_rows), query, k), k), plan)

    def search(
        self,
        vector: np.ndarray,
        time_filter: TimeFilter,
        *,
        k: int = 10,
        temporal_weight: float | None = None,
        text: str | None = None,
    ) -> list[Hit]:
        """Top-``k`` chunks passing ``time_filter``, best by :func:`rank` first.

        Args:
            vector: query embedding, float32 ``(dim,)``, unit norm.
            time_filter: typed filter; an empty filter searches every row.
            k: number of hits (top-k); fewer when fewer rows pass.
            temporal_weight: weight of temporal focus (default: the searcher's).
            text: the query's words for the lexical signal (the intent's core query); ``None``: none.

        Returns:
            :class:`Hits` (a list of :class:`Hit` with the ``COLUMNS``; ``score`` = cosine, ``focus`` in
            [0, 1]) whose ``plan`` says which path ran and its expected recall.
        """
        weight = self.temporal_weight if temporal_weight is None else temporal_weight
        rerank = bool(time_filter.event) and bool(weight)
        depth = self.weights.rerank_depth(k) if rerank else k
        offsets, scores, plan = self.top_k_planned(vector, time_filter, k=depth)
        demoted = self.demoted(time_filter)
        if demoted is not None:  # the demoted tier: scored exactly, pooled with the admitted candidates
            offsets, scores = self._merge(
                offsets, scores, *self.exact_top(np.flatnonzero(demoted), vector, depth), depth
            )
        focus = self.index.focus(offsets, time_filter)
        lower = self._lower_tier(offsets, demoted) if time_filter.admit_unknown else None
        if lower is not None:
            focus = np.where(lower, UNKNOWN_FIT, focus)
        if rerank:
            score = self._rerank_scores(offsets, scores, focus, weight, text)
        else:
            score = np.asarray(scores, dtype=np.float64)
        order = self._order(score, lower)[:k]
        offsets, scores, focus = offsets[order], scores[order], focus[order]
        hits = Hits()
        hits.plan = plan
        if len(offsets):
            rows = self.dataset.take(offsets, columns=COLUMNS).to_pylist()
            hits.extend(Hit(row, float(s), float(f)) for row, s, f in zip(rows, scores, focus, strict=True))
        return hits

    def demoted(self, time_filter: TimeFilter) -> np.ndarray | None:
        """Bool ``(rows,)`` of the demoted tier under ``time_filter``
        (:func:`~diachron.retrieval.filters.demoted_mask`), ``None`` when it is empty (kept per filter)."""
        found = self._demoted.get(time_filter, False)
        if found is False:
            mask = demoted_mask(self.index, time_filter)
            found = mask if mask.any() else None
            if len(self._demoted) >= MEMO_FILTERS:
                self._demoted = {}  # replaced, not mutated while another thread may read it
            self._demoted[time_filter] = found
        return found

    def _lower_tier(self, offsets: np.ndarray, demoted: np.ndarray | None) -> np.ndarray:
        """Per offset: in the lower tier (demoted, or of unknown time)."""
        index = self.index
        lower = index.first_interval[offsets + 1] == index.first_interval[offsets]
        return lower | demoted[offsets] if demoted is not None else lower

    def _order(self, score: np.ndarray, lower: np.ndarray | None) -> np.ndarray:
        """Positions best first: ``score`` minus ``weights.demotion`` in the lower tier (an infinite demotion:
        every admitted candidate first, each tier by score)."""
        penalty = self.weights.demotion
        if lower is None or not penalty:
            return np.argsort(-score, kind="stable")
        if np.isinf(penalty):
            return np.lexsort((-score, lower))
        return np.argsort(-(score - penalty * lower), kind="stable")

    def _rerank_scores(
        self, offsets: np.ndarray, scores: np.ndarray, focus: np.ndarray, weight: float, text: str | None
    ) -> np.ndarray:
        """:func:`rank` of the pool: cosine + lexical signal, document context, temporal fit."""
        context, relevance = None, scores
        lexical_on = bool(text and text.strip() and self.lexical_weight and self.has_text_index)
        if (self.context_weight or lexical_on) and len(offsets):
            ids = self.dataset.take(offsets, columns=["doc_id", "chunk_id"])
            if lexical_on:  # cosine + lexical signal, once: the document context is taken of it too
                relevance = scores + self.lexical_weight * self.lexical(  # type: ignore[arg-type]
                    text, ids.column("chunk_id").to_pylist()
                )
            if self.context_weight:
                context = document_context(relevance, ids.column("doc_id").to_numpy(zero_copy_only=False))
        return rank(relevance, focus, weight, context=context, context_weight=self.context_weight)

    def lexical(self, text: str, chunk_ids: list[str]) -> np.ndarray:
        """BM25 score of each of ``chunk_ids`` for ``text``, scaled by their best (float64 in [0, 1]; 0 for a
        chunk sharing no word with it).

        The full-text query is prefiltered to ``chunk_ids`` (an Arrow expression, never SQL), so every chunk
        of the pool is scored however large the table; the index's term statistics are the whole table's (the
        scores equal those of an unfiltered query). The text goes in as a match query (no query syntax).
        """
        import pyarrow.compute as pc
        from lance.query import MatchQuery

        if not chunk_ids:
            return np.zeros(0)
        found = self.dataset.to_table(
            columns=["chunk_id", "_score"],
            full_text_query=MatchQuery(text, "text"),
            filter=pc.field("chunk_id").isin(chunk_ids),
            prefilter=True,
            limit=len(chunk_ids),
        )
        best = dict(
            zip(found.column("chunk_id").to_pylist(), found.column("_score").to_pylist(), strict=True)
        )
        out = np.array([best.get(c, 0.0) for c in chunk_ids], dtype=np.float64)
        top = out.max() if len(out) else 0.0
        return out / top if top > 0 else out

    def outside_examples(
        self, vector: np.ndarray, time_filter: TimeFilter, *, n: int = 3
    ) -> list[dict[str, Any]]:
        """The most similar chunks the time filter rejected, with the reason (for the trace).

        Scores every rejected row when at most ``EXAMPLE_POOL`` are rejected, else an evenly spaced sample
        of that many (examples, not a ranking). Returns ``[{"chunk_id", "doc_id", "score", "why"}]``.
        """
        if time_filter.is_empty or not self.num_rows:
            return []
        rejected = np.ones(self.num_rows, dtype=bool)
        rejected[self.candidates(time_filter)] = False
        demoted = self.demoted(time_filter)
        if demoted is not None:
            rejected &= ~demoted
        rows = np.flatnonzero(rejected)
        if len(rows) > EXAMPLE_POOL:
            rows = rows[np.linspace(0, len(rows) - 1, EXAMPLE_POOL).astype(np.int64)]
        offsets, scores = self.exact_top(rows, vector, n)
        if not len(offsets):
            return []
        ids = self.dataset.take(offsets, columns=["chunk_id", "doc_id"]).to_pylist()
        return [
            {**r, "score": round(float(s), 6), "why": self._why(int(o), time_filter)}
            for r, s, o in zip(ids, scores, offsets, strict=True)
        ]

    def _why(self, row: int, time_filter: TimeFilter) -> str:
        """The first filter clause that rejects ``row``."""
        index = self.index
        if time_filter.event:
            lo, hi = index.first_interval[row], index.first_interval[row + 1]
            if lo == hi:
                return "unknown time"
            if not index.focus(np.array([row]), time_filter)[0]:
                return "no event interval overlaps the query"
        if time_filter.valid and not any(
            index.valid_from[row] < bounds(q)[1] and index.valid_until[row] > bounds(q)[0]
            for q in time_filter.valid
        ):
            return "version not valid in the window"
        return "recorded after as_of"


def _has_text_index(dataset: Any) -> bool:
    """True when the table has a full-text index on ``text`` (``Store.optimize`` builds it)."""
    try:
        return any(
            list(d.field_names) == ["text"] and "Inverted" in d.type_url for d in dataset.describe_indices()
        )
    except Exception:  # noqa: BLE001 - a dataset without index metadata: no lexical signal
        return False


def _open_time_index(dataset: Any) -> TimePartitionedIndex | None:
    """The time index beside the table (``<db>/chunks.time_index``; on object storage the published version,
    through the local cache of :mod:`diachron.retrieval.index_cache`), if one was built for its rows."""
    directory = index_dir(str(dataset.uri))
    if directory is None:
        directory = index_cache.fetch(str(dataset.uri))
    return (
        TimePartitionedIndex.open(directory, dataset)
        if directory is not None and directory.is_dir()
        else None
    )


def _stamp(dataset: Any) -> Any:
    """Modification time (ns) of the time index's manifest beside a local table, ``None`` when absent; on
    object storage the published pointer's ``(table_version, num_rows)``."""
    directory = index_dir(str(dataset.uri))
    if directory is None:  # object storage: the published pointer (read at most once a second)
        return index_cache.stamp(str(dataset.uri))
    try:
        return (directory / MANIFEST).stat().st_mtime_ns
    except OSError:
        return None
