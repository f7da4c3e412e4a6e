"""Per-question metrics and their means by method, k, split and question type.

Returns a pandas DataFrame with one row per ``(method, qid, k)``: ``split``, ``type``, ``recall``,
``precision`` (in-window), ``coverage``, ``endpoint_share``, ``uniform_share`` (NaN when undefined).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bench.eval.data import Question
from bench.eval.metrics import (
    Item,
    endpoint_share,
    in_window_precision,
    recall_at_k,
    temporal_coverage,
)

__all__ = ["score", "summary"]

NAN = float("nan")


def score(retrieved: dict[str, dict[str, dict[int, list[Item]]]], questions: Sequence[Question]) -> Any:
    """The per-question metric table (see the module docstring)."""
    import pandas as pd

    rows = []
    for method, per_q in retrieved.items():
        for q in questions:
            for k, items in per_q[q.qid].items():
                ends = endpoint_share(items, q.window, k)
                precision = in_window_precision(items, q.window, k)
                rows.append(
                    {
                        "method": method,
                        "qid": q.qid,
                        "split": q.split,
                        "type": q.type,
                        "k": k,
                        "recall": recall_at_k(items, set(q.gold), k),
                        "precision": NAN if precision is None else precision,
                        "coverage": temporal_coverage(items, set(q.gold), q.window, k),
                        "endpoint_share": ends[0] if ends else NAN,
                        "uniform_share": ends[1] if ends else NAN,
                    }
                )
    return pd.DataFrame(rows)


def summary(frame: Any, *, by: Sequence[str] = ("split", "method", "k")) -> Any:
    """Means of the metrics grouped by ``by``; ``endpoint_bias`` = mean observed / mean uniform share."""
    out = frame.groupby(list(by), sort=False)[
        ["recall", "precision", "coverage", "endpoint_share", "uniform_share"]
    ].mean()
    out["endpoint_bias"] = out["endpoint_share"] / out["uniform_share"]
    out["n"] = frame.groupby(list(by), sort=False).size()
    return out.reset_index()
