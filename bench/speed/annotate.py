"""Annotation cost beside embedding, on the same chunks, in one process (issue 12: annotation <= 15% of the pipeline).

Run: ``python -m bench.speed.annotate [--years 1920-1922]``. Chunks the ``sotu`` slice and the stock summaries
with the pipeline's annotate stage (rule annotator), with Duckling's grammar off and on, then embeds the same
chunks once; prints seconds, chunks/s and the annotation share of (annotate + embed), with the load average
before and after (ratios from one run hold at any load; absolute speed only on a quiet machine).
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

import pyarrow as pa


def _rows(docs: list[Any]) -> pa.Table:
    return pa.Table.from_pylist([{"doc_id": d.doc_id, "series_id": d.series_id or d.doc_id, "title": d.title,
                                  "text": d.text, "published_at": d.published_at, "valid_from": d.valid_from,
                                  "valid_until": d.valid_until} for d in docs])


def measure(years: tuple[int, int]) -> dict[str, Any]:
    """Seconds of annotate+chunk (grammar off/on), of the tagger alone, and of embedding the same chunks."""
    from diachron.ingest.sources import SourceDocument, load_source
    from diachron.ingest.stages import AnnotateStage, EmbedStage, StageConfig
    from diachron.temporal.tagger import TaggerConfig, extract_mentions

    docs = [d for d in load_source("sotu", sotu_years=years) if isinstance(d, SourceDocument)]
    out: dict[str, Any] = {"documents": len(docs), "load_before": os.getloadavg()[0]}
    config = StageConfig()
    chunks = None
    for grammar in (False, True):
        stage = AnnotateStage(config)
        stage.annotator.tagger = TaggerConfig(grammar=grammar)
        t0 = time.perf_counter()
        chunks = stage(_rows(docs))
        out[f"annotate_s_grammar_{grammar}"] = time.perf_counter() - t0
        texts = chunks.column("text").to_pylist()
        t0 = time.perf_counter()
        for text, doc in zip(texts, chunks.column("doc_id").to_pylist(), strict=True):
            extract_mentions(text, reference=next(d.published_at for d in docs if d.doc_id == doc),
                             config=TaggerConfig(grammar=grammar))
        out[f"tagger_s_grammar_{grammar}"] = time.perf_counter() - t0
    assert chunks is not None
    out["chunks"] = chunks.num_rows
    embed = EmbedStage(config)
    t0 = time.perf_counter()
    embed(chunks)
    out["embed_s"] = time.perf_counter() - t0
    out["load_after"] = os.getloadavg()[0]
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.speed.annotate", description=__doc__.split("\n")[0])
    parser.add_argument("--years", default="1920-1922", help="inclusive sotu year slice")
    args = parser.parse_args(argv)
    r = measure(tuple(int(y) for y in args.years.split("-")))  # type: ignore[arg-type]
    n = r["chunks"]
    print(f"{r['documents']} documents, {n} chunks; load average {r['load_before']:.1f} -> {r['load_after']:.1f}")
    print(f"embed: {r['embed_s']:.1f} s ({n / r['embed_s']:.1f} chunks/s)")
    for grammar in (False, True):
        a, t = r[f"annotate_s_grammar_{grammar}"], r[f"tagger_s_grammar_{grammar}"]
        print(f"grammar {'on ' if grammar else 'off'}: annotate+chunk {a:.1f} s ({n / a:.1f} chunks/s), tagger alone "
              f"{t:.2f} s ({n / t:.1f} chunks/s); annotate share of annotate+embed {a / (a + r['embed_s']):.1%}")


if __name__ == "__main__":
    main()
