"""The markdown report of an evaluation run (tables only; the plots are separate PNG files beside it)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from bench.eval.cases import CaseResult
from bench.eval.methods import METHODS

__all__ = ["render"]


def _f(value: float) -> str:
    return "–" if math.isnan(value) else f"{value:.3f}"


def _main_table(summary: Any, split: str, ks: Sequence[int]) -> list[str]:
    part = summary[(summary["split"] == split) & (summary["k"].isin(ks))]
    head = "| method | " + " | ".join(f"R@{k} | P@{k} | C@{k}" for k in ks) + " |"
    lines = [head, "|---|" + "---|" * (3 * len(ks))]
    for method, rows in part.groupby("method", sort=False):
        by_k = {int(r["k"]): r for _, r in rows.iterrows()}
        cells = [
            f"{_f(by_k[k]['recall'])} | {_f(by_k[k]['precision'])} | {_f(by_k[k]['coverage'])}" for k in ks
        ]
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    return lines


def _long_table(summary: Any, keys: Sequence[str]) -> list[str]:
    cols = [*keys, "n", "recall", "precision", "coverage", "endpoint_share", "uniform_share", "endpoint_bias"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, r in summary.iterrows():
        lines.append("| " + " | ".join(str(r[c]) if c in (*keys, "n") else _f(r[c]) for c in cols) + " |")
    return lines


def render(
    *,
    meta: dict[str, Any],
    summary: Any,
    by_type: Any,
    cases: Sequence[CaseResult],
    answers: Any | None,
    plots: Sequence[str],
) -> str:
    """The report as markdown.

    Args:
        meta: run facts (index, counts, seconds, splits, clock) shown at the top.
        summary: :func:`bench.eval.scoring.summary` by split, method, k.
        by_type: the same by split, type, method, k.
        cases: the temporal case table.
        answers: multiple-choice accuracy table, or ``None`` when no LLM endpoint was configured.
        plots: file names of the plots, relative to the report.
    """
    out = ["# diachron evaluation: temporal retrieval against baselines and ablations", ""]
    out += [f"- {key}: {value}" for key, value in meta.items()]
    out += [
        "",
        (
            "Metrics (means over questions): R@k evidence recall = |gold ∩ top-k| / min(k, |gold|); "
            "P@k in-window precision = share of the top-k chunks with an event interval overlapping the "
            "question window; C@k temporal coverage = share of the window's months with a retrieved gold "
            "document; endpoint share = share of in-window top-k evidence in the window's first or last "
            "month (windows of 3+ months), uniform share = 2 / months, endpoint bias = their ratio "
            "(1 = even)."
        ),
        "",
        "Methods:",
        "",
    ]
    out += [f"- `{name}`: {text}" for name, text in METHODS.items() if name in set(summary["method"])]
    out += [
        (
            "- without chronological structuring: retrieval is identical by construction (ordering happens "
            "after top-k), so it differs only in the answer stage."
        ),
        "",
    ]
    for split in [s for s in ("test", "dev") if s in set(summary["split"])]:
        out += [
            f"## Main table, {split} split (k = 5, 10, 20)",
            "",
            *_main_table(summary, split, (5, 10, 20)),
            "",
        ]
    out += ["## All metrics by split, method and k", "", *_long_table(summary, ("split", "method", "k")), ""]
    out += [
        "## By question type (k = 10)",
        "",
        *_long_table(by_type[by_type["k"] == 10], ("split", "type", "method", "k")),
        "",
    ]
    out += ["## Answer stage (multiple choice)", ""]
    if answers is None:
        out += ["Not run: no LLM endpoint configured (`--llm-url`). Retrieval metrics only.", ""]
    else:
        out += [answers.to_markdown(index=False), ""]
    passed = sum(c.status == "pass" for c in cases)
    run = sum(c.status != "not run" for c in cases)
    out += [
        f"## Temporal cases: {passed} of {run} run pass ({len(cases)} cases)",
        "",
        "| id | category | kind | status | observed | expected |",
        "|---|---|---|---|---|---|",
    ]
    out += [f"| {c.id} | {c.category} | {c.kind} | {c.status} | {c.observed} | {c.expected} |" for c in cases]
    out += ["", "## Plots", ""] + [f"![{p}]({p})" for p in plots] + [""]
    return "\n".join(out)
