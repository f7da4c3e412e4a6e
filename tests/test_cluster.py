"""A real multi-node Ray cluster on this machine: ``ray start --head`` plus two ``ray start --address``.

Each node has 1 CPU; token authentication is on (``RAY_AUTH_MODE=token``, the token in a file given to
every node and to the driver through ``RAY_AUTH_TOKEN_PATH``). The ingest driver runs in a subprocess
with ``RAY_ADDRESS``; the embed stage must run on more than one node (each embed actor records the Ray
node it runs on) and the result must equal a single-node run of the same input row for row.
"""

from __future__ import annotations

import calendar
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from diachron.ingest.pipeline import IngestConfig, run_ingest
from diachron.ingest.stages import StageConfig

pytestmark = pytest.mark.integration

DRIVER = """
import json, sys
from dataclasses import asdict
from diachron.ingest.pipeline import IngestConfig, run_ingest
from diachron.ingest.stages import StageConfig
# blocks of 2 documents and embed batches of 4 chunks: the 24 documents (48 chunks) make 12 embed tasks,
# and embedding (1 torch thread) is slower than annotating, so blocks queue for the embed actors
stages = StageConfig(embed_batch_size=1, embed_threads=1, max_tokens=48)
config = IngestConfig(db_uri=sys.argv[2], batch_size=2, stages=stages)
summary = run_ingest([sys.argv[1]], config)
import ray
print("JOB " + ray.get_runtime_context().get_job_id())
print("SUMMARY " + json.dumps(asdict(summary)))
"""
# the nodes of the embed actor tasks that ran (not of the actors started: every pool starts one per node)
EMBED_TASK_NODES = """
import json, sys, ray
from ray.util.state import list_tasks
ray.init(logging_level="ERROR")
tasks = list_tasks(filters=[("job_id", "=", sys.argv[1])], detail=True, limit=10000,
                   raise_on_missing_output=False)
print(json.dumps(sorted({t.node_id for t in tasks if "EmbedStage" in (t.name or "")
                         and "__init__" not in t.name and t.state == "FINISHED"})))
"""


@pytest.fixture(scope="module")
def cluster() -> Iterator[dict[str, str]]:
    """Head + two workers, 1 CPU each, token auth on, the head's dashboard (state API); the driver env."""
    from bench.speed.scaling import local_cluster

    with local_cluster(2, head_cpus=1, dashboard=True) as env:
        yield env


def _rows(db: Path) -> dict[str, list[dict[str, Any]]]:
    import lancedb

    conn = lancedb.connect(str(db))
    return {
        n: sorted(conn.open_table(n).to_arrow().to_pylist(), key=lambda r: r[k])
        for n, k in (("documents", "doc_id"), ("chunks", "chunk_id"))
    }


def _notes(path: Path) -> Path:
    """24 minutes of two paragraphs each (two chunks of at most 48 tokens per document)."""
    months = list(calendar.month_name)[1:]  # English: Python's default C locale
    lines = [
        json.dumps(
            {
                "doc_id": f"minutes-{i}",
                "title": f"Minutes {i}",
                "published_at": f"{2018 + i // 12}-{i % 12 + 1:02d}-28",
                "text": f"The board met on 12 {months[i % 12]} {2018 + i // 12} and "
                f"approved budget line {i} after a long debate about the costs of the new building and "
                f"the schedule of its works.\n\nA review followed in {months[(i + 3) % 12]} 2020, when the "
                f"committee checked item {i} against the plan and asked for a report by the end of the year.",
            }
        )
        for i in range(24)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_ingest_on_three_nodes_embeds_on_several_and_equals_a_single_node_run(
    cluster: dict[str, str], tmp_path: Path
) -> None:
    source = _notes(tmp_path / "minutes.jsonl")
    multi = tmp_path / "multi"
    run = subprocess.run(
        [sys.executable, "-c", DRIVER, str(source), str(multi)],
        env=cluster,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    summary = json.loads(next(line for line in run.stdout.splitlines() if line.startswith("SUMMARY "))[8:])
    assert summary["embed_nodes"] >= 2, summary  # node ids the embed actors saw (Ray runtime context)
    job = next(line for line in run.stdout.splitlines() if line.startswith("JOB "))[4:]
    state = subprocess.run(
        [sys.executable, "-c", EMBED_TASK_NODES, job],
        env=cluster,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert state.returncode == 0, state.stderr[-2000:]
    assert len(json.loads(state.stdout.strip().splitlines()[-1])) >= 2  # the same from Ray's state API
    assert (summary["documents_written"], summary["chunks_written"]) == (24, 48)
    for noise in ("progress bars", "deprecated", "token authentication", "precision", "execution finished"):
        assert noise not in run.stderr.lower(), run.stderr[-2000:]

    single = tmp_path / "single"
    run_ingest([str(source)], IngestConfig(db_uri=str(single), num_cpus=2, stages=StageConfig(max_tokens=48)))
    got, want = _rows(multi), _rows(single)
    skip = {"recorded_at", "run_id", "vector"}
    for name in ("documents", "chunks"):
        assert [{k: v for k, v in r.items() if k not in skip} for r in got[name]] == [
            {k: v for k, v in r.items() if k not in skip} for r in want[name]
        ]
    assert np.allclose(
        np.array([r["vector"] for r in got["chunks"]]),
        np.array([r["vector"] for r in want["chunks"]]),
        atol=1e-5,
    )


PINNED_TASKS = """
import json, os, ray
ray.init(logging_level="ERROR")
@ray.remote(num_cpus=1)
def cores():
    import time
    time.sleep(2)  # both 1-CPU tasks run at once: one per node
    return sorted(os.sched_getaffinity(0))
print("CORES " + json.dumps(sorted(ray.get([cores.remote(), cores.remote()]))))
"""


@pytest.mark.slow  # two more Ray nodes: run with -m slow (not validated under load here, see H7's report)
@pytest.mark.skipif(
    not __import__("bench.speed.scaling", fromlist=["pinnable"]).pinnable(), reason="needs taskset, 2 cores"
)
def test_pinned_nodes_each_own_one_core(tmp_path: Path) -> None:
    """The scaling bench's layout: head on core 0, worker on core 1; Ray's worker processes inherit it."""
    import psutil

    from bench.speed.scaling import local_cluster

    with local_cluster(1, head_cpus=1, pin=True) as env:
        raylets = [
            p.cpu_affinity()
            for p in psutil.Process().children(recursive=True)
            if p.name().startswith("raylet")
        ]
        run = subprocess.run(
            [sys.executable, "-c", PINNED_TASKS], env=env, capture_output=True, text=True, timeout=300
        )
    assert sorted(raylets) == [[0], [1]]
    assert run.returncode == 0, run.stderr[-2000:]
    line = next(x for x in run.stdout.splitlines() if x.startswith("CORES "))
    assert json.loads(line[6:]) == [[0], [1]]
