"""Plots of the evaluation (matplotlib, Agg backend): recall@k curves and one question's evidence timeline."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.eval.data import Question
from bench.eval.metrics import Item

__all__ = ["plot_recall_curves", "plot_timeline"]


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_recall_curves(summary: Any, path: Path, *, split: str) -> Path:
    """Mean recall@k against k, one line per method, for ``split``; written as PNG to ``path``."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    part = summary[summary["split"] == split]
    for method, rows in part.groupby("method", sort=False):
        ax.plot(rows["k"], rows["recall"], marker="o", label=method)
    ax.set(
        xscale="log",
        xlabel="k",
        ylabel="evidence recall@k",
        title=f"recall@k by method ({split} split)",
        ylim=(0, 1.02),
    )
    ax.set_xticks(sorted(part["k"].unique()), labels=[str(k) for k in sorted(part["k"].unique())])
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_timeline(question: Question, retrieved: dict[str, Sequence[Item]], path: Path) -> Path:
    """One question's retrieved evidence (one row per method) against its window; gold filled, other
    hollow."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 0.6 * len(retrieved) + 1.6))
    ax.axvspan(
        question.window.start, question.window.end, color="tab:green", alpha=0.15, label="question window"
    )
    for row, items in enumerate(retrieved.values()):
        dated = [i for i in items if i.month is not None]
        gold = [i.month for i in dated if i.doc_id in question.gold]
        other = [i.month for i in dated if i.doc_id not in question.gold]
        ax.scatter(
            gold, [row] * len(gold), marker="o", color="tab:blue", label="gold evidence" if row == 0 else None
        )
        ax.scatter(
            other,
            [row] * len(other),
            marker="o",
            facecolors="none",
            edgecolors="tab:red",
            label="other evidence" if row == 0 else None,
        )
    ax.set_yticks(range(len(retrieved)), labels=list(retrieved))
    ax.set_title(f"{question.qid}: {question.text}", fontsize=8)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1, 1))
    fig.autofmt_xdate()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
