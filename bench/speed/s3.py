"""The time index read from object storage vs locally (issue 30): p50 per window, same table, same queries.

Run: ``python -m bench.speed.s3 --tier 100k`` (``5k`` to check the plumbing). A moto S3 server runs as its
own process on 127.0.0.1; the bench's generated table (:func:`bench.speed.query.prepare`, cached) is copied
into it, the time index is published beside the copy (:func:`~diachron.ingest.time_index.publish_time_index`)
and a reader downloads it into a fresh cache. Per query both searchers do what the service does: check for a
newer table version or index (:meth:`~diachron.retrieval.search.Searcher.is_stale`), then the planned top-10.
Timed interleaved (shuffled per query) after an idle pause, as ``bench.speed.query``. The run ends with one
JSON line ``{"tier", "worst_s3_over_local_p50", "load_average", …}``; the target is ≤ 2 at every window.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from diachron.retrieval.filters import TimeFilter

from bench.speed.generate import WINDOWS, queries
from bench.speed.query import PAUSE_S, TIERS, prepare
from bench.speed.report import write_reports

K = 10
BUCKET = "diachron"


def _moto(port: int) -> subprocess.Popen:
    """A moto S3 server in its own process (not sharing this process's GIL) with bucket :data:`BUCKET`."""
    import boto3

    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    client = boto3.client(
        "s3",
        endpoint_url=f"http://127.0.0.1:{port}",
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )
    for _ in range(100):
        try:
            client.create_bucket(Bucket=BUCKET)
            return server
        except Exception:  # noqa: BLE001 - not listening yet
            time.sleep(0.2)
    server.terminate()
    raise RuntimeError("moto server did not start")


def _copy_to_s3(local_uri: str, uri: str, options: dict[str, str]) -> Any:
    """Copy the ``chunks`` table to ``uri`` and publish its time index there; returns the S3 table."""
    import lancedb
    from diachron.ingest.time_index import publish_time_index

    source = lancedb.connect(local_uri).open_table("chunks").to_lance()
    table = lancedb.connect(uri, storage_options=options).create_table(
        "chunks", data=source.to_batches(batch_size=65_536), schema=source.schema
    )
    publish_time_index(table.to_lance(), table.to_lance().uri, options)
    return table


def _timed(searcher: Any, q: Any) -> tuple[float, list[int]]:
    time.sleep(PAUSE_S)
    t0 = time.perf_counter()
    searcher.is_stale()
    offsets, _, _ = searcher.top_k_planned(q.vector, TimeFilter(event=(q.interval,)), k=K)
    return (time.perf_counter() - t0) * 1000, offsets.tolist()


def run(tier: str, kind: str, n_queries: int, cache: Path) -> dict[str, Any]:
    """Per window: p50/p95 of the local and the S3 searcher, their ratio, and whether the answers agree."""
    import lancedb
    from diachron.retrieval.search import Searcher

    build = prepare(TIERS[tier], kind, cache)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_ENDPOINT": f"http://127.0.0.1:{port}",
        "AWS_REGION": "us-east-1",
        "AWS_ALLOW_HTTP": "true",
    }
    os.environ.update(env)
    server = _moto(port)
    try:
        uri = f"s3://{BUCKET}/bench/{tier}-{kind}"
        t0 = time.perf_counter()
        _copy_to_s3(build["uri"], uri, {k.lower(): v for k, v in env.items()})
        copy_s = time.perf_counter() - t0
        os.environ["DIACHRON_CACHE"] = tempfile.mkdtemp(prefix="diachron-s3-bench-")  # a reader's empty cache
        t0 = time.perf_counter()
        remote = Searcher(lancedb.connect(uri).open_table("chunks"), temporal_weight=0.0)
        open_s = time.perf_counter() - t0
        local = Searcher(lancedb.connect(build["uri"]).open_table("chunks"), temporal_weight=0.0)
        assert remote.time_index is not None, "the S3 reader found no published time index"
        out: dict[str, Any] = {"copy_and_publish_s": copy_s, "s3_open_s": open_s, "windows": {}}
        rng = np.random.default_rng(0)
        for window in WINDOWS:
            times: dict[str, list[float]] = {"local": [], "s3": []}
            agree = True
            for q in [q for q in queries(n_queries, kind=kind) if q.window == window]:
                answers = {}
                for name in rng.permutation(["local", "s3"]).tolist():
                    ms, answers[name] = _timed(local if name == "local" else remote, q)
                    times[name].append(ms)
                agree &= answers["local"] == answers["s3"]
            p50 = {name: float(np.percentile(v, 50)) for name, v in times.items()}
            out["windows"][window] = {
                **{f"{name}_p50_ms": p50[name] for name in times},
                **{f"{name}_p95_ms": float(np.percentile(v, 95)) for name, v in times.items()},
                "s3_over_local": p50["s3"] / p50["local"],
                "same_answers": agree,
            }
        return out
    finally:
        server.terminate()
        server.wait(timeout=30)


def markdown(result: dict[str, Any]) -> str:
    lines = [
        f"## s3-{result['tier']} (time index on moto S3 vs local; {result['queries_per_window']} queries per "
        f"window; load average {result['load_average_1m_at_start']:.1f} → "
        f"{result['load_average_1m_at_end']:.1f})",
        "",
        "Per query: `is_stale()` then the planned top-10 (what the service runs). Cells p50 / p95 ms.",
        "",
    ]
    for kind, data in result["kinds"].items():
        lines += [
            f"### {kind} vectors",
            "",
            "| window | local | s3 | s3 ÷ local | same answers |",
            "|---|---|---|---|---|",
        ]
        for window, f in data["windows"].items():
            lines.append(
                f"| {window} | {f['local_p50_ms']:.1f} / {f['local_p95_ms']:.1f} | {f['s3_p50_ms']:.1f} / "
                f"{f['s3_p95_ms']:.1f} | {f['s3_over_local']:.2f} | {f['same_answers']} |"
            )
        lines += [
            "",
            f"Copy + publish {data['copy_and_publish_s']:.1f} s; S3 searcher open (index download) "
            f"{data['s3_open_s']:.1f} s.",
            "",
        ]
    lines += ["Summary: `" + json.dumps(result["summary"]) + "`", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.speed.s3", description=__doc__.split("\n")[0])
    parser.add_argument("--tier", choices=["5k", "100k", "1m"], default="100k")
    parser.add_argument("--queries", type=int, default=15, help="queries per window kind")
    parser.add_argument("--kinds", default="uniform,clustered")
    parser.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache" / "diachron-bench")
    parser.add_argument("--out", type=Path, default=Path("results/bench"))
    args = parser.parse_args(argv)
    result: dict[str, Any] = {
        "tier": args.tier,
        "queries_per_window": args.queries,
        "load_average_1m_at_start": os.getloadavg()[0],
        "kinds": {kind: run(args.tier, kind, args.queries, args.cache_dir) for kind in args.kinds.split(",")},
    }
    result["load_average_1m_at_end"] = os.getloadavg()[0]
    windows = [f for data in result["kinds"].values() for f in data["windows"].values()]
    result["summary"] = {
        "tier": f"s3-{args.tier}",
        "worst_s3_over_local_p50": round(max(f["s3_over_local"] for f in windows), 3),
        "same_answers": all(f["same_answers"] for f in windows),
        "load_average": round(os.getloadavg()[0], 2),
    }
    print(write_reports(result, args.out, f"s3-{args.tier}", markdown(result)))
    print(json.dumps(result["summary"]))


if __name__ == "__main__":
    main()
