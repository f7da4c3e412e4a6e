"""The on-disk reference of the ``10m`` tier (issue 30): :class:`bench.speed.baselines.StreamScan` reads the
window's candidates from the time index's memory-mapped float32 file and must return the exact top-10
worked out by hand (overlaps per interval, a full inner product over the in-window rows, in memory)."""

from __future__ import annotations

import lancedb
import numpy as np
import pytest
from diachron.ingest.time_index import build_time_index
from diachron.retrieval.interval_index import bounds
from diachron.schemas.records import intervals_from_arrow
from diachron.schemas.time_index import ORDER_FILE, VECTORS_FILE, index_dir

from bench.speed.baselines import StreamScan, load_arrays
from bench.speed.generate import generate, queries
from bench.speed.query import summary

pytestmark = pytest.mark.integration
K = 10


def test_stream_scan_reads_the_mapped_time_order_and_returns_the_exact_top_10(tmp_path):
    data, _ = generate(3_000, seed=17, kind="clustered")
    table = lancedb.connect(str(tmp_path / "db")).create_table("chunks", data=data)
    directory = index_dir(table.to_lance().uri)
    build_time_index(table.to_lance(), directory, segment_rows=256, ann_min_rows=1024)
    order = np.load(directory / ORDER_FILE)
    assert not np.array_equal(order, np.arange(len(order)))  # time order differs from ingest order
    arrays = load_arrays(table.to_lance(), vectors=False)
    assert arrays.vectors is None
    mapped = np.load(directory / VECTORS_FILE, mmap_mode="r")
    stream = StreamScan(arrays, mapped, order)
    rows = data.to_pylist()
    vectors = np.stack([np.asarray(r["vector"], dtype=np.float32) for r in rows])
    for q in queries(1, seed=3, kind="clustered"):
        inside = [
            i
            for i, r in enumerate(rows)
            if any(iv.overlaps(q.interval) for iv in intervals_from_arrow(r["intervals"]))
        ]
        truth = [inside[j] for j in np.argsort(-(vectors[inside] @ q.vector))[:K]]
        offsets, scores = stream.search(q.vector, *bounds(q.interval), K)
        assert offsets.tolist() == truth
        assert np.allclose(scores, vectors[truth] @ q.vector, atol=1e-5)


def test_on_disk_summary_compares_with_the_stream_scan():
    window = {"cold_ms": 1.0, "p95_ms": 9.0, "recall_at_10": 1.0, "min_recall_at_10": 1.0, "selectivity": 0.5}
    paths = {
        "stream": {"20 years": {**window, "p50_ms": 80.0}},
        "client": {"20 years": {**window, "p50_ms": 20.0, "min_recall_at_10": 0.9}},
        "client+rows": {"20 years": {**window, "p50_ms": 30.0}},
        "exact": {"20 years": {**window, "p50_ms": 25.0}},
    }
    build = {"generate_s": 1.0, "write_s": 2.0, "btree_s": 3.0, "time_index_s": 4.0, "table_disk_bytes": 100}
    build |= {"time_index_disk_bytes": 50, "searcher_bytes_per_chunk": 90.0}
    result = {"tier": "10m", "on_disk": True, "kinds": {"uniform": {"paths": paths, "build": build}}}
    out = summary(result)
    assert (
        out["worst_p50_over_best_baseline"] == 0.25 and out["worst_p50_over_candidate_scan_at_20pct"] == 0.25
    )
    assert out["min_recall_at_10"] == 0.9 and out["worst_client_p50_ms"] == 20.0
    assert out["max_build_s"] == 10.0 and out["max_disk_bytes"] == 150
