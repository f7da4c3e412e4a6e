"""Release notes as a second domain (issue 28): a changelog converter, questions, and the top-3 check.

**Convert** any changelog whose release headings carry a version and a date into one JSONL document per
release (``doc_id``, ``title``, ``text`` = the release's section with its heading, ``published_at`` = the
heading's date, ``series_id`` = the project, ``version``, ``supersedes`` = the previous release's version),
ready for ``diachron ingest``. The heading pattern is a regular expression with the named groups
``version`` and ``date`` (any date ``dateutil`` reads; no offset = UTC); :data:`PATTERNS` holds two:

* ``release`` (default): ``Release 2022f - 2022-10-28 18:04:57 -0700`` (the tz database's NEWS);
* ``keep-a-changelog``: ``## [1.2.0] - 2024-05-01`` (``## [Unreleased]`` has no date and is skipped).

**Questions** are generated from the releases alone, deterministically (no randomness): "which version was
current on D" (D halfway between a release and the next), "what changed between A and B" (consecutive
releases; the gold is B's notes), "what did the release of <month year> contain" (months with exactly one
release), and relative ones read against ``now`` ("last month's release", "the version current 30 days
ago"). Each question's half (``A``/``B``) is its gold release's: a hash of the version.

Example (the development set shipped under ``bench/changelog/tzdb``)::

    python -m bench.eval.changelog convert bench/changelog/tzdb/NEWS --project tz --out /tmp/tz.jsonl
    python -m bench.eval.changelog questions /tmp/tz.jsonl --project tz --out /tmp/tz-questions.jsonl
    python -m bench.eval.changelog evaluate /tmp/tz.jsonl /tmp/tz-questions.jsonl --db /tmp/tz-db
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any

import typer

__all__ = ["PATTERNS", "Release", "convert", "half_of", "make_questions"]

#: named heading patterns (regular expressions with the groups ``version`` and ``date``).
PATTERNS: dict[str, str] = {
    "release": r"^Release (?P<version>\S+) - (?P<date>\d{4}-\d{2}-\d{2}[^\n]*?)\s*$",
    "keep-a-changelog": r"^##\s*\[(?P<version>[^\]]+)\]\s*-\s*(?P<date>\d{4}-\d{2}-\d{2})\s*$",
}
MONTHS = "January February March April May June July August September October November December".split()

app = typer.Typer(add_completion=False, help=__doc__.split("\n\n")[0])


@dataclass(frozen=True, slots=True)
class Release:
    """One release: version, UTC timestamp, its section's text (heading included)."""

    version: str
    published_at: datetime
    text: str


def _date(text: str) -> datetime:
    from dateutil import parser

    value = parser.parse(text)
    return (value if value.tzinfo else value.replace(tzinfo=UTC)).astimezone(UTC)


def convert(text: str, pattern: str = PATTERNS["release"]) -> list[Release]:
    """The releases of a changelog's ``text``, newest first as written; a section runs from its heading to
    the next heading. Raises ``ValueError`` when no heading matches (the message shows the pattern)."""
    heading = re.compile(pattern, re.MULTILINE)
    found = list(heading.finditer(text))
    if not found:
        raise ValueError(f"no release heading matches {pattern!r}: pass --pattern (see PATTERNS)")
    out = []
    for m, nxt in zip(found, [*found[1:], None], strict=True):
        section = text[m.start() : nxt.start() if nxt else len(text)].strip()
        out.append(Release(m.group("version"), _date(m.group("date")), section))
    return out


def documents(releases: list[Release], project: str) -> list[dict[str, Any]]:
    """JSONL records for ``diachron ingest`` (one per release; ``supersedes`` = the previous by date)."""
    ordered = sorted(releases, key=lambda r: r.published_at)
    previous = {r.version: p.version for p, r in zip(ordered, ordered[1:], strict=False)}
    return [
        {
            "doc_id": f"{project}-release/{r.version}",
            "title": f"{project} release {r.version}",
            "text": r.text,
            "published_at": r.published_at.isoformat(),
            "series_id": f"{project}-releases",
            "version": r.version,
            "supersedes": previous.get(r.version),
        }
        for r in releases
    ]


