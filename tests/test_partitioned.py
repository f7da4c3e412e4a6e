"""The planner and the time-partitioned index: which path runs, and what the approximate path returns.

Small generated tables (8k rows, segments of 256, IVF on nodes of >= 1024 rows) so that the tree has
several ANN levels; the planner's "many candidates" threshold is lowered to match. At this size the exact
int8 pass over a wide window costs less than the tree's probes, so the tests of the approximate path run
with the NumPy first pass (no torch kernel: an int8 estimate then costs more than a float32 row), where
the planner must pick the tree. Ground truth is worked out independently: ``Interval.overlaps`` on each
row's intervals and a full NumPy inner product.
"""

from __future__ import annotations

from datetime import UTC, datetime

import lancedb
import numpy as np
import pyarrow as pa
import pytest
from diachron.ingest.time_index import build_time_index
from diachron.retrieval import quantized
from diachron.retrieval import search as search_module
from diachron.retrieval.filters import TimeFilter
from diachron.retrieval.partitioned import TimePartitionedIndex
from diachron.retrieval.search import Searcher
from diachron.schemas.records import intervals_from_arrow
from diachron.schemas.time import Interval
from diachron.schemas.time_index import index_dir

from bench.speed.generate import generate

pytestmark = pytest.mark.integration

N, K = 8_000, 10
WIDE = Interval(datetime(1999, 1, 1, tzinfo=UTC), None)
NARROW = Interval(datetime(2010, 3, 1, tzinfo=UTC), datetime(2010, 4, 1, tzinfo=UTC))


def _truth(
    rows: list[dict], vectors: np.ndarray, window: Interval, vector: np.ndarray
) -> tuple[set[int], list[int]]:
    """``(in-window offsets, exact top-K offsets)`` by hand: overlaps per interval, then a full dot
    product."""
    inside = [
        i
        for i, r in enumerate(rows)
        if any(iv.overlaps(window) for iv in intervals_from_arrow(r["intervals"]))
    ]
    scores = vectors[inside] @ vector
    return set(inside), [inside[j] for j in np.argsort(-scores)[:K]]


def _tight_clusters(data: pa.Table, seed: int) -> pa.Table:
    """``data`` with vectors around 16 centres (real embeddings cluster; 8k rows over the generator's 256
    centres leave too few neighbours per node for any partition to help)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((16, 384)).astype(np.float32)
    x = centres[rng.integers(0, 16, data.num_rows)] + 0.03 * rng.standard_normal((data.num_rows, 384)).astype(
        np.float32
    )
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    column = pa.FixedSizeListArray.from_arrays(pa.array(x.reshape(-1)), 384)
    return data.set_column(data.schema.get_field_index("vector"), data.schema.field("vector"), column)


def _queries(table_rows: list[dict], n: int, seed: int) -> list[np.ndarray]:
    """Query vectors like the data: a row's vector plus noise, re-normalised."""
    rng = np.random.default_rng(seed)
    out = []
    for i in rng.integers(0, len(table_rows), n):
        v = np.asarray(table_rows[i]["vector"], dtype=np.float32) + 0.03 * rng.standard_normal(384).astype(
            np.float32
        )
        out.append(v / np.linalg.norm(v))
    return out


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    out = {}
    for kind in ("clustered", "uniform"):
        data, _ = generate(N, seed=21, kind="uniform")
        data = _tight_clusters(data, seed=3) if kind == "clustered" else data
        table = lancedb.connect(str(tmp_path_factory.mktemp(kind) / "db")).create_table("chunks", data=data)
        manifest = build_time_index(
            table.to_lance(), index_dir(table.to_lance().uri), segment_rows=256, ann_min_rows=1024
        )
        rows = data.to_pylist()
        out[kind] = (
            table,
            rows,
            np.stack([np.asarray(r["vector"], dtype=np.float32) for r in rows]),
            manifest,
        )
    return out


@pytest.fixture(autouse=True)
def few_is_small(monkeypatch):
    monkeypatch.setattr(search_module, "EXACT_MAX_ROWS", 500)


@pytest.fixture
def numpy_first_pass(monkeypatch):
    monkeypatch.setattr(quantized, "_OP", None)


