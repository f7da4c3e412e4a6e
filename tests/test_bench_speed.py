"""Speed-benchmark plumbing: the generator is deterministic and every search path is exact (no timing)."""

from datetime import UTC, datetime

import lancedb
import numpy as np
import pytest
from diachron.ingest.time_index import build_time_index
from diachron.retrieval.filters import TimeFilter
from diachron.retrieval.interval_index import bounds
from diachron.retrieval.search import Searcher
from diachron.schemas.records import ChunkRecord, arrow_schema, intervals_from_arrow
from diachron.schemas.time import Interval
from diachron.schemas.time_index import index_dir

from bench.speed.baselines import BruteForce, PaperDesign, load_arrays
from bench.speed.generate import WINDOWS, generate, queries

K = 10


def test_generator_is_deterministic_and_follows_the_chunks_schema():
    a, flat_a = generate(2_000, seed=3, kind="clustered")
    b, flat_b = generate(2_000, seed=3, kind="clustered")
    c, _ = generate(2_000, seed=4, kind="clustered")
    assert a.equals(b)
    assert np.array_equal(flat_a.start, flat_b.start)
    assert not a.column("vector").equals(c.column("vector"))
    assert a.schema.equals(arrow_schema(ChunkRecord, dim=384))
    vectors = np.stack(a.column("vector").to_numpy(zero_copy_only=False))
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    rows = a.slice(0, 200).to_pylist()
    for row in rows:  # the hull is the min start / max end of the row's own intervals
        ivs = intervals_from_arrow(row["intervals"])
        if not ivs:
            assert row["time_status"] == "unknown" and row["event_start"] is None
            continue
        assert row["event_start"] == min(i.start for i in ivs)
        ends = [i.end for i in ivs]
        assert row["event_end"] == (None if None in ends else max(ends))
    granularities = {iv["granularity"] for row in rows for iv in row["intervals"]}
    assert granularities == {"instant", "day", "month", "year"}
    assert [q.window for q in queries(2)] == [w for w in WINDOWS for _ in range(2)]
    assert all(np.array_equal(x.vector, y.vector) for x, y in zip(queries(2), queries(2), strict=True))


def _exact_top_k(
    rows: list[dict], window: Interval, vector: np.ndarray, weight: float = 0.0, context_weight: float = 0.75
) -> list[str]:
    """Independent ground truth: Interval.overlaps on each row's intervals, then a full dot product;
    with ``weight``, the top max(3k, 50) by similarity re-ranked by similarity + context_weight x (best
    similarity of the same document in the pool - own) + weight x focus."""
    keep = [r for r in rows if any(i.overlaps(window) for i in intervals_from_arrow(r["intervals"]))]
    scores = np.array([np.dot(np.asarray(r["vector"], dtype=np.float32), vector) for r in keep])
    order = np.argsort(-scores)
    if not weight:
        return [keep[i]["chunk_id"] for i in order[:K]]
    pool = order[: max(3 * K, 50)]
    year = 365.25 * 86_400

    def near(i: Interval) -> float:  # a window open on one side: 1 / (1 + years between interval and bound)
        if (window.start is None) == (window.end is None):
            return 1.0
        if window.start is None:
            gap = 0.0 if i.end is None else max(0.0, (window.end - min(i.end, window.end)).total_seconds())
        else:
            gap = (
                0.0
                if i.start is None
                else max(0.0, (max(i.start, window.start) - window.start).total_seconds())
            )
        return 1.0 / (1.0 + gap / year)

    focus = [
        np.mean([i.overlaps(window) * near(i) for i in intervals_from_arrow(keep[j]["intervals"])])
        for j in pool
    ]
    best: dict[str, float] = {}
    for j in pool:
        best[keep[j]["doc_id"]] = max(best.get(keep[j]["doc_id"], -np.inf), float(scores[j]))
    ranked = sorted(
        zip(pool, focus, strict=True),
        key=lambda p: (
            -(scores[p[0]] + context_weight * (best[keep[p[0]]["doc_id"]] - scores[p[0]]) + weight * p[1])
        ),
    )
    return [keep[j]["chunk_id"] for j, _ in ranked[:K]]


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    table, _ = generate(5_000, seed=11, kind="uniform")
    db = lancedb.connect(str(tmp_path_factory.mktemp("bench") / "db"))
    chunks = db.create_table("chunks", data=table)  # vectors read with take (no time index)
    indexed = db.create_table("chunks_indexed", data=table)  # vectors read from the time index, in time order
    build_time_index(
        indexed.to_lance(), index_dir(indexed.to_lance().uri), segment_rows=512, ann_min_rows=1024
    )
    return table.to_pylist(), chunks, indexed


