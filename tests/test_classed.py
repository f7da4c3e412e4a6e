"""The length-classed entries (exact path for narrow windows): the slices hold every overlapping interval,
the top-k equals a brute-force scan, and the planner picks the layout that reads fewer rows.

Truth by a second method: a NumPy overlap mask over the flat intervals (``start < qe`` and ``end > qs``)
or ``Interval.overlaps`` on each row's intervals, then a full inner product.
"""

from __future__ import annotations

from datetime import UTC, datetime

import lancedb
import numpy as np
import pyarrow as pa
import pytest
from diachron.ingest.classed_layout import write_classed
from diachron.ingest.time_index import build_time_index
from diachron.retrieval.classed import ClassedEntries
from diachron.retrieval.filters import TimeFilter
from diachron.retrieval.partitioned import GATHER_COST
from diachron.retrieval.quantized import first_pass_cost, prepare
from diachron.retrieval.search import Searcher
from diachron.schemas.records import intervals_from_arrow
from diachron.schemas.time import Interval
from diachron.schemas.time_index import OPEN_FUTURE, OPEN_PAST, index_dir, int8_scale, quantize

from bench.speed.generate import EPOCH_US, SPAN_US, generate

K = 10
DAY = 86_400 * 1_000_000


def _brute(starts, ends, rows, vectors, query, qs, qe, k):
    """Top-k distinct rows with an interval overlapping ``[qs, qe)``, by a mask over every interval."""
    inside = np.unique(rows[(starts < qe) & (ends > qs)])
    scores = vectors[inside] @ query
    order = np.argsort(-scores, kind="stable")[:k]
    return inside[order], scores[order]


def test_classed_top_equals_brute_force_on_every_kind_of_interval(tmp_path):
    rng = np.random.default_rng(11)
    n_rows, n = 600, 1_500
    rows = np.sort(rng.integers(0, n_rows, n))
    starts = rng.integers(0, 10_000, n).astype(np.int64)
    lengths = rng.choice([0, 1, 2, 3, 7, 8, 64, 1000, 4096, 5000], n)
    ends = starts + lengths
    kind = rng.random(n)
    starts[kind < 0.05] = OPEN_PAST  # open to the past
    ends[(kind > 0.95) | (kind < 0.02)] = OPEN_FUTURE  # open to the future; < 0.02: open on both sides
    vectors = rng.standard_normal((n_rows, 16)).astype(np.float32)
    position = rng.permutation(n_rows)  # the time-ordered copy's order: any permutation
    ordered = np.empty_like(vectors)
    ordered[position] = vectors
    scale = int8_scale(np.abs(vectors).max(axis=0))
    assert write_classed(tmp_path, starts, ends, rows, quantize(ordered, scale), position) == n
    entries = ClassedEntries(tmp_path)
    assert sorted(entries.row.tolist()) == rows.tolist()
    for _ in range(300):
        qs = int(rng.integers(-100, 10_500))
        qe = qs + int(rng.choice([1, 2, 5, 100, 3000, 20_000]))
        query = rng.standard_normal(16).astype(np.float32)
        slices = entries.slices([(qs, qe)])
        got_rows, got_scores = entries.top(
            slices, prepare(query, scale), lambda r, q=query: vectors[r] @ q, K
        )
        want_rows, want_scores = _brute(starts, ends, rows, vectors, query, qs, qe, K)
        assert got_rows.tolist() == want_rows.tolist()
        assert np.allclose(got_scores, want_scores, atol=1e-5)
        # every overlapping interval lies in some slice; the slices hold no more than the groups' bounds
        overlapping = int(((starts < qe) & (ends > qs)).sum())
        assert entries.cost(slices) >= overlapping
    assert entries.slices([(5, 5)]) == []  # an empty window


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    data, _ = generate(4_000, seed=31, kind="uniform")
    rng = np.random.default_rng(2)
    recorded = pa.array(EPOCH_US + rng.integers(0, SPAN_US, data.num_rows), type=pa.int64()).cast(
        pa.timestamp("us", tz="UTC")
    )
    data = data.set_column(
        data.schema.get_field_index("recorded_at"), data.schema.field("recorded_at"), recorded
    )
    table = lancedb.connect(str(tmp_path_factory.mktemp("classed") / "db")).create_table("chunks", data=data)
    build_time_index(table.to_lance(), index_dir(table.to_lance().uri), segment_rows=256, ann_min_rows=1024)
    rows = data.to_pylist()
    return table, rows, np.stack([np.asarray(r["vector"], dtype=np.float32) for r in rows])