def test_with_the_int8_kernel_a_wide_window_is_exact_and_cheaper_than_the_tree(tables):
    assert quantized._op() is not None, "torch's int8 kernel (aten::_weight_int8pack_mm) is missing"
    table, rows, vectors, _ = tables["clustered"]
    searcher = Searcher(table, temporal_weight=0.0)
    tf = TimeFilter(event=(WIDE,))
    plan, _ = searcher.plan(tf)
    ti = searcher.time_index
    cover = ti.cover(searcher._candidates(tf).positions(ti), tf)
    assert plan.path == "exact" and plan.layout == "time" and plan.expected_recall == 1.0
    assert (
        quantized.first_pass_cost(384) * ti.num_rows < 3.0 * cover.scored_rows
    )  # why: the int8 pass reads less
    for vector in _queries(rows, 4, seed=9):
        offsets, scores, _ = searcher.top_k_planned(vector, tf, k=K)
        _, truth = _truth(rows, vectors, WIDE, vector)
        assert offsets.tolist() == truth
        assert np.allclose(scores, vectors[truth] @ vector, atol=1e-5)


def test_planner_exact_when_few_approximate_when_many_and_cheap(tables, numpy_first_pass):
    table, _, _, manifest = tables["clustered"]
    searcher = Searcher(table, temporal_weight=0.0)
    assert searcher.time_index is not None
    narrow, _ = searcher.plan(TimeFilter(event=(NARROW,)))
    assert narrow.path == "exact" and narrow.candidates <= 500 and narrow.expected_recall == 1.0
    wide, cover = searcher.plan(TimeFilter(event=(WIDE,)))
    assert wide.path == "approximate"
    assert wide.scored_rows <= 0.5 * wide.candidates
    assert wide.expected_recall == min(
        manifest["levels"][str(int(searcher.time_index.nodes["level"][n]))]["recall_at_10"]
        for n in cover.nodes
        if searcher.time_index.node_lists[n] < searcher.time_index.node_lists[n + 1]
    )
    # uniform vectors: no nprobe below half the lists reached the recall target, so the planner stays exact
    uniform, _, _, u_manifest = tables["uniform"]
    assert all(level["nprobe"] == level["nlist"] for level in u_manifest["levels"].values())
    plan, _ = Searcher(uniform, temporal_weight=0.0).plan(TimeFilter(event=(WIDE,)))
    assert plan.path == "exact" and plan.candidates > 500


def test_approximate_results_lie_in_the_window_with_measured_recall(tables, numpy_first_pass):
    table, rows, vectors, _ = tables["clustered"]
    searcher = Searcher(table, temporal_weight=0.0)
    recalls = []
    exact = Searcher(table, temporal_weight=0.0)
    exact.time_index = None
    windows = [
        WIDE,
        Interval(datetime(1997, 1, 1, tzinfo=UTC), None),
        Interval(None, datetime(2024, 1, 1, tzinfo=UTC)),
    ]
    for window, vector in zip(windows * 4, _queries(rows, 12, seed=4), strict=True):
        inside, truth = _truth(rows, vectors, window, vector)
        hits = searcher.search(vector, TimeFilter(event=(window,)), k=K)
        assert hits.plan.path == "approximate", window
        got = [int(h.row["chunk_id"].rsplit("-", 1)[1]) for h in hits]
        assert set(got) <= inside and len(got) == K
        assert np.allclose([h.score for h in hits], vectors[got] @ vector, atol=1e-5)  # exact scores
        recalls.append(len(set(got) & set(truth)) / K)
        # the exact path (no index) gives the truth itself
        assert [
            int(h.row["chunk_id"].rsplit("-", 1)[1])
            for h in exact.search(vector, TimeFilter(event=(window,)))
        ] == truth
    assert np.mean(recalls) >= 0.9, recalls


def test_rows_written_after_the_build_are_scored_and_an_incremental_build_reuses_the_tree(tmp_path):
    data, _ = generate(3_000, seed=5, kind="clustered")
    table = lancedb.connect(str(tmp_path / "db")).create_table("chunks", data=data)
    directory = index_dir(table.to_lance().uri)
    build_time_index(table.to_lance(), directory, segment_rows=256, ann_min_rows=1024)
    extra, _ = generate(700, seed=6, kind="clustered")
    extra = extra.set_column(0, "chunk_id", [[f"late-{i}" for i in range(700)]])
    table.add(extra)
    searcher = Searcher(table, temporal_weight=0.0)
    assert searcher.time_index is not None and searcher.time_index.num_rows == 3_000
    late = extra.slice(0, 1).to_pylist()[0]
    vector = np.asarray(late["vector"], dtype=np.float32)
    window = intervals_from_arrow(late["intervals"])[0] if late["intervals"] else None
    tf = TimeFilter(event=(window,)) if window else TimeFilter()
    assert searcher.search(vector, tf, k=1)[0].row["chunk_id"] == "late-0"  # a tail row, scored exactly
    manifest = build_time_index(table.to_lance(), directory, segment_rows=256, ann_min_rows=1024)
    assert manifest["incremental_from_rows"] == 3_000 and manifest["num_rows"] == 3_700
    rebuilt = Searcher(table, temporal_weight=0.0)
    assert rebuilt.time_index.num_rows == 3_700
    assert sorted(rebuilt.time_index.order.tolist()) == list(range(3_700))
    assert rebuilt.search(vector, tf, k=1)[0].row["chunk_id"] == "late-0"


