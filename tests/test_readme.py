"""Every command README and ``docs/*.md`` show, run exactly as written (the cheap ones), or excluded here with
the reason.

The commands run in a scratch folder laid out like the repository's users have it: ``data/diachron.lancedb``
is the session's real stock index (``stock_db``) and ``../shared`` the shared data, so ``--db
data/diachron.lancedb`` and ``../shared/...`` mean what README says. Shell lines run through ``bash -c``
exactly as printed (comments included); ``python`` blocks run as scripts. ``diachron serve`` is started as
written, in the background, for the ``curl`` lines and the remote-client block, then stopped.

Not run, and why (``EXCLUDED``): the main job ``bash scripts/demo.sh`` (install + ``diachron demo`` = the
stock/sotu ingest, minutes; its ingest is the pipeline ``stock_db`` and tests/test_pipeline_e2e.py run, its
questions are the ``diachron ask`` lines run here; its closing page URL is the ``diachron serve`` line
run here), ``bash .ci/run`` (CI itself), Ray ingests of minutes (covered by
tests/test_pipeline_e2e.py, test_lineage.py, test_cluster.py, test_s3.py), Airflow (tests/test_dags.py,
``dag.test()``; a real scheduler: tests/test_scheduler.py), cluster/object-store set-up that needs a cluster
or a bucket, and the 1M-10M chunk benchmarks. ``diachron repair`` and ``diachron quarantine`` run against the
stock index (whole, nothing quarantined: each says so, ``--json`` gives the empty list). A new README command
that is neither run nor excluded fails :func:`test_every_readme_command_is_classified`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[1]
#: README and every page of docs/, in one text: their commands are held to the same rule
README = "\n".join(
    p.read_text(encoding="utf-8") for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
)
SERVICE = "http://127.0.0.1:8000"

#: command prefix -> why it is not run here
EXCLUDED = {
    "bash scripts/demo.sh": "the main job (install + minutes of ingest); see the module docstring",
    "bash .ci/run": "CI itself",
    ". .venv/bin/activate": "environment set-up; the tests already run in the venv",
    "diachron ingest": (
        "a Ray ingest of minutes: tests/test_pipeline_e2e.py, test_lineage.py (tzdb, debian), stock_db"
    ),
    "airflow ": "Airflow: tests/test_dags.py runs both DAGs with dag.test()",
    "export AIRFLOW": "Airflow environment (tests/test_dags.py)",
    "export DIACHRON_": "Airflow environment (tests/test_dags.py, test_scheduler.py)",
    "bash scripts/airflow_local.sh": "a real Airflow in the foreground: tests/test_scheduler.py",
    "RAY_ADDRESS=127.0.0.1:6379": "a Ray head and a real Airflow: tests/test_scheduler.py",
    "export RAY_AUTH_MODE": "cluster set-up: tests/test_cluster.py",
    "ray start": "cluster set-up: tests/test_cluster.py",
    "RAY_ADDRESS=head-host": "needs a Ray cluster: tests/test_cluster.py, test_s3.py",
    "export AWS_": "object-store credentials: tests/test_s3.py (moto on 127.0.0.1)",
    'diachron ask "Which tz database release': (
        "needs data/tz.lancedb from the tzdb ingest above (test_lineage.py)"
    ),
    "python -m vllm": "a GPU vLLM server",
    "ruff ": "lint of the source tree, run by .ci/run (these commands run in a scratch folder without it)",
    "diachron serve --db s3://": "needs an object store: tests/test_replicas.py (two replicas on moto S3)",
    "python -m bench.speed.": "benchmarks of 5-60 min (1M-10M chunks) for a quiet machine; "
    "their plumbing: tests/test_bench_speed.py, test_s3_index.py",
}
#: commands that run against the service started from README's own `diachron serve` line
NEEDS_SERVICE = ("curl ",)


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, flags=re.S)


def _shell_lines() -> list[str]:
    lines = []
    for block in _blocks("bash"):
        lines += [
            line.strip() for line in block.splitlines() if line.strip() and not line.strip().startswith("#")
        ]
    return lines


def _excluded(line: str) -> str | None:
    return next((why for prefix, why in EXCLUDED.items() if line.startswith(prefix)), None)


#: commands run as written against the stock index (each prints its result, or its status line on stderr)
CLI = ("diachron ask", "diachron annotate", "diachron intent", "diachron repair", "diachron quarantine")


def test_every_readme_command_is_classified():
    runnable = (*CLI, "diachron serve", *NEEDS_SERVICE)
    unclassified = [line for line in _shell_lines() if not _excluded(line) and not line.startswith(runnable)]
    assert unclassified == []
    assert any(line.startswith("diachron serve") for line in _shell_lines())


@pytest.fixture(scope="module")
def workdir(stock_db, shared_dir, tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("readme")
    (base / "shared").symlink_to(shared_dir)
    work = base / "repo"
    (work / "data").mkdir(parents=True)
    (work / "data" / "diachron.lancedb").symlink_to(stock_db[0])
    return work


def _env() -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)
    return {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }


def _run(line: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "-c", line], cwd=cwd, env=_env(), capture_output=True, text=True, timeout=300
    )


def _cli_lines() -> list[str]:
    return [line for line in _shell_lines() if not _excluded(line) and line.startswith(CLI)]


@pytest.mark.integration
@pytest.mark.parametrize("line", _cli_lines())
def test_cli_command_runs_as_written(line, workdir):
    done = _run(line, workdir)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (done.stdout.strip() or done.stderr.strip()) and "Traceback" not in done.stderr
    if line.startswith(("diachron ask", "diachron annotate", "diachron intent")):
        assert done.stdout.strip()
    if "--json" in line:
        payload = json.loads(done.stdout)
        assert payload["schema_version"].startswith("1.")
        if line.startswith("diachron ask"):
            assert payload["intent"]["intervals"], "README's question must find its time"


def test_the_refund_example_finds_its_time():
    """README's ``ask "What was the refund rule on 20 April?" --now 2026-05-01…``: 20 April 2026, a day."""
    from diachron.retrieval.intent import parse_intent
    from diachron.schemas.time import parse_instant

    line = next(line for line in _shell_lines() if "refund rule on 20 April" in line)
    now = parse_instant(re.search(r"--now (\S+)", line).group(1))
    intent = parse_intent("What was the refund rule on 20 April?", now=now)
    assert [i.to_dict() for i in intent.intervals] == [
        {"start": "2026-04-20T00:00:00Z", "end": "2026-04-21T00:00:00Z", "granularity": "day"}
    ]


