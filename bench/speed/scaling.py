"""Issue-16 scaling measurements for ``python -m bench.speed.ingest --scaling``.

* **two nodes ÷ one node**: a real Ray cluster on this machine whose nodes each own one core (CPU affinity,
  inherited by every Ray worker process): ``taskset -c 0 ray start --head --num-cpus=1`` and, for two
  nodes, ``taskset -c 1 ray start --address … --num-cpus=1``; the driver (``RAY_ADDRESS``) runs on core 0
  beside the head; token authentication on. The same ``sotu`` slice is ingested on one node and on two;
  the embed actors run with 1 torch thread. Throughput = chunks written ÷ wall seconds of the run. Each
  run keeps Ray Data's per-operator stats (busy seconds summed over tasks, nodes used), and the report
  names the stage the others wait on (:func:`waits`). Without ``taskset`` or with fewer than 2 cores the
  older layout runs (a 0-CPU head and 1-CPU workers sharing all cores) and the report says so.
* **driver peak RSS**: ``run_ingest`` on synthetic one-sentence documents in a fresh process with a local
  Ray; the driver process's own resident set (not Ray's workers), sampled every 0.1 s.
* **nightly share**: ``n`` documents already stored, a nightly over all of them with 1% changed; share =
  seconds to ingest the changed documents alone (fresh store, Ray up) ÷ seconds of the nightly.
"""

from __future__ import annotations

import calendar
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = ["local_cluster", "run"]

RAY = str(Path(sys.executable).with_name("ray"))
CLUSTER_DRIVER = """
import json, sys, time
from dataclasses import asdict
from ray.data._internal import stats as _stats
from diachron.ingest.pipeline import IngestConfig, run_ingest
from diachron.ingest.stages import StageConfig
summaries, _summary = [], _stats.DatasetStats.to_summary
def _keep(self):  # Ray Data's own per-operator stats of each execution (the bench reads the largest)
    out = _summary(self)
    summaries.append(out)
    return out
_stats.DatasetStats.to_summary = _keep
years = tuple(int(y) for y in sys.argv[2].split("-"))
t0 = time.perf_counter()
# embed batches of 32 chunks: a small corpus still makes several batches for the embed actors to share
stages = StageConfig(embed_threads=1, embed_batch_size=8)
# one document per block: a few long speeches still make a block per speech for the nodes to share
s = run_ingest(["sotu"], IngestConfig(db_uri=sys.argv[1], sotu_years=years, stages=stages, batch_size=1))
wall = time.perf_counter() - t0
ops = max(summaries, key=lambda x: x.time_total_s).operators_stats if summaries else []
stages = [{"name": o.operator_name, "busy_s": o.wall_time.sum if o.wall_time else 0.0,
           "span_s": (o.latest_end_time or 0) - (o.earliest_start_time or 0),
           "tasks": o.wall_time.count if o.wall_time else 0,
           "nodes": o.node_count.max if o.node_count else 0} for o in ops]
print("RESULT " + json.dumps({**asdict(s), "wall_s": wall, "stages": stages}, default=str))
"""
RSS_DRIVER = """
import json, sys, threading, time
import psutil
me, peak, stop = psutil.Process(), [0], threading.Event()
def sample():
    while not stop.is_set():
        peak[0] = max(peak[0], me.memory_info().rss)
        stop.wait(0.1)
threading.Thread(target=sample, daemon=True).start()
from diachron.ingest.pipeline import IngestConfig, run_ingest
s = run_ingest([sys.argv[1]], IngestConfig(db_uri=sys.argv[2], num_cpus=2))
stop.set()
print("RESULT " + json.dumps({"peak_rss_bytes": peak[0], "documents_written": s.documents_written,
                              "seconds": s.seconds}))
"""


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ports(*flags: str) -> list[str]:
    return [f"--{flag}={_port()}" for flag in flags]


def _node(cmd: list[str], env: dict[str, str], log: Path, timeout: float = 600) -> subprocess.Popen:
    """Start one ``ray start --block`` node; wait until it says it started (it registered with the GCS)."""
    proc = subprocess.Popen(cmd, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + timeout
    while "Ray runtime started" not in log.read_text(errors="replace"):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"Ray node did not start: {log.read_text(errors='replace')[-3000:]}")
        time.sleep(1)
    return proc