def _truth(rows, vectors, window, vector, ok=lambda r: True, unknown=False):
    inside = [
        i
        for i, r in enumerate(rows)
        if ok(r)
        and (
            any(iv.overlaps(window) for iv in intervals_from_arrow(r["intervals"]))
            or (unknown and not r["intervals"])
        )
    ]
    scores = vectors[inside] @ vector
    return [inside[j] for j in np.argsort(-scores, kind="stable")[:K]]


def _offsets(hits_or_offsets):
    return [int(o) for o in hits_or_offsets]


def test_planner_reads_a_narrow_window_from_the_classed_entries_exactly(table):
    tbl, rows, vectors = table
    searcher = Searcher(tbl, temporal_weight=0.0)
    ti = searcher.time_index
    rng = np.random.default_rng(5)
    for year in (1999, 2006, 2013, 2020):
        window = Interval(datetime(year, 3, 4, tzinfo=UTC), datetime(year, 3, 5, tzinfo=UTC))
        tf = TimeFilter(event=(window,))
        plan, slices = searcher.plan(tf)
        candidates = searcher.candidates(tf)
        positions = ti.position[candidates]
        hull = int(positions.max() - positions.min() + 1)
        assert plan.layout == "classed" and plan.path == "exact" and plan.expected_recall == 1.0
        assert plan.scored_rows == ti.classed.cost(slices)
        cost = first_pass_cost(vectors.shape[1])
        assert cost * plan.scored_rows < min(cost * hull, GATHER_COST * len(candidates))
        vector = vectors[rng.integers(len(rows))]
        offsets, scores, _ = searcher.top_k_planned(vector, tf, k=K)
        truth = _truth(rows, vectors, window, vector)
        assert _offsets(offsets) == truth
        assert np.allclose(scores, vectors[truth] @ vector, atol=1e-5)
        # other clauses and the unknown-time tier still apply on the classed path
        as_of = datetime(2010, 1, 1, tzinfo=UTC)
        cut = int(as_of.timestamp() * 1_000_000)
        tf_asof = TimeFilter(event=(window,), as_of=as_of)
        offsets, _, plan = searcher.top_k_planned(vector, tf_asof, k=K)
        assert plan.layout == "classed"
        assert _offsets(offsets) == _truth(
            rows,
            vectors,
            window,
            vector,
            ok=lambda r, cut=cut: int(r["recorded_at"].timestamp() * 1e6) <= cut,
        )
        offsets, _, plan = searcher.top_k_planned(
            vector, TimeFilter(event=(window,), admit_unknown=True), k=K
        )
        assert plan.layout == "classed"
        assert _offsets(offsets) == _truth(rows, vectors, window, vector, unknown=True)


def test_planner_keeps_the_time_order_when_its_hull_is_cheaper(table):
    tbl, rows, vectors = table
    searcher = Searcher(tbl, temporal_weight=0.0, approximate=False)
    window = Interval(datetime(1996, 1, 1, tzinfo=UTC), None)  # almost every row: the hull is the table
    tf = TimeFilter(event=(window,))
    plan, detail = searcher.plan(tf)
    # one int8 pass over the whole blocks that can hold candidates: the known rows (unknown time sorts last)
    known = sum(1 for r in rows if r["intervals"])
    assert plan.layout == "time" and detail[0] == 0 and known <= detail[1] <= known + 4096
    assert plan.scored_rows == detail[1] - detail[0] >= plan.candidates
    vector = vectors[7]
    offsets, _, _ = searcher.top_k_planned(vector, tf, k=K)
    assert _offsets(offsets) == _truth(rows, vectors, window, vector)
