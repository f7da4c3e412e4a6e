"""``python -m bench.eval``: ingest (idempotent), retrieve with every method, score, plot, report.

Example:
    python -m bench.eval --split both --out results/eval          # fresh ingest into results/eval/db
    python -m bench.eval --reuse-db --db results/eval/db --no-sotu  # skip ingest
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(add_completion=False)
log = logging.getLogger("bench.eval")

KS = (5, 10, 20, 50)
#: the clock every question is read against (the questions carry absolute dates only).
NOW = datetime(2026, 1, 1, tzinfo=UTC)
_REPO = Path(__file__).resolve().parents[2]


def _ingest(db: str, data: Path, *, sotu: bool, tzdb: bool) -> str:
    from diachron.ingest.pipeline import IngestConfig, run_ingest

    sources = [str(data / "data" / "stocks_quandl_wiki" / "monthly_summaries.jsonl")]
    sources += [str(data / "data" / "tzdb_news" / "releases.jsonl")] if tzdb else []
    sources += ["sotu"] if sotu else []
    summary = run_ingest(sources, IngestConfig(db_uri=db, num_cpus=2))
    return (
        f"{', '.join(Path(s).name for s in sources)}: {summary.documents_seen} documents seen, "
        f"{summary.documents_written} written, {summary.chunks_written} chunks written, "
        f"{summary.seconds:.0f} s"
    )


def _answers(methods: object, questions: list, config: object) -> object:
    import pandas as pd

    from bench.eval.answer import ask, prompt

    rows = []
    for name, kwargs in (
        ("ta-rag", {}),
        ("ta-rag, rank order (no chronological structuring)", {"chronological": False}),
        ("naive", None),
    ):
        for q in [q for q in questions if q.options]:
            if kwargs is None:
                result = methods.client.naive_search(q.text, k=10)  # type: ignore[attr-defined]
            else:
                result = methods.client.search(q.text, k=10, now=NOW, **kwargs)  # type: ignore[attr-defined]
            rows.append(
                {
                    "method": name,
                    "split": q.split,
                    "correct": ask(config, prompt(q, result.evidence)) == q.answer,
                }
            )
    frame = pd.DataFrame(rows)
    return (
        frame.groupby(["split", "method"], sort=False)["correct"]
        .agg(["mean", "size"])
        .reset_index()
        .rename(columns={"mean": "accuracy", "size": "n"})
    )


def _timeqa(
    shared: Path,
    cache: Path,
    embedder: object,
    limit: int | None,
    settings: list[str],
    methods: list[str],
    every: int = 1,
    reuse: bool = False,
) -> list[str]:
    """The TimeQA development benchmark in each setting (``pages``, ``passages``): ingest (cached,
    idempotent), retrieve, score; report lines, the development halves' table first (bench/eval/README.md)."""
    from bench.eval.timeqa import (
        ingest_timeqa,
        load_questions,
        render_halves,
        render_timeqa,
        run_timeqa,
        score_timeqa,
    )

    questions = load_questions(shared / "data" / "timeqa_dev" / "questions.jsonl")[:limit][::every]
    frames, sections = {}, []
    for setting in settings:
        t0 = time.perf_counter()
        db, index, note = ingest_timeqa(shared, cache, setting, reuse=reuse)
        log.info("timeqa %s ingest: %s", setting, note)
        t1 = time.perf_counter()
        run = run_timeqa(
            db,
            index,
            questions,
            embedder=embedder,
            methods=methods,
            progress=lambda m, n: log.info("%s: %d/%d", m, n, len(questions)) if n % 50 == 0 else None,
        )
        frame, (misses, removed) = score_timeqa(run, questions)
        frames[setting] = frame
        meta = {
            "setting": setting,
            "index": db,
            "ingest": note,
            "chunks in the index": len(run["chunks"]),
            "questions": f"{len(questions)} (every {every}th)" if every > 1 else len(questions),
            "retrieval wall time": f"{time.perf_counter() - t1:.0f} s",
            "total wall time": f"{time.perf_counter() - t0:.0f} s",
        }
        sections += render_timeqa(frame, misses, removed, meta)
    head = ["## TimeQA development halves (pages split by hash, bench/eval/README.md)", ""]
    return head + render_halves(frames) + sections


def _methods(spec: str | None) -> list[str]:
    from bench.eval.timeqa import TIMEQA_METHODS

    return [m.strip() for m in spec.split(",") if m.strip()] if spec else list(TIMEQA_METHODS)