@contextmanager
def local_cluster(
    workers: int,
    *,
    head_cpus: int = 0,
    worker_cpus: int = 1,
    dashboard: bool = False,
    pin: bool = False,
) -> Iterator[dict[str, str]]:
    """A Ray cluster of this machine (head + ``workers`` worker nodes, token auth on); yields the driver env.

    ``dashboard=True`` starts the head's dashboard, which serves Ray's state API (``ray[default]``).
    ``pin=True`` gives node ``i`` (the head is node 0) core ``i`` alone (``taskset -c i``; every process the
    node starts inherits the affinity).

    Every node runs under ``ray start --block`` as a child of this process and is stopped by SIGTERM on
    exit (never ``ray stop``, which would stop every Ray on the machine).
    """
    root = Path(tempfile.mkdtemp(prefix="dray"))  # Ray's socket paths must stay under 108 bytes
    token = root / "token"
    token.write_text(secrets.token_hex(32))
    env = {
        **os.environ,
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN_PATH": str(token),
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_raylet_start_wait_time_s": "180",
    }  # a loaded machine registers nodes slowly
    env.pop("RAY_ADDRESS", None)
    port = _port()
    node = ["--block", "--node-ip-address=127.0.0.1", "--disable-usage-stats"]
    agents = (
        "dashboard-agent-listen-port",
        "dashboard-agent-grpc-port",
        "runtime-env-agent-port",
        "metrics-export-port",
    )
    procs: list[subprocess.Popen] = []
    core = (lambda i: ["taskset", "-c", str(i)]) if pin else (lambda i: [])
    try:
        procs.append(
            _node(
                [
                    *core(0),
                    RAY,
                    "start",
                    "--head",
                    f"--port={port}",
                    f"--num-cpus={head_cpus}",
                    f"--include-dashboard={str(dashboard).lower()}",
                    f"--temp-dir={root / 't'}",
                    *_ports("ray-client-server-port", "dashboard-port", *agents),
                    *node,
                ],
                env,
                root / "head.log",
            )
        )
        for i in range(workers):
            procs.append(
                _node(
                    [
                        *core(i + 1),
                        RAY,
                        "start",
                        f"--address=127.0.0.1:{port}",
                        f"--num-cpus={worker_cpus}",
                        *_ports(*agents),
                        *node,
                    ],
                    env,
                    root / f"worker-{i}.log",
                )
            )
        yield {**env, "RAY_ADDRESS": f"127.0.0.1:{port}"}
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(root, ignore_errors=True)


def _result(cmd: list[str], env: dict[str, str]) -> dict[str, Any]:
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=7200)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-3000:])
    return json.loads(next(line for line in out.stdout.splitlines() if line.startswith("RESULT "))[7:])


def pinnable() -> bool:
    """Whether nodes can get a core each: ``taskset`` is installed and this process may use 2+ cores."""
    return shutil.which("taskset") is not None and len(os.sched_getaffinity(0)) >= 2


def cluster_runs(workdir: Path, years: tuple[int, int], *, pin: bool | None = None) -> dict[str, Any]:
    """The same sotu slice on one node and on two (one core, 1 CPU, 1 torch thread each).

    ``pin`` (default: :func:`pinnable`): nodes on cores 0 and 1, the driver on core 0; else the older
    layout (a 0-CPU head, one or two 1-CPU workers, no affinity).
    """
    pin = pinnable() if pin is None else pin
    out: dict[str, Any] = {"pinned": pin}
    for name, nodes in (("one", 1), ("two", 2)):
        layout = {"workers": nodes - 1, "head_cpus": 1, "pin": True} if pin else {"workers": nodes}
        driver = ["taskset", "-c", "0"] if pin else []
        with local_cluster(**layout) as env:
            r = _result(
                [
                    *driver,
                    sys.executable,
                    "-c",
                    CLUSTER_DRIVER,
                    str(workdir / f"cluster-{name}"),
                    f"{years[0]}-{years[1]}",
                ],
                env,
            )
        out[name] = {
            "chunks": r["chunks_written"],
            "wall_s": r["wall_s"],
            "chunks_per_s": r["chunks_written"] / r["wall_s"],
            "embed_nodes": r["embed_nodes"],
            "stages": r["stages"],
            "waits": waits(r["stages"], r["wall_s"], nodes),
        }
    out["chunks"] = out["one"]["chunks"]
    return out


def waits(stages: list[dict[str, Any]], wall_s: float, cpus: int) -> str:
    """Which stage the others wait on, from Ray Data's per-operator stats of one run.

    ``busy_s`` of an operator is the sum of its tasks' wall time; the busiest stage is the one the pipeline
    waits on; ``idle`` is the share of ``wall_s × cpus`` core-seconds no stage used (start-up, scheduling,
    the driver's planning and commit). Returns one line for the report.
    """
    if not stages:
        return "no Ray Data stats"
    ranked = sorted(stages, key=lambda st: st["busy_s"], reverse=True)
    busy = sum(st["busy_s"] for st in stages)
    top = ranked[0]
    idle = max(0.0, 1 - busy / (wall_s * cpus)) if wall_s else 0.0
    others = ", ".join(f"{_short(st['name'])} {st['busy_s']:.0f} s" for st in ranked[1:4])
    return (
        f"{_short(top['name'])} busy {top['busy_s']:.0f} s of {wall_s:.0f} s × {cpus} cores "
        f"(on {top['nodes']} node(s)); others: {others}; idle {idle:.0%} of core time"
    )


def _short(name: str) -> str:
    return name.removeprefix("MapBatches(").removesuffix(")")


_MONTHS = list(calendar.month_name)[1:]  # English: Python's default C locale