def half_of(version: str) -> str:
    """The fixed half (``"A"``/``"B"``) of a release: the low bit of the SHA-256 of its version."""
    return "AB"[hashlib.sha256(version.encode("utf-8")).digest()[0] & 1]


def _q(qid: str, text: str, now: datetime, gold: Release, kind: str, project: str) -> dict[str, Any]:
    return {
        "qid": qid,
        "question": text,
        "now": now.isoformat(),
        "gold_doc_ids": [f"{project}-release/{gold.version}"],
        "kind": kind,
        "half": half_of(gold.version),
    }


def make_questions(releases: list[Release], project: str, *, now: datetime | None = None) -> list[dict]:
    """Questions with their gold release (module docstring), in release order; ``now`` for the absolute
    ones defaults to a day after the newest release."""
    rel = sorted(releases, key=lambda r: r.published_at)
    clock = now or rel[-1].published_at + timedelta(days=1)
    per_month = Counter((r.published_at.year, r.published_at.month) for r in rel)
    out: list[dict[str, Any]] = []
    for i, r in enumerate(rel):
        day = r.published_at
        if i + 1 < len(rel) and (rel[i + 1].published_at - day).days >= 4:
            mid = (day + (rel[i + 1].published_at - day) / 2).date()
            out.append(
                _q(
                    f"current/{r.version}",
                    f"Which {project} version was current on {mid:%-d %B %Y}?",
                    clock,
                    r,
                    "current-on",
                    project,
                )
            )
            later = datetime(mid.year, mid.month, mid.day, 12, tzinfo=UTC) + timedelta(days=30)
            out.append(
                _q(
                    f"current-ago/{r.version}",
                    f"Which {project} version was current 30 days ago?",
                    later,
                    r,
                    "relative-current",
                    project,
                )
            )
        if i > 0:
            out.append(
                _q(
                    f"between/{r.version}",
                    f"What changed between {project} {rel[i - 1].version} and {r.version}?",
                    clock,
                    r,
                    "between",
                    project,
                )
            )
        if per_month[(day.year, day.month)] == 1:
            month = f"{MONTHS[day.month - 1]} {day.year}"
            out.append(
                _q(
                    f"month/{r.version}",
                    f"What did the {project} release of {month} contain?",
                    clock,
                    r,
                    "month",
                    project,
                )
            )
            nxt = datetime(day.year + day.month // 12, day.month % 12 + 1, 15, tzinfo=UTC)
            out.append(
                _q(
                    f"last-month/{r.version}",
                    f"What did last month's {project} release contain?",
                    nxt,
                    r,
                    "relative-month",
                    project,
                )
            )
    return out


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in Path(path).read_text(encoding="utf-8").splitlines() if x.strip()]


