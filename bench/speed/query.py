"""Query-speed benchmark: interval-filtered top-10 on generated ``chunks`` tables (issue 7).

Run: ``python -m bench.speed.query --tier 100k`` (or ``--tier 1m``). Generated tables and their indexes are
cached under ``--cache-dir`` (default ``~/.cache/diachron-bench``); results go to ``results/bench/`` (raw
JSON + markdown) and the tables to ``bench/speed/LATEST.md``.

Paths, all exact, timed on the same queries in the same run:

Ranking by similarity only (``temporal_weight=0``, the paper's), so every path has one exact answer.

* ``fast`` / ``fast-sorted`` — :class:`diachron.retrieval.search.Searcher`, the Client's path (in-memory NCLS over row
  offsets, vectors read from LanceDB with ``take``), on the same table and on a time-sorted copy
  (:func:`bench.speed.layout.time_sorted`); ``fast-sorted+rows`` also reads the hit rows (its ``search``).
* ``paper`` — NCLS candidates + NumPy exact inner product, vectors in memory (TA-RAG's design).
* ``numpy`` — NumPy masked scan of all rows, vectors in memory.

Latency is measured to the top-10 ids and scores, like the baselines;
``fast-sorted+rows`` also reads the hit rows (text and time columns), as a search must.
Queries are timed interleaved (all paths per query, rotating order) so that load on the shared machine
falls on every path alike.
"Cold" = the first query after opening the table (a new connection; for ``fast*`` a freshly built index),
with the OS page cache as it is (it cannot be dropped without root).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench.speed.baselines import BruteForce, PaperDesign, load_arrays
from bench.speed.generate import WINDOWS, Query, generate, queries
from bench.speed.layout import time_sorted
from bench.speed.report import write_reports
from diachron.retrieval.filters import TimeFilter
from diachron.retrieval.interval_index import OPEN_FUTURE, OPEN_PAST
from diachron.retrieval.search import Searcher

log = logging.getLogger(__name__)

TIERS = {"5k": 5_000, "100k": 100_000, "1m": 1_000_000}
CACHE_FORMAT = "v1"
K = 10
PATHS = ("numpy", "paper", "fast", "fast-sorted", "fast-sorted+rows")


def _dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def prepare(n: int, kind: str, cache: Path, seed: int = 0) -> dict[str, Any]:
    """Create (or reuse) the random-order and time-sorted tables with BTREE indexes; returns build stats."""
    import lancedb

    root = cache / f"{CACHE_FORMAT}-{n}-{kind}-{seed}"
    stats_file = root / "build.json"
    if stats_file.is_file():
        return json.loads(stats_file.read_text())
    shutil.rmtree(root, ignore_errors=True)
    t0 = time.perf_counter()
    table, _ = generate(n, seed=seed, kind=kind)
    stats: dict[str, Any] = {"generate_s": time.perf_counter() - t0, "uri": str(root / "db")}
    db = lancedb.connect(stats["uri"])
    for name, data in (("chunks", table), ("chunks_sorted", None)):
        t0 = time.perf_counter()
        data = data if data is not None else time_sorted(table)
        stats[f"{name}_sort_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        target = db.create_table(name, data=data.to_batches(max_chunksize=65_536), schema=table.schema)
        stats[f"{name}_write_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        for column in ("event_start", "event_end"):
            target.create_scalar_index(column, index_type="BTREE")
        stats[f"{name}_btree_s"] = time.perf_counter() - t0
        path = root / "db" / f"{name}.lance"
        stats[f"{name}_disk_bytes"] = _dir_bytes(path)
        stats[f"{name}_btree_bytes"] = _dir_bytes(path / "_indices")
    stats_file.write_text(json.dumps(stats, indent=1))
    return stats


def _chunk_offset(chunk_id: str) -> int:
    return int(chunk_id.rsplit("-", 1)[1])


def _bounds(q: Query) -> tuple[int, int]:
    start = int(q.interval.start.timestamp() * 1_000_000)
    end = OPEN_FUTURE if q.interval.end is None else int(q.interval.end.timestamp() * 1_000_000)
    return max(start, OPEN_PAST), end


def _time(search: Callable[[Query], list[int]], query: Query) -> tuple[float, list[int]]:
    t0 = time.perf_counter()
    ids = search(query)
    return (time.perf_counter() - t0) * 1000, ids


def run_kind(n: int, kind: str, cache: Path, n_queries: int) -> dict[str, Any]:
    """All paths on one generated table; returns build stats and per-path, per-window figures."""
    import lancedb

    build = prepare(n, kind, cache)
    db = lancedb.connect(build["uri"])
    t0 = time.perf_counter()
    arrays = load_arrays(db.open_table("chunks").to_lance())
    build["load_arrays_s"] = time.perf_counter() - t0
    brute = BruteForce(arrays)
    t0 = time.perf_counter()
    paper = PaperDesign(arrays)
    build["paper_ncls_build_s"] = time.perf_counter() - t0
    qs = queries(n_queries, kind=kind)
    truth = {id(q): set(brute.search(q.vector, *_bounds(q), K)[0].tolist()) for q in qs}
    selectivity = {w: statistics.mean(
        len(set(arrays.row[(arrays.start < _bounds(q)[1]) & (arrays.end > _bounds(q)[0])].tolist())) / n
        for q in qs if q.window == w) for w in WINDOWS}

    def open_path(path: str) -> Callable[[Query], list[int]]:
        """A fresh searcher for ``path`` (new connection; for ``fast*`` a newly built index)."""
        if path == "numpy":
            return lambda q: brute.search(q.vector, *_bounds(q), K)[0].tolist()
        if path == "paper":
            return lambda q: paper.search(q.vector, *_bounds(q), K)[0].tolist()
        table = lancedb.connect(build["uri"]).open_table("chunks" if path == "fast" else "chunks_sorted")
        fast = Searcher(table, temporal_weight=0.0)
        build.setdefault(f"{path}_index_build_s", fast.build_seconds)
        if path == "fast-sorted+rows":
            return lambda q: [_chunk_offset(h.row["chunk_id"])
                              for h in fast.search(q.vector, TimeFilter(event=(q.interval,)), k=K)]
        chunk_ids = np.array([_chunk_offset(c) for c in fast.dataset.to_table(columns=["chunk_id"])
                             .column("chunk_id").to_pylist()])  # evaluation only: offset -> generated row
        return lambda q: chunk_ids[fast.top_k_offsets(q.vector, TimeFilter(event=(q.interval,)), k=K)[0]].tolist()

    paths: dict[str, dict[str, Any]] = {p: {} for p in PATHS}
    for window in WINDOWS:
        wq = [q for q in qs if q.window == window]
        searchers, cold = {}, {}
        for path in PATHS:
            searchers[path] = open_path(path)
            cold[path], _ = _time(searchers[path], wq[0])
        times: dict[str, list[float]] = {p: [] for p in PATHS}
        recalls: dict[str, list[float]] = {p: [] for p in PATHS}
        for i, q in enumerate(wq):  # interleaved, rotating order: a shared machine's load hits every path alike
            for path in PATHS[i % len(PATHS):] + PATHS[:i % len(PATHS)]:
                ms, ids = _time(searchers[path], q)
                times[path].append(ms)
                recalls[path].append(len(truth[id(q)] & set(ids)) / K)
        for path in PATHS:
            paths[path][window] = {"cold_ms": cold[path], "p50_ms": float(np.percentile(times[path], 50)),
                                   "p95_ms": float(np.percentile(times[path], 95)),
                                   "recall_at_10": statistics.mean(recalls[path]), "selectivity": selectivity[window]}
        log.info("%s %s done", kind, window)
    return {"build": build, "paths": paths}


def ehypo_cost(sample: int) -> dict[str, Any]:
    """Seconds to build e_hypo with the real embedder, per window kind (anchors embedded per query)."""
    from diachron.ingest.embedding import Embedder
    from diachron.retrieval.anchors import anchors, hypothetical_embedding
    from diachron.schemas.time import Interval

    embedder = Embedder()
    t0 = time.perf_counter()
    embedder.warm_up()
    out: dict[str, Any] = {"model_load_s": time.perf_counter() - t0}
    extent = Interval(datetime(1995, 1, 1, tzinfo=UTC), datetime(2025, 1, 1, tzinfo=UTC))
    for window in WINDOWS:
        times, counts = [], []
        for q in [q for q in queries(sample, seed=7) if q.window == window]:
            found = anchors([q.interval], extent=extent)
            t0 = time.perf_counter()
            hypothetical_embedding(embedder.embed, "how did interest rates change", found)
            times.append((time.perf_counter() - t0) * 1000)
            counts.append(len(found))
        out[window] = {"anchors": statistics.mean(counts), "p50_ms": float(np.median(times))}
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.speed.query", description=__doc__.split("\n")[0])
    parser.add_argument("--tier", choices=sorted(TIERS), default="100k")
    parser.add_argument("--queries", type=int, default=15, help="queries per window kind")
    parser.add_argument("--kinds", default="uniform,clustered")
    parser.add_argument("--ehypo-sample", type=int, default=3, help="queries per window for e_hypo (0 = skip)")
    parser.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache" / "diachron-bench")
    parser.add_argument("--out", type=Path, default=Path("results/bench"))
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    n = TIERS[args.tier]
    t0 = time.perf_counter()
    result: dict[str, Any] = {"tier": args.tier, "rows": n, "k": K, "queries_per_window": args.queries,
                              "started": datetime.now(UTC).isoformat(), "kinds": {}}
    for kind in args.kinds.split(","):
        result["kinds"][kind] = run_kind(n, kind, args.cache_dir, args.queries)
    if args.ehypo_sample:
        result["ehypo"] = ehypo_cost(args.ehypo_sample)
    result["seconds"] = time.perf_counter() - t0
    result["load_average_1m_at_end"] = os.getloadavg()[0]
    print(write_reports(result, args.out, f"query-{args.tier}"))


if __name__ == "__main__":
    main()
