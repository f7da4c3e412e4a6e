"""How many e_hypo anchors a query needs: quality and embedding time per anchor cap, on the stock questions.

TA-RAG §3.3 embeds one phrase per anchor and averages them; the embedding is most of a warm query's time.
This runs the full TA-RAG search over the stock questions (``shared/data/stocks_quandl_wiki/questions.jsonl``)
with the anchor cap at each of ``--caps`` (anchors evenly spaced when a window has more), and reports
recall@k and in-window precision@k against the gold documents, with the mean anchors and embedding time.

    python -m bench.speed.anchor_cap --db data/diachron.lancedb [--limit 100] [--caps 120,48,24,12]
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(add_completion=False)
_REPO = Path(__file__).resolve().parents[2]


@app.command()
def main(
    db: Annotated[
        str, typer.Option(help="Index holding the stock summaries (the demo index).")
    ] = "data/diachron.lancedb",
    shared: Annotated[Path, typer.Option(help="The shared folder.")] = _REPO.parent / "shared",
    caps: Annotated[str, typer.Option(help="Anchor caps to compare, comma-separated.")] = "120,48,24,12",
    limit: Annotated[int | None, typer.Option(help="Only the first N questions.")] = None,
    ks: Annotated[str, typer.Option(help="Cut-offs k.")] = "5,10,20",
) -> None:
    """Print a markdown table: cap, questions, mean anchors, mean embed ms, recall@k, in-window
    precision@k."""
    import diachron.retrieval.client as client_module
    from diachron.ingest.embedding import Embedder
    from diachron.retrieval.anchors import anchors
    from diachron.retrieval.client import Client

    from bench.eval.data import load_questions
    from bench.eval.methods import _items_from_result  # the eval's own ranking-order items
    from bench.eval.metrics import in_window_precision, recall_at_k

    questions = load_questions(shared / "data" / "stocks_quandl_wiki" / "questions.jsonl")[:limit]
    cuts = [int(k) for k in ks.split(",")]
    client = Client(db, embedder=Embedder(threads=1))
    now = datetime(2026, 1, 1, tzinfo=UTC)
    print(
        "| cap | questions | anchors (mean) | embed ms (mean) | "
        + " | ".join(f"recall@{k} | precision@{k}" for k in cuts)
        + " |"
    )
    print("|" + "---|" * (4 + 2 * len(cuts)))
    for cap in [int(c) for c in caps.split(",")]:
        client_module.anchors = functools.partial(anchors, max_anchors=cap)
        recall = {k: [] for k in cuts}
        precision = {k: [] for k in cuts}
        n_anchors, embed = [], []
        for q in questions:
            result = client.search(q.text, k=max(cuts), now=now)
            items = _items_from_result(result)
            n_anchors.append(result.trace.anchors)
            embed.append(result.trace.seconds.get("embed", 0.0))
            for k in cuts:
                recall[k].append(recall_at_k(items, set(q.gold), k))
                p = in_window_precision(items, q.window, k)
                if p is not None:
                    precision[k].append(p)
        mean = lambda xs: sum(xs) / len(xs) if xs else float("nan")  # noqa: E731
        print(
            f"| {cap} | {len(questions)} | {mean(n_anchors):.1f} | {1000 * mean(embed):.0f} | "
            + " | ".join(f"{mean(recall[k]):.3f} | {mean(precision[k]):.3f}" for k in cuts)
            + " |",
            flush=True,
        )
    client_module.anchors = anchors


if __name__ == "__main__":
    app()