def _write_jsonl(rows: list[dict[str, Any]], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def _pattern(pattern: str) -> str:
    return PATTERNS.get(pattern, pattern)


@app.command("convert")
def convert_command(
    changelog: Annotated[Path, typer.Argument(help="The changelog file (e.g. NEWS, CHANGELOG.md).")],
    out: Annotated[Path, typer.Option(help="JSONL output, one document per release.")],
    project: Annotated[str, typer.Option(help="Project name (doc ids, titles, series).")] = "project",
    pattern: Annotated[
        str, typer.Option(help="Heading: a name of PATTERNS (release, keep-a-changelog) or a regex.")
    ] = "release",
) -> None:
    """Convert a changelog into one JSONL document per release."""
    try:
        releases = convert(changelog.read_text(encoding="utf-8"), _pattern(pattern))
    except (OSError, ValueError) as err:
        raise typer.BadParameter(str(err)) from None
    _write_jsonl(documents(releases, project), out)
    typer.echo(f"{len(releases)} releases -> {out}")


@app.command("questions")
def questions_command(
    releases: Annotated[Path, typer.Argument(help="JSONL written by `convert`.")],
    out: Annotated[Path, typer.Option(help="JSONL output, one question per line.")],
    project: Annotated[str, typer.Option(help="Project name as in the questions.")] = "project",
) -> None:
    """Generate the questions (deterministic) from converted releases."""
    rows = _read_jsonl(releases)
    rel = [Release(r["version"], _date(r["published_at"]), r["text"]) for r in rows]
    qs = make_questions(rel, project)
    _write_jsonl(qs, out)
    typer.echo(f"{len(qs)} questions -> {out} ({dict(Counter(q['half'] for q in qs))} by half)")


def evaluate(
    releases: Path, questions: Path, db: str, *, k: int = 3, embedder: Any = None, every: int = 1
) -> tuple[Any, str]:
    """Ingest ``releases`` into ``db`` (idempotent) and ask every question with diachron and with plain vector
    search; returns ``(per-question frame: qid, kind, half, method, hit, top)``, the ingest note).
    ``hit``: the gold release's document among the top ``k``; ``every``: only every n-th question."""
    import pandas as pd
    from diachron.ingest.pipeline import IngestConfig, run_ingest
    from diachron.retrieval.client import Client
    from diachron.schemas.time import parse_instant

    s = run_ingest([str(releases)], IngestConfig(db_uri=db, num_cpus=2))
    note = f"{s.documents_written} written, {s.chunks_written} chunks written, {s.seconds:.0f} s"
    client = Client(db, embedder=embedder)
    rows = []
    for q in _read_jsonl(questions)[::every]:
        for method in ("diachron", "naive"):
            if method == "naive":
                result = client.naive_search(q["question"], k=4 * k)
            else:
                result = client.search(q["question"], k=4 * k, now=parse_instant(q["now"]))
            docs = list(dict.fromkeys(e.doc_id for e in sorted(result.evidence, key=lambda e: e.rank)))[:k]
            rows.append(
                {
                    **{c: q[c] for c in ("qid", "kind", "half")},
                    "method": method,
                    "hit": float(bool(set(docs) & set(q["gold_doc_ids"]))),
                    "top": " ".join(docs),
                }
            )
    return pd.DataFrame(rows), note


def render(frame: Any, meta: dict[str, Any], k: int = 3) -> list[str]:
    """Markdown lines: gold release in the top ``k`` by method, half and question kind."""
    out = ["## Release notes (tz database NEWS, bench/changelog/tzdb)", ""]
    out += [f"- {key}: {v}" for key, v in meta.items()]
    table = frame.pivot_table(index=["kind"], columns=["method", "half"], values="hit", aggfunc="mean")
    total = frame.groupby(["method", "half"])["hit"].mean()
    counts = frame[frame["method"] == "diachron"].groupby("kind").size()
    cols = [(m, h) for m in ("diachron", "naive") for h in ("A", "B")]
    out += [
        "",
        f"Gold release in the top {k}:",
        "",
        "| question kind | n | " + " | ".join(f"{m} {h}" for m, h in cols) + " |",
        "|---|---|" + "---|" * len(cols),
    ]
    for kind in table.index:
        out.append(
            f"| {kind} | {int(counts[kind])} | "
            + " | ".join(f"{table.loc[kind, c]:.3f}" for c in cols)
            + " |"
        )
    out.append(f"| **all** | {int(counts.sum())} | " + " | ".join(f"**{total[c]:.3f}**" for c in cols) + " |")
    return out + [""]


@app.command("evaluate")
def evaluate_command(
    releases: Annotated[Path, typer.Argument(help="JSONL written by `convert`.")],
    questions: Annotated[Path, typer.Argument(help="JSONL written by `questions`.")],
    db: Annotated[str, typer.Option(help="LanceDB folder for the releases (ingested if needed).")],
    out: Annotated[Path | None, typer.Option(help="Write the markdown section here.")] = None,
    k: Annotated[int, typer.Option(help="Gold release among the top k.")] = 3,
    every: Annotated[int, typer.Option(help="Only every n-th question (a quicker, fixed sample).")] = 1,
) -> None:
    """Ingest the releases and report how often the gold release is among the top k."""
    import time

    t0 = time.perf_counter()
    frame, note = evaluate(releases, questions, db, k=k, every=every)
    lines = render(
        frame,
        {
            "releases": releases,
            "questions": f"{questions} (every {every}th)",
            "ingest": note,
            "wall time": f"{time.perf_counter() - t0:.0f} s",
        },
        k,
    )
    if out is not None:
        out.write_text("\n".join(lines), encoding="utf-8")
        frame.to_csv(out.with_suffix(".csv"), index=False)
    typer.echo("\n".join(lines))


if __name__ == "__main__":
    app()