@pytest.mark.integration
def test_python_blocks_run_as_written(workdir):
    for block in _blocks("python"):
        if SERVICE in block:
            continue  # the remote-client block runs against the service below
        done = subprocess.run(
            [sys.executable, "-c", block],
            cwd=workdir,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, f"{block}\n{done.stderr[-2000:]}"


@pytest.mark.integration
def test_service_commands_run_as_written(workdir):
    serve = next(line for line in _shell_lines() if line.startswith("diachron serve") and not _excluded(line))
    try:
        httpx.get(f"{SERVICE}/health", timeout=1)
        pytest.fail("something already listens on 127.0.0.1:8000: README's serve line needs that port")
    except httpx.HTTPError:
        pass
    server = subprocess.Popen(
        ["bash", "-c", f"exec {serve}"],
        cwd=workdir,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 180
        while True:
            assert server.poll() is None, server.stderr.read()
            try:
                if httpx.get(f"{SERVICE}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "diachron serve did not answer /health within 180 s"
            time.sleep(0.5)
        for line in [line for line in _shell_lines() if line.startswith(NEEDS_SERVICE)]:
            done = _run(line, workdir)
            assert done.returncode == 0, done.stderr
            payload = json.loads(done.stdout)
            assert "detail" not in payload, payload
        for block in [b for b in _blocks("python") if SERVICE in b]:
            done = subprocess.run(
                [sys.executable, "-c", block],
                cwd=workdir,
                env=_env(),
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert done.returncode == 0, f"{block}\n{done.stderr[-2000:]}"
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_readme_stays_short_and_links_every_docs_page():
    """README is the front page (<= 150 lines); the manual lives in docs/, each page linked from it."""
    front = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(front.splitlines()) <= 150
    pages = sorted(p.name for p in (ROOT / "docs").glob("*.md"))
    assert pages and [p for p in pages if f"docs/{p}" not in front] == []