def synthetic(i: int, changed: bool = False) -> dict[str, Any]:
    """One short dated document (a sentence with a date), ``changed`` appends a revision note."""
    year, month, day = 1990 + i % 30, i % 12, i % 28 + 1
    text = f"Report {i}: the committee met on {day} {_MONTHS[month]} {year} and approved item {i}."
    return {
        "doc_id": f"report-{i}",
        "title": f"Report {i}",
        "published_at": f"{year}-{month + 1:02d}-{day:02d}",
        "text": text + (" Revised after review." if changed else ""),
    }


def _jsonl(path: Path, records: Iterator[dict[str, Any]] | list[dict[str, Any]]) -> Path:
    with path.open("w", encoding="utf-8") as handle:
        for r in records:
            handle.write(json.dumps(r) + "\n")
    return path


def driver_rss(workdir: Path, sizes: tuple[int, int]) -> dict[str, Any]:
    """Peak RSS of the driver process alone for two corpus sizes (fresh process and store each)."""
    peaks, seconds = [], []
    for n in sizes:
        source = _jsonl(workdir / f"synthetic-{n}.jsonl", (synthetic(i) for i in range(n)))
        r = _result(
            [sys.executable, "-c", RSS_DRIVER, str(source), str(workdir / f"rss-{n}")], dict(os.environ)
        )
        peaks.append(r["peak_rss_bytes"])
        seconds.append(r["seconds"])
    return {"docs": list(sizes), "peak_rss_bytes": peaks, "seconds": seconds}


def nightly(workdir: Path, stored: int, changed_share: float = 0.01) -> dict[str, Any]:
    """A nightly over ``stored`` documents with ``changed_share`` of them changed, and those alone."""
    import pyarrow as pa
    from diachron.ingest.embedding import resolve_embedder
    from diachron.ingest.pipeline import IngestConfig, run_ingest
    from diachron.ingest.store import Store
    from diachron.schemas.ids import content_sha256
    from diachron.schemas.records import DocumentRecord, arrow_schema

    spec = resolve_embedder(None)
    db = workdir / "nightly"
    store = Store(str(db), dim=spec.dim)
    now = datetime.now(UTC)
    for start in range(0, stored, 20_000):  # the stored versions, as an earlier run left them
        rows = [
            dict(
                synthetic(i),
                series_id=f"report-{i}",
                content_sha256=content_sha256(synthetic(i)["text"]),
                published_at=None,
                published_at_source="unknown",
                source_timezone=None,
                abstract="",
                version=None,
                supersedes=None,
                relation=None,
                valid_from=None,
                valid_until=None,
                source_uri="bench",
                metadata_json="{}",
                annotator="rules",
                recorded_at=now,
                run_id="bench-seed",
            )
            for i in range(start, min(stored, start + 20_000))
        ]
        store.insert_new(
            "documents", pa.Table.from_pylist(rows, schema=arrow_schema(DocumentRecord)), now=now
        )
    step = max(1, round(1 / changed_share))
    changed = set(range(0, stored, step))
    source = _jsonl(workdir / "nightly.jsonl", (synthetic(i, i in changed) for i in range(stored)))
    alone = _jsonl(workdir / "changed.jsonl", (synthetic(i, True) for i in sorted(changed)))
    run_ingest(
        [str(alone)], IngestConfig(db_uri=str(workdir / "warm-up"), num_cpus=2, optimize=False)
    )  # Ray up
    t0 = time.perf_counter()
    run_ingest([str(alone)], IngestConfig(db_uri=str(workdir / "alone"), num_cpus=2, optimize=False))
    alone_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    summary = run_ingest([str(source)], IngestConfig(db_uri=str(db), num_cpus=2, optimize=False))
    nightly_s = time.perf_counter() - t0
    assert summary.documents_written == len(changed), summary
    return {"stored": stored, "changed": len(changed), "changed_alone_s": alone_s, "nightly_s": nightly_s}


def run(
    workdir: Path, *, years: tuple[int, int], rss_docs: tuple[int, int], nightly_docs: int
) -> dict[str, Any]:
    """All three measurements; ratios computed from this one run."""
    out: dict[str, Any] = {}
    out["nightly"] = nightly(workdir, nightly_docs)
    out["nightly_changed_share"] = out["nightly"]["changed_alone_s"] / out["nightly"]["nightly_s"]
    out["driver_rss"] = driver_rss(workdir, rss_docs)
    peaks = out["driver_rss"]["peak_rss_bytes"]
    out["driver_rss_50k_over_5k"] = peaks[1] / peaks[0]
    import ray

    ray.shutdown()  # the cluster runs are separate Rays; free this process's local one first
    out["cluster"] = cluster_runs(workdir, years)
    out["two_nodes_over_one"] = out["cluster"]["two"]["chunks_per_s"] / out["cluster"]["one"]["chunks_per_s"]
    out["load_average_1m_at_end"] = os.getloadavg()[0]
    return out