def _timeqa_only(
    shared: Path,
    cache: Path,
    out: Path,
    limit: int | None,
    settings: list[str],
    methods: str | None,
    every: int = 1,
    reuse: bool = False,
) -> None:
    """``--no-stocks``: the TimeQA settings alone, reported to ``out/report.md``."""
    from bench.eval.methods import CachingEmbedder

    t0 = time.perf_counter()
    lines = _timeqa(shared, cache, CachingEmbedder(), limit, settings, _methods(methods), every, reuse)
    lines.append(f"Total wall time: {time.perf_counter() - t0:.0f} s")
    (out / "report.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    typer.echo(f"report: {out / 'report.md'}")


@app.command()
def main(
    db: Annotated[str, typer.Option(help="LanceDB URI of the evaluation index.")] = "results/eval/db",
    out: Annotated[Path, typer.Option(help="Results folder (report.md, plots, CSVs).")] = Path(
        "results/eval"
    ),
    reuse_db: Annotated[
        bool, typer.Option("--reuse-db", help="Skip the ingest step (TimeQA: when its index exists).")
    ] = False,
    split: Annotated[str, typer.Option(help="dev, test or both.")] = "both",
    sotu: Annotated[bool, typer.Option(help="Ingest the sotu corpus (1920-1940) as distractors.")] = True,
    tzdb: Annotated[bool, typer.Option(help="Ingest the tzdb release notes as distractors.")] = True,
    shared: Annotated[Path, typer.Option(help="The shared folder (data/, cases/).")] = _REPO.parent
    / "shared",
    llm_url: Annotated[
        str | None, typer.Option(help="OpenAI-compatible base URL (…/v1) for the answer stage.")
    ] = None,
    llm_model: Annotated[str, typer.Option(help="Model name at --llm-url.")] = "default",
    limit: Annotated[int | None, typer.Option(help="Only the first N questions (smoke runs).")] = None,
    timeqa: Annotated[
        bool, typer.Option(help="Also run the TimeQA development benchmark (issue 11).")
    ] = True,
    timeqa_settings: Annotated[
        str, typer.Option(help="TimeQA settings, comma-separated: pages (one document per page), passages.")
    ] = "pages,passages",
    timeqa_methods: Annotated[
        str | None,
        typer.Option(help="TimeQA methods, comma-separated (default: all; diachron@field=value,… variants)."),
    ] = None,
    timeqa_every: Annotated[
        int, typer.Option(help="Only every n-th TimeQA question (a fixed sample of both halves).")
    ] = 1,
    stocks: Annotated[
        bool, typer.Option(help="Run the stock questions and temporal cases (--no-stocks: TimeQA only).")
    ] = True,
    timeqa_cache: Annotated[Path, typer.Option(help="Cache of the ingested TimeQA index.")] = _REPO
    / "bench"
    / ".cache"
    / "timeqa",
) -> None:
    """Evaluate temporal retrieval (TA-RAG, ablations, baselines) on the stock questions; write a report."""
    from bench.eval.answer import AnswerConfig
    from bench.eval.cases import run_cases
    from bench.eval.data import load_questions
    from bench.eval.methods import METHODS, Methods, run_methods
    from bench.eval.plots import plot_recall_curves, plot_timeline
    from bench.eval.report import render
    from bench.eval.scoring import score, summary

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    if split not in ("dev", "test", "both"):
        raise typer.BadParameter("--split must be dev, test or both")
    out.mkdir(parents=True, exist_ok=True)
    settings = [x.strip() for x in timeqa_settings.split(",") if x.strip()]
    if not set(settings) <= {"pages", "passages"}:
        raise typer.BadParameter("--timeqa-settings takes pages and/or passages")
    if not stocks:
        _timeqa_only(shared, timeqa_cache, out, limit, settings, timeqa_methods, timeqa_every, reuse_db)
        return
    t0 = time.perf_counter()
    ingest_note = "skipped (--reuse-db)" if reuse_db else _ingest(db, shared, sotu=sotu, tzdb=tzdb)
    log.info("ingest: %s", ingest_note)
    questions = load_questions(shared / "data" / "stocks_quandl_wiki" / "questions.jsonl", split=split)[
        :limit
    ]
    methods = Methods(db, now=NOW)
    t1 = time.perf_counter()
    retrieved = run_methods(
        methods,
        list(METHODS),
        questions,
        KS,
        progress=lambda m, n: log.info("%s: %d/%d", m, n, len(questions)) if n % 50 == 0 else None,
    )
    seconds = time.perf_counter() - t1
    frame = score(retrieved, questions)
    frame.to_csv(out / "per_question.csv", index=False)
    table = summary(frame)
    table.to_csv(out / "summary.csv", index=False)
    by_type = summary(frame, by=("split", "type", "method", "k"))
    splits = sorted(set(table["split"]), reverse=True)
    plots = [plot_recall_curves(table, out / f"recall_at_k_{s}.png", split=s).name for s in splits]
    example = next(q for q in questions if len(q.gold) >= 12 and q.split == splits[0])
    plots.append(
        plot_timeline(example, {m: retrieved[m][example.qid][20] for m in METHODS}, out / "timeline.png").name
    )
    answers = _answers(methods, questions, AnswerConfig(llm_url, llm_model)) if llm_url else None
    meta = {
        "index": db,
        "ingest": ingest_note,
        "embedder": methods.embedder.spec.id,
        "chunks in the index": methods.client.chunks.count_rows(),
        "questions": len(questions),
        "split": split,
        "k": ", ".join(map(str, KS)),
        "question clock (now)": NOW.isoformat(),
        "retrieval wall time": f"{seconds:.0f} s for {len(METHODS)} methods (identical texts embedded once)",
        "timeline question": f"{example.qid} (top-20 per method)",
        "total wall time": "{total}",
    }
    cases = run_cases(
        shared / "cases" / "temporal_cases.jsonl", embedder=methods.embedder, workdir=out / "cases_db"
    )
    extra = (
        _timeqa(
            shared, timeqa_cache, methods.embedder, limit, settings, _methods(timeqa_methods), timeqa_every
        )
        if timeqa
        else []
    )
    meta["total wall time"] = f"{time.perf_counter() - t0:.0f} s"
    report = render(meta=meta, summary=table, by_type=by_type, cases=cases, answers=answers, plots=plots)
    (out / "report.md").write_text(report + "\n".join(extra), encoding="utf-8")
    typer.echo(f"report: {out / 'report.md'}")


if __name__ == "__main__":
    app()