def test_an_index_of_other_rows_is_ignored(tmp_path):
    data, _ = generate(1_000, seed=7)
    db = lancedb.connect(str(tmp_path / "db"))
    table = db.create_table("chunks", data=data)
    build_time_index(table.to_lance(), index_dir(table.to_lance().uri), segment_rows=256, ann_min_rows=1024)
    other = db.create_table("chunks", data=generate(1_000, seed=8)[0], mode="overwrite")
    assert TimePartitionedIndex.open(index_dir(other.to_lance().uri), other.to_lance()) is None
    assert Searcher(other).time_index is None


def test_candidates_and_the_hull_of_their_time_positions(tables):
    table, rows, vectors, _ = tables["uniform"]
    searcher = Searcher(table, temporal_weight=0.0, approximate=False)
    ti = searcher.time_index
    unknown = {i for i, r in enumerate(rows) if not r["intervals"]}
    before = Interval(None, datetime(1997, 6, 1, tzinfo=UTC))
    for window in (NARROW, WIDE, before):
        inside, _ = _truth(rows, vectors, window, vectors[0])
        for admit in (False, True):
            tf = TimeFilter(event=(window,), admit_unknown=admit)
            want = sorted(inside | unknown) if admit else sorted(inside)
            assert searcher.candidates(tf).tolist() == want and searcher.count(tf) == len(want)
            lo, hi = ti.hull(tf)
            positions = ti.position[np.array(want)]
            assert lo <= positions.min() and positions.max() < hi  # no candidate outside the hull
            if (
                not admit and window is not WIDE
            ):  # whole blocks of 256 rows: a narrow window reads few of them
                assert hi - lo < 0.6 * N, (window, lo, hi)
            vector = vectors[len(want) % N]
            offsets, _, plan = searcher.top_k_planned(vector, tf, k=K)
            scores = vectors[want] @ vector
            assert offsets.tolist() == [want[j] for j in np.argsort(-scores, kind="stable")[:K]], plan


def test_the_approximate_path_keeps_rows_of_unknown_time_when_they_are_admitted(tables, numpy_first_pass):
    table, rows, vectors, _ = tables["clustered"]
    searcher = Searcher(table, temporal_weight=0.0)
    unknown = [i for i, r in enumerate(rows) if not r["intervals"]]
    inside, _ = _truth(rows, vectors, WIDE, vectors[0])
    tf = TimeFilter(event=(WIDE,), admit_unknown=True)
    for row in unknown[:3]:  # a row of unknown time is its own best match: the tree must not lose it
        offsets, scores, plan = searcher.top_k_planned(vectors[row], tf, k=K)
        assert plan.path == "approximate" and plan.layout == "tree"
        assert int(offsets[0]) == row and scores[0] == pytest.approx(1.0, abs=1e-5)
        assert set(offsets.tolist()) <= inside | set(unknown)


def test_the_planner_skips_the_tree_when_its_boundary_alone_costs_more(tables, numpy_first_pass):
    table, rows, _, _ = tables["clustered"]
    searcher = Searcher(table, temporal_weight=0.0)
    ti = searcher.time_index
    month = Interval(
        datetime(2001, 1, 1, tzinfo=UTC), datetime(2001, 2, 1, tzinfo=UTC)
    )  # narrower than a leaf
    tf = TimeFilter(event=(month,))
    assert ti.inside_rows(tf) == 0
    calls = []
    ti.cover = lambda *a: calls.append(
        a
    )  # never asked: every candidate of a window no leaf lies inside is boundary
    plan, _ = searcher.plan(tf)
    assert plan.path == "exact" and not calls and plan.candidates > 0
    wide = TimeFilter(event=(WIDE,))
    assert ti.inside_rows(wide) >= 0.5 * searcher.count(
        wide
    )  # a wide window: most candidates in inside leaves
