"""Query-speed benchmark: interval-filtered top-10 on generated ``chunks`` tables (issues 7, 15).

Run: ``python -m bench.speed.query --tier 100k`` (or ``1m``, ``3m``, ``10m``; ``5k`` to check the plumbing).
``10m`` runs **on disk** (issue 30; ``--on-disk`` puts any tier there): no baseline holds the vectors in
memory (they would be 15.4 GB); the reference is ``stream``, the window's NCLS candidates scored exactly
from the time index's memory-mapped float32 file, and the index's files are not read ahead (table + index
≈ 40 GB on disk, more than the page cache). The summary then adds the worst ``client`` p50 in ms, the
build's seconds and the bytes on disk.
Generated tables, their time-partitioned index and build figures are cached under ``--cache-dir``
(default ``~/.cache/diachron-bench``); results go to ``results/bench/`` (raw JSON + markdown) and the
tables to ``bench/speed/LATEST.md``. The run ends with one JSON line per tier:
``{"tier", "worst_p50_over_best_baseline", "min_recall_at_10", "load_average"}`` (the ``client`` path,
over both vector kinds and every window).

Paths, timed on the same queries in the same run, interleaved (all paths per query, in a shuffled order) so
that load on the shared machine, and whatever the previous path left behind, falls on every path alike:

* ``numpy`` — NumPy masked scan of all rows, vectors in memory (baseline).
* ``paper`` — NCLS candidates + NumPy exact inner product, vectors in memory (TA-RAG's design; baseline).
* ``client`` — what :class:`diachron.Client` runs: :class:`diachron.retrieval.search.Searcher` with the
  planner over the table (ingest order) and its time-partitioned index as ``optimize`` builds it
  (exact when candidates are few or the index cannot help, approximate otherwise), to the top-10 ids.
* ``client+rows`` — the same, also reading the hit rows (text, intervals, …) as a search must.
* ``exact`` — the same searcher with the planner held to exact scoring (time-ordered vectors).

Ranking by similarity only (``temporal_weight=0``), so every path has one exact answer; recall@10 is
measured against the NumPy scan. Before each timed call the bench waits :data:`PAUSE_S` and reads a
buffer larger than the CPU's last-level cache (untimed): a thread pool that just ran (OpenBLAS's spins
≈ 2**28 cycles after a call, torch's OpenMP pool too) would otherwise take the cores from the next path,
and one path would find another's rows in cache — neither happens between a service's queries. Before
each window the time index's files are read once (:func:`_warm`): the baselines hold their vectors in
memory, and this machine reclaims idle file pages within seconds even with most of its memory free
(seen with ``fincore``: 3% of a just-read 500 MB file gone after 20 s idle, 17 GB free), so without it the
first path to touch a slice would pay the disk read. "Cold" = the first query after opening (a new
connection and a freshly built in-memory interval index), with the OS page cache as it is (it cannot be
dropped without root).
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
from diachron.ingest.time_index import build_time_index
from diachron.retrieval.filters import TimeFilter
from diachron.retrieval.interval_index import OPEN_FUTURE, OPEN_PAST, bounds
from diachron.retrieval.search import Searcher
from diachron.schemas.time_index import FORMAT as TIME_INDEX_FORMAT
from diachron.schemas.time_index import ORDER_FILE, VECTORS_FILE, index_dir

from bench.speed.baselines import BruteForce, PaperDesign, StreamScan, load_arrays
from bench.speed.generate import WINDOWS, Query, generate, queries
from bench.speed.report import write_reports

log = logging.getLogger(__name__)

TIERS = {"5k": 5_000, "100k": 100_000, "1m": 1_000_000, "3m": 3_000_000, "10m": 10_000_000}
#: the large-tier target (issue 15) is judged on windows of at least this selectivity
WIDE_SELECTIVITY = 0.20
CACHE_FORMAT = "v3"  # the generated tables; the time index is rebuilt when its format changes
K = 10
PATHS = ("numpy", "paper", "client", "client+rows", "exact")  # in memory; on disk: "stream" + OURS
OURS = ("client", "client+rows", "exact")
#: approximate references: reported, never the "best baseline" of a ratio
APPROXIMATE = ("lance",)
LANCE_SUB_VECTORS = 48  # 8 dimensions per PQ code at 384
LANCE_MIN_PROBES = 20
LANCE_REFINE = 10
#: tiers whose vectors stay on disk (no baseline holds them in memory); ``--on-disk`` puts any tier there
ON_DISK_TIERS = {"10m"}
GENERATE_ROWS = 500_000  # rows generated and written per piece (bounded memory at 10m)
PAUSE_S = 0.15  # idle time before each timed call (module docstring)
EVICT_BYTES = 64 << 20  # > the last-level cache (32 MiB here)
_evict_buffer: list[np.ndarray] = []  # allocated on the first timed call, not at import


def _dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def prepare(n: int, kind: str, cache: Path, seed: int = 0) -> dict[str, Any]:
    """Create (or reuse) the table (ingest order) and its time index; returns build stats.

    The generated table is kept across time-index formats: when only the index format changed, only the
    index is rebuilt (its build figures replaced)."""
    import lancedb

    root = cache / f"{CACHE_FORMAT}-{n}-{kind}-{seed}"
    stats_file = root / "build.json"
    stats = json.loads(stats_file.read_text()) if stats_file.is_file() else None
    if stats is not None and stats.get("time_index_format") == TIME_INDEX_FORMAT:
        return stats
    if stats is None:
        stats = _write_table(n, kind, root, seed)
    table = lancedb.connect(stats["uri"]).open_table("chunks")
    dataset = table.to_lance()
    t0 = time.perf_counter()
    manifest = build_time_index(dataset, index_dir(str(dataset.uri)))
    stats["time_index_s"] = time.perf_counter() - t0
    stats["time_index_levels"] = manifest["levels"]
    stats["time_index_format"] = TIME_INDEX_FORMAT
    stats["time_index_disk_bytes"] = _dir_bytes(index_dir(str(dataset.uri)))
    stats_file.write_text(json.dumps(stats, indent=1))
    return stats


def _write_table(n: int, kind: str, root: Path, seed: int) -> dict[str, Any]:
    """Generate and write the ``chunks`` table of ``n`` rows under ``root`` (with its BTREE indexes)."""
    import lancedb

    shutil.rmtree(root, ignore_errors=True)
    stats: dict[str, Any] = {"uri": str(root / "db"), "generate_s": 0.0, "write_s": 0.0}
    db = lancedb.connect(stats["uri"])
    table = None
    for lo in range(0, n, GENERATE_ROWS):
        t0 = time.perf_counter()
        data, _ = generate(min(GENERATE_ROWS, n - lo), seed=seed * 1000 + lo // GENERATE_ROWS, kind=kind)
        if lo:  # unique ids across pieces
            ids = [f"s{seed}-{i:08d}" for i in range(lo, lo + data.num_rows)]
            data = data.set_column(0, "chunk_id", [ids])
        stats["generate_s"] += time.perf_counter() - t0
        t0 = time.perf_counter()
        batches = data.to_batches(max_chunksize=65_536)
        if table is None:
            table = db.create_table("chunks", data=batches, schema=data.schema)
        else:
            table.add(data)
        stats["write_s"] += time.perf_counter() - t0
    t0 = time.perf_counter()
    for column in ("event_start", "event_end"):
        table.create_scalar_index(column, index_type="BTREE")
    stats["btree_s"] = time.perf_counter() - t0
    stats["table_disk_bytes"] = _dir_bytes(root / "db" / "chunks.lance")
    return stats


def _warm(directory: Path, piece: int = 64 << 20) -> float:
    """Read every file of ``directory`` once (into the page cache); returns the seconds it took."""
    t0 = time.perf_counter()
    buffer = bytearray(piece)
    for path in sorted(directory.iterdir()):
        with path.open("rb", buffering=0) as f:
            while f.readinto(buffer):
                pass
    return time.perf_counter() - t0


def _chunk_offset(chunk_id: str) -> int:
    return int(chunk_id.rsplit("-", 1)[1])


def _time(search: Callable[[Query], list[int]], query: Query) -> tuple[float, list[int]]:
    if not _evict_buffer:
        _evict_buffer.append(np.ones(EVICT_BYTES, dtype=np.uint8))
    _evict_buffer[0].sum(dtype=np.uint64)  # untimed: another path's rows out of the cache
    time.sleep(PAUSE_S)  # untimed: the previous path's thread pools idle
    t0 = time.perf_counter()
    ids = search(query)
    return (time.perf_counter() - t0) * 1000, ids


def _searcher(uri: str, *, exact: bool = False) -> Searcher:
    import lancedb

    return Searcher(lancedb.connect(uri).open_table("chunks"), temporal_weight=0.0, approximate=not exact)


def _baselines(build: dict[str, Any], on_disk: bool) -> tuple[Any, dict[str, Any]]:
    """``(arrays, {name: searcher})``: in memory ``numpy`` and ``paper`` (every vector in RAM); on disk only
    ``stream`` (NCLS candidates, their vectors streamed from the time index's mapped float32 file)."""
    import lancedb

    t0 = time.perf_counter()
    dataset = lancedb.connect(build["uri"]).open_table("chunks").to_lance()
    arrays = load_arrays(dataset, vectors=not on_disk)
    build["load_arrays_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    if on_disk:
        directory = index_dir(str(dataset.uri))
        mapped = np.load(directory / VECTORS_FILE, mmap_mode="r")
        found = {"stream": StreamScan(arrays, mapped, np.load(directory / ORDER_FILE))}
    else:
        found = {"numpy": BruteForce(arrays), "paper": PaperDesign(arrays)}
    build["paper_ncls_build_s"] = time.perf_counter() - t0
    return arrays, found


class LanceIvf:
    """LanceDB's own vector index (IVF_PQ, dot product) with the window as a prefilter on the event hull
    columns (a superset of the interval overlap: a row whose hull meets the window but none of its intervals
    counts against its recall), refined from the float32 vectors; a reference where it fits."""

    def __init__(self, uri: str, n: int, build: dict[str, Any], stats_file: Path) -> None:
        import lancedb
        from lancedb.index import IvfPq

        self.table = lancedb.connect(uri).open_table("chunks")
        self.partitions = max(16, int(np.ceil(np.sqrt(n))))
        if not any(i.index_type == "IvfPq" for i in self.table.list_indices()):
            t0 = time.perf_counter()
            config = IvfPq(
                distance_type="dot", num_partitions=self.partitions, num_sub_vectors=LANCE_SUB_VECTORS
            )
            self.table.create_index("vector", config=config)
            build["lance_ivf_s"] = time.perf_counter() - t0
            stats_file.write_text(json.dumps(build, indent=1))

    def search(self, vector: np.ndarray, start: int, end: int, k: int = 10) -> tuple[np.ndarray, np.ndarray]:
        clauses = [f"CAST(event_start AS BIGINT) < {int(end)}"] if end < OPEN_FUTURE else []
        clauses += [f"CAST(event_end AS BIGINT) > {int(start)}"] if start > OPEN_PAST else []
        query = self.table.search(vector).nprobes(max(LANCE_MIN_PROBES, self.partitions // 20))
        if clauses:  # integers of the bench's own windows, never user text
            query = query.where(" AND ".join(clauses), prefilter=True)
        found = query.refine_factor(LANCE_REFINE).limit(k).select(["chunk_id"]).to_arrow()
        offsets = np.array([_chunk_offset(c) for c in found.column("chunk_id").to_pylist()], dtype=np.int64)
        return offsets, 1.0 - found.column("_distance").to_numpy()


def run_kind(
    n: int, kind: str, cache: Path, n_queries: int, on_disk: bool = False, lance_ivf: bool = False
) -> dict[str, Any]:
    """All paths on one generated table; returns build stats and per-path, per-window figures.

    ``on_disk``: no baseline holds the vectors in memory (the ``10m`` tier): the reference is ``stream``, and
    the time index's files are not read ahead of each window (they need not fit in the page cache).
    ``lance_ivf``: add the ``lance`` path (:class:`LanceIvf`; its index built once, kept with the table)."""
    build = prepare(n, kind, cache)
    arrays, baselines = _baselines(build, on_disk)
    reference = next(iter(baselines.values()))
    if lance_ivf:
        baselines["lance"] = LanceIvf(
            build["uri"], n, build, cache / f"{CACHE_FORMAT}-{n}-{kind}-0" / "build.json"
        )
    qs = queries(n_queries, kind=kind)
    truth = {id(q): set(reference.search(q.vector, *bounds(q.interval), K)[0].tolist()) for q in qs}
    plans: dict[str, list[dict[str, Any]]] = {w: [] for w in WINDOWS}
    names = (*baselines, *OURS)
    paths: dict[str, dict[str, Any]] = {p: {} for p in names}
    for window in WINDOWS:
        wq = [q for q in qs if q.window == window]
        searchers, cold = {}, {}
        if not on_disk:
            build.setdefault("warm_s", []).append(round(_warm(index_dir(build["uri"] + "/chunks.lance")), 2))
        for path in names:
            searchers[path] = _open_path(path, build, baselines, plans, n)
            cold[path], _ = _time(searchers[path], wq[0])
        times: dict[str, list[float]] = {p: [] for p in names}
        recalls: dict[str, list[float]] = {p: [] for p in names}
        order_rng = np.random.default_rng(len(wq))
        for q in wq:  # interleaved, shuffled per query: load and the previous path's traces fall on all alike
            for path in order_rng.permutation(names).tolist():
                ms, ids = _time(searchers[path], q)
                times[path].append(ms)
                recalls[path].append(len(truth[id(q)] & set(ids)) / K)
        selectivity = statistics.mean(len(arrays_rows(arrays, q)) / n for q in wq)
        for path in names:
            paths[path][window] = {
                "cold_ms": cold[path],
                "p50_ms": float(np.percentile(times[path], 50)),
                "p95_ms": float(np.percentile(times[path], 95)),
                "recall_at_10": statistics.mean(recalls[path]),
                "min_recall_at_10": min(recalls[path]),
                "selectivity": selectivity,
            }
        paths["client"][window] |= _plan_figures(plans[window][-len(wq) :])
        paths["client"][window]["page_cache_after"] = _page_cache_share(
            index_dir(build["uri"] + "/chunks.lance")
        )
        log.info("%s %s done", kind, window)
    build["peak_rss_bytes"] = _peak_rss()
    return {"build": build, "paths": paths, "on_disk": on_disk}


def _open_path(
    path: str,
    build: dict[str, Any],
    baselines: dict[str, Any],
    plans: dict[str, list[dict[str, Any]]],
    n: int,
) -> Callable[[Query], list[int]]:
    """A fresh searcher for ``path`` (new connection; a newly built in-memory interval index)."""
    if path in baselines:
        base = baselines[path]
        return lambda q: base.search(q.vector, *bounds(q.interval), K)[0].tolist()
    t0 = time.perf_counter()
    searcher = _searcher(build["uri"], exact=path == "exact")
    build.setdefault("searcher_open_s", time.perf_counter() - t0)
    resident = searcher.index.nbytes + (searcher.time_index.resident_bytes if searcher.time_index else 0)
    build["searcher_bytes_per_chunk"] = resident / n
    if path == "client+rows":
        return lambda q: [
            _chunk_offset(h.row["chunk_id"])
            for h in searcher.search(q.vector, TimeFilter(event=(q.interval,)), k=K)
        ]
    chunk_ids = np.array(
        [
            _chunk_offset(c)
            for c in searcher.dataset.to_table(columns=["chunk_id"]).column("chunk_id").to_pylist()
        ]
    )  # evaluation only: offset -> generated row

    def run(q: Query) -> list[int]:
        offsets, _, plan = searcher.top_k_planned(q.vector, TimeFilter(event=(q.interval,)), k=K)
        if path == "client":
            plans[q.window].append(plan.to_dict())
        return chunk_ids[offsets].tolist()

    return run


def _plan_figures(client_plans: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``client`` plans of one window: approximate share, lowest expected recall, layouts used."""
    layouts = [p.get("layout", "?") for p in client_plans]
    return {
        "approximate_share": statistics.mean(p["path"] == "approximate" for p in client_plans),
        "expected_recall": min(p["expected_recall"] for p in client_plans),
        "layouts": " / ".join(
            f"{name} {layouts.count(name) / len(layouts):.0%}" for name in sorted(set(layouts))
        ),
    }


def _page_cache_share(directory: Path) -> dict[str, float]:
    """Share of each int8 / float32 vector file of the time index in the page cache now (``fincore``;
    ``{}`` without it): a window whose ratio slips run to run while these shares drop was paying disk reads
    for pages the kernel reclaimed between queries (issue 30), not for its int8 pass."""
    import subprocess

    names = (VECTORS_FILE, "vectors_int8.npy", "classed_int8.npy")
    files = [str(directory / name) for name in names if (directory / name).is_file()]
    try:
        done = subprocess.run(
            ["fincore", "--json", "--bytes", *files], capture_output=True, text=True, timeout=30, check=True
        )
        rows = json.loads(done.stdout)["fincore"]
    except (OSError, ValueError, KeyError, subprocess.SubprocessError):
        return {}
    return {Path(r["file"]).name: round(int(r["res"]) / max(int(r["size"]), 1), 3) for r in rows}


def _peak_rss() -> int:
    """Peak resident set of this process, bytes (Linux reports KiB)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def arrays_rows(arrays: Any, q: Query) -> np.ndarray:
    """Distinct rows of ``arrays`` with an interval overlapping ``q`` (selectivity)."""
    start, end = bounds(q.interval)
    return np.unique(arrays.row[(arrays.start < end) & (arrays.end > start)])


def summary(result: dict[str, Any]) -> dict[str, Any]:
    """The tier's one-line summary: worst ``client`` p50 ÷ best baseline p50, lowest recall@10, load; for
    the windows of selectivity ≥ :data:`WIDE_SELECTIVITY` also the worst ``client`` p50 ÷ the exact scan
    of the window's candidates (``paper`` in memory, ``stream`` on disk) and their lowest recall; the
    searcher's bytes per chunk; on disk also the worst ``client`` p50 in ms, build seconds, bytes on disk."""
    ratios, recalls, wide, wide_recalls, held, worst_ms = [], [], [], [], [], []
    for data in result["kinds"].values():
        paths = data["paths"]
        baselines = [b for b in paths if b not in OURS and b not in APPROXIMATE]
        scan = "paper" if "paper" in paths else "stream"
        held.append(data["build"].get("searcher_bytes_per_chunk", 0.0))
        for window, figures in paths["client"].items():
            ratios.append(figures["p50_ms"] / min(paths[b][window]["p50_ms"] for b in baselines))
            recalls.append(figures["min_recall_at_10"])
            worst_ms.append(figures["p50_ms"])
            if figures["selectivity"] >= WIDE_SELECTIVITY:
                wide.append(figures["p50_ms"] / paths[scan][window]["p50_ms"])
                wide_recalls.append(figures["recall_at_10"])
    out = {
        "tier": result["tier"],
        "worst_p50_over_best_baseline": round(max(ratios), 3),
        "min_recall_at_10": round(min(recalls), 3),
        "load_average": round(os.getloadavg()[0], 2),
    }
    if wide:
        out |= {
            "worst_p50_over_candidate_scan_at_20pct": round(max(wide), 3),
            "min_mean_recall_at_10_at_20pct": round(min(wide_recalls), 3),
        }
    out["searcher_bytes_per_chunk"] = round(max(held), 1)
    if result.get("on_disk"):
        builds = [d["build"] for d in result["kinds"].values()]
        out |= {
            "on_disk": True,
            "worst_client_p50_ms": round(max(worst_ms), 1),
            "max_build_s": round(max(build_seconds(b) for b in builds), 1),
            "max_disk_bytes": max(b["table_disk_bytes"] + b["time_index_disk_bytes"] for b in builds),
        }
    return out


def build_seconds(build: dict[str, Any]) -> float:
    """Seconds to build one tier's table and index: generate + write + BTREE + time index."""
    return sum(build.get(k, 0.0) for k in ("generate_s", "write_s", "btree_s", "time_index_s"))


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
    parser.add_argument(
        "--on-disk",
        action="store_true",
        help="no baseline holds the vectors in memory (always for 10m); reference = streamed candidate scan",
    )
    parser.add_argument(
        "--lance-ivf", action="store_true", help="add LanceDB's IVF_PQ index with a prefilter (built once)"
    )
    parser.add_argument(
        "--ehypo-sample", type=int, default=0, help="queries per window for e_hypo (0 = skip)"
    )
    parser.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache" / "diachron-bench")
    parser.add_argument("--out", type=Path, default=Path("results/bench"))
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    n = TIERS[args.tier]
    on_disk = args.on_disk or args.tier in ON_DISK_TIERS
    t0 = time.perf_counter()
    result: dict[str, Any] = {
        "tier": args.tier,
        "rows": n,
        "k": K,
        "queries_per_window": args.queries,
        "started": datetime.now(UTC).isoformat(),
        "load_average_1m_at_start": os.getloadavg()[0],
        "on_disk": on_disk,
        "kinds": {},
    }
    for kind in args.kinds.split(","):
        result["kinds"][kind] = run_kind(
            n, kind, args.cache_dir, args.queries, on_disk=on_disk, lance_ivf=args.lance_ivf
        )
    if args.ehypo_sample:
        result["ehypo"] = ehypo_cost(args.ehypo_sample)
    result["seconds"] = time.perf_counter() - t0
    result["load_average_1m_at_end"] = os.getloadavg()[0]
    result["summary"] = summary(result)
    print(
        write_reports(
            result, args.out, f"query-{args.tier}" + ("-disk" if on_disk and args.tier != "10m" else "")
        )
    )
    print(json.dumps(result["summary"]))


if __name__ == "__main__":
    main()