@pytest.mark.integration
def test_every_search_path_returns_the_exact_top_10(tables):
    rows, chunks, indexed = tables
    arrays = load_arrays(chunks.to_lance())
    ids = [r["chunk_id"] for r in rows]
    brute, paper = BruteForce(arrays), PaperDesign(arrays)
    fast, fast_indexed = Searcher(chunks, temporal_weight=0.0), Searcher(indexed, temporal_weight=0.0)
    assert fast.time_index is None and fast_indexed.time_index is not None
    # a window starting where a chunk's only interval ends, queried with that chunk's own vector: touching
    # is not overlapping (half-open), so the best-scoring chunk must stay out
    toucher = next(r for r in rows if len(r["intervals"]) == 1 and r["intervals"][0]["granularity"] == "day")
    end = toucher["intervals"][0]["end"]
    edge = Interval(end, datetime(end.year + 1, 1, 1, tzinfo=UTC))
    cases = [(q.interval, q.vector) for q in queries(2, seed=5)]
    cases.append((edge, np.asarray(toucher["vector"], dtype=np.float32)))
    for window, vector in cases:
        truth = _exact_top_k(rows, window, vector)
        assert len(truth) == K
        assert window is not edge or toucher["chunk_id"] not in truth
        start, end = bounds(window)
        assert [ids[i] for i in brute.search(vector, start, end, K)[0]] == truth
        assert [ids[i] for i in paper.search(vector, start, end, K)[0]] == truth
        time_filter = TimeFilter(event=(window,))
        by_id = {r["chunk_id"]: r for r in rows}
        for searcher in (fast, fast_indexed):
            hits = searcher.search(vector, time_filter, k=K)
            assert [h.row["chunk_id"] for h in hits] == truth
            expected = [
                float(np.dot(np.asarray(by_id[h.row["chunk_id"]]["vector"], dtype=np.float32), vector))
                for h in hits
            ]
            assert np.allclose([h.score for h in hits], expected, atol=1e-5)
        # with re-ranking by temporal focus: the independent re-rank of the same pool
        reranked = fast_indexed.search(vector, time_filter, k=K, temporal_weight=0.1)
        assert [h.row["chunk_id"] for h in reranked] == _exact_top_k(rows, window, vector, weight=0.1)


@pytest.mark.integration
def test_searcher_applies_transaction_time_and_reads_one_snapshot(tmp_path):
    table, _ = generate(500, seed=12)
    chunks = lancedb.connect(str(tmp_path / "db")).create_table("chunks", data=table)
    fast = Searcher(chunks)
    rows = table.to_pylist()
    vector = np.asarray(rows[0]["vector"], dtype=np.float32)
    recorded = rows[0]["recorded_at"]  # every generated row has the same transaction time
    window = (Interval(datetime(1990, 1, 1, tzinfo=UTC), None),)
    assert fast.search(vector, TimeFilter(event=window, as_of=datetime(2000, 1, 1, tzinfo=UTC))) == []
    assert len(fast.search(vector, TimeFilter(event=window, as_of=recorded))) == K
    assert len(fast.candidates(TimeFilter())) == len(rows)
    assert not fast.is_stale()
    chunks.add(generate(1, seed=99)[0])
    assert fast.is_stale()
    assert len(fast.candidates(TimeFilter())) == len(rows)
    assert len(Searcher(chunks).candidates(TimeFilter())) == len(rows) + 1


def test_scaling_names_the_stage_the_others_wait_on():
    from bench.speed.scaling import waits

    stages = [
        {"name": "MapBatches(planned_block)", "busy_s": 2.0, "span_s": 5.0, "tasks": 4, "nodes": 1},
        {"name": "MapBatches(AnnotateStage)", "busy_s": 12.0, "span_s": 40.0, "tasks": 8, "nodes": 2},
        {"name": "MapBatches(EmbedStage)", "busy_s": 60.0, "span_s": 45.0, "tasks": 8, "nodes": 2},
        {"name": "MapBatches(ValidateStage)", "busy_s": 6.0, "span_s": 40.0, "tasks": 8, "nodes": 1},
    ]
    # 80 busy core-seconds of 50 s x 2 cores = 100: 20% idle; embed is the busiest, the others wait on it
    assert waits(stages, 50.0, 2) == (
        "EmbedStage busy 60 s of 50 s × 2 cores (on 2 node(s)); others: AnnotateStage 12 s, "
        "ValidateStage 6 s, planned_block 2 s; idle 20% of core time"
    )
    assert waits([], 10.0, 1) == "no Ray Data stats"
