"""Reports of the speed benchmarks: raw JSON + a markdown table in ``results/bench/``, and ``LATEST.md``.

``bench/speed/LATEST.md`` holds the latest markdown of every benchmark, one section per report name
(``query-100k``, ``query-1m``, ``ingest``), each replaced when that benchmark runs again.
"""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path
from typing import Any

__all__ = ["LATEST", "query_markdown", "write_reports"]

LATEST = Path(__file__).with_name("LATEST.md")
OURS = ("client", "client+rows", "exact")


def _cell(f: dict[str, float]) -> str:
    return f"{f['p50_ms']:.1f} / {f['p95_ms']:.1f} ({f['cold_ms']:.0f}) R={f['recall_at_10']:.2f}"


def query_markdown(result: dict[str, Any]) -> str:
    """Markdown tables of a query-benchmark result (one per vector kind), ratios against the best baseline."""
    start, end = result.get("load_average_1m_at_start", 0), result.get("load_average_1m_at_end", 0)
    load = f"load average {start:.1f} → {end:.1f}"
    lines = [
        (
            f"## query-{result['tier']} ({result['rows']:,} chunks × 384, top-{result['k']}, "
            f"{result['queries_per_window']} queries per window; run {result['started'][:16]}Z, "
            f"{result['seconds']:.0f} s, {load} on 2 cores)"
        ),
        "",
        (
            "Cells: p50 / p95 (cold) in ms, R = mean recall@10 vs exact. Ratio = p50 ÷ best baseline p50. "
            "`client` plan: share of queries on the approximate path, lowest expected recall the trace "
            "reported, vectors read per query (`time` = time-ordered copy, `classed` = length-classed "
            "entries, both an int8 first pass whose shortlist is re-scored exactly from float32 until the "
            "top-10 is certified; `tree` = IVF in tree nodes). Each timed call follows an idle pause and a "
            "cache-evicting read; the time index's files are read once before each window "
            "(`bench/speed/query.py`)."
        ),
        "",
    ]
    if result.get("on_disk"):
        lines += [
            "On disk: no baseline holds the vectors in memory; `stream` = the window's NCLS candidates "
            "scored exactly from the time index's memory-mapped float32 file (the reference), and the "
            "index's files are not read ahead of a window.",
            "",
        ]
    for kind, data in result["kinds"].items():
        paths = data["paths"]
        baselines = [b for b in paths if b not in OURS and b != "lance"]  # lance: approximate, reported
        head = [
            "window",
            "selectivity",
            *paths,
            "best baseline",
            *(f"{p} ÷ best" for p in OURS),
            "client plan",
        ]
        lines += [f"### {kind} vectors", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for window, base in paths[baselines[0]].items():
            best = min(paths[b][window]["p50_ms"] for b in baselines)
            client = paths["client"][window]
            row = [
                window,
                f"{base['selectivity']:.1%}",
                *(_cell(paths[p][window]) for p in paths),
                f"{best:.1f}",
                *(f"{paths[p][window]['p50_ms'] / best:.2f}" for p in OURS),
                f"{client.get('approximate_share', 0):.0%} approx, exp. R "
                f"{client.get('expected_recall', 1):.2f}"
                + (f", layouts {client['layouts']}" if client.get("layouts") else "")
                + _cached(client.get("page_cache_after") or {}),
            ]
            lines.append("| " + " | ".join(row) + " |")
        lines += ["", _build_line(kind, data["build"]), ""]
    if "ehypo" in result:
        e = result["ehypo"]
        lines += [
            "### e_hypo cost (real embedder, all-MiniLM-L6-v2, anchors embedded per query)",
            "",
            "| window | anchors | p50 ms |",
            "|---|---|---|",
        ]
        lines += [
            f"| {w} | {v['anchors']:.0f} | {v['p50_ms']:.0f} |" for w, v in e.items() if isinstance(v, dict)
        ]
        lines += ["", f"Model load: {e['model_load_s']:.1f} s (once per process).", ""]
    if "summary" in result:
        lines += ["Summary: `" + json.dumps(result["summary"]) + "`", ""]
    return "\n".join(lines)


def _cached(shares: dict[str, float]) -> str:
    """``, int8 in page cache 97%`` (time-ordered codes) after the window's queries; empty when unknown."""
    share = shares.get("vectors_int8.npy")
    return "" if share is None else f", int8 in page cache {share:.0%}"


def _build_line(kind: str, b: dict[str, Any]) -> str:
    """One paragraph of build figures: time per step, bytes on disk and in memory."""
    levels = ", ".join(
        f"L{lv}: nprobe {v['nprobe']}/{v['nlist']} R={v['recall_at_10']:.2f}"
        + ("" if v.get("ivf", True) else " (scan)")
        for lv, v in b["time_index_levels"].items()
    )
    total = sum(b.get(k, 0.0) for k in ("generate_s", "write_s", "btree_s", "time_index_s"))
    rss = f"; peak RSS {b['peak_rss_bytes'] / 2**30:.1f} GiB" if "peak_rss_bytes" in b else ""
    rss += f"; LanceDB IVF_PQ built in {b['lance_ivf_s']:.0f} s" if "lance_ivf_s" in b else ""
    return (
        f"Build ({kind}): generate {b['generate_s']:.1f} s; write {b['write_s']:.1f} s; BTREE "
        f"{b['btree_s']:.1f} s; time-partitioned index {b['time_index_s']:.1f} s "
        f"({b['time_index_disk_bytes'] / 2**20:.0f} MiB on disk; levels {levels or 'none (small)'}); "
        f"total {total:.0f} s; searcher open {b.get('searcher_open_s', 0):.2f} s, "
        f"{b.get('searcher_bytes_per_chunk', 0):.0f} bytes per chunk held in memory{rss}; index files read "
        f"before each window in {statistics.median(b.get('warm_s') or [0]):.1f} s (median); baselines' NCLS "
        f"{b['paper_ncls_build_s']:.2f} s (+ {b['load_arrays_s']:.1f} s to load their arrays into memory). "
        f"Table {b['table_disk_bytes'] / 2**20:.0f} MiB; table + index "
        f"{(b['table_disk_bytes'] + b['time_index_disk_bytes']) / 2**30:.2f} GiB."
    )


def _update_latest(name: str, markdown: str) -> None:
    text = LATEST.read_text() if LATEST.is_file() else "# Speed benchmarks: latest results\n\n"
    marker_start, marker_end = f"<!-- {name} -->", f"<!-- /{name} -->"
    section = f"{marker_start}\n{markdown}\n{marker_end}"
    pattern = re.compile(re.escape(marker_start) + ".*?" + re.escape(marker_end), re.DOTALL)
    text = (
        pattern.sub(lambda _: section, text)
        if pattern.search(text)
        else text.rstrip() + "\n\n" + section + "\n"
    )
    LATEST.write_text(text)


def write_reports(result: dict[str, Any], out: Path, name: str, markdown: str | None = None) -> str:
    """Write ``out/<name>.json`` and ``out/<name>.md``, update ``LATEST.md``; returns the markdown."""
    markdown = markdown if markdown is not None else query_markdown(result)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(result, indent=1, default=str))
    (out / f"{name}.md").write_text(markdown + "\n")
    _update_latest(name, markdown)
    return markdown
