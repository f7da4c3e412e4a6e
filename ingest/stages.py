"""Ray Data stages of the ingest pipeline: annotate+chunk, embed, validate.

Each stage is a callable class for ``Dataset.map_batches`` (heavy state built once per actor) taking and
returning ``pyarrow.Table`` batches. Required input columns are listed on each class (``REQUIRES``).
Per-row failures become quarantine entries in the ``_quarantine`` column (JSON), never crashes.

With a :class:`~diachron.ingest.staging.Staging` area, the annotate stage writes the document rows of its
batch and :func:`stage_block` (the last step) writes the chunk and quarantine rows, as Lance fragments,
on the worker; only fragment metadata and counts travel back to the driver.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pyarrow as pa
from diachron.ingest.annotation.base import DocumentAnnotation, DocumentContext
from diachron.schemas.ids import chunk_id as make_chunk_id
from diachron.schemas.ids import short_hash
from diachron.schemas.records import INTERVAL_TYPE, intervals_to_arrow
from diachron.schemas.time import Granularity, Interval, add_months, format_instant, period

__all__ = [
    "AnnotateStage",
    "EmbedStage",
    "StageConfig",
    "ValidateStage",
    "CHUNK_STAGE_SCHEMA",
    "check_stage_config",
    "quarantine_id",
    "stage_block",
]

log = logging.getLogger(__name__)

TS = pa.timestamp("us", tz="UTC")
CHUNK_STAGE_SCHEMA = pa.schema(
    [
        ("chunk_id", pa.string()),
        ("doc_id", pa.string()),
        ("series_id", pa.string()),
        ("seq", pa.int64()),
        ("text", pa.string()),
        ("token_count", pa.int64()),
        ("published_at", TS),
        ("intervals", pa.list_(INTERVAL_TYPE)),
        ("event_start", TS),
        ("event_end", TS),
        ("time_source", pa.string()),
        ("time_status", pa.string()),
        ("valid_from", TS),
        ("valid_until", TS),
        ("annotator", pa.string()),
        ("published_at_source", pa.string()),
        ("abstract", pa.string()),
        ("_quarantine", pa.string()),
        ("_staged", pa.string()),
    ]
)
_SEGMENT_CHARS = 1500


@dataclass(frozen=True, slots=True)
class StageConfig:
    """Configuration shared by the stages (picklable; sent to every Ray actor).

    Attributes:
        embedder: model name or path (see :func:`diachron.ingest.embedding.resolve_embedder`).
        max_tokens: chunk size in tokens; ``None`` = the embedder's maximum input length.
        annotator: ``rules`` or ``vllm``.
        annotator_options: backend options (e.g. ``{"model": PATH}`` for vllm).
        timezone: IANA zone in which local dates in text are read.
        fiscal_calendar: fiscal calendar in words or short form (``"2:end"``), ``None`` = calendar year.
        date_order: ``auto`` | ``DMY`` | ``MDY``.
        embed_threads: torch threads of the embedding actor (``None`` = all cores of its node; Ray would
            otherwise pin an actor with ``num_cpus=1`` to one thread, 0.7x the speed here).
    """

    embedder: str | None = None
    max_tokens: int | None = None
    annotator: str = "rules"
    annotator_options: dict[str, Any] = field(default_factory=dict)
    timezone: str = "UTC"
    fiscal_calendar: str | None = None
    date_order: str = "auto"
    embed_batch_size: int = 32
    embed_threads: int | None = None


def check_stage_config(config: StageConfig) -> Any:
    """Refuse a bad annotator name, time zone or fiscal calendar before any work starts; returns the parsed
    :class:`~diachron.temporal.tagger.FiscalCalendar`.

    Raises:
        ConfigError: unknown backend name, unknown IANA time zone or bad fiscal calendar (one line each).
    """
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    from diachron.ingest.errors import ConfigError
    from diachron.temporal.tagger import FiscalCalendar

    if config.annotator not in ("rules", "vllm"):
        raise ConfigError(f"unknown annotator {config.annotator!r}: use 'rules' or 'vllm'")
    try:
        ZoneInfo(config.timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(
            f"unknown time zone {config.timezone!r} for --timezone: use an IANA name such as "
            "'Europe/Berlin' or 'UTC'"
        ) from None
    try:
        return FiscalCalendar.parse(config.fiscal_calendar) if config.fiscal_calendar else FiscalCalendar()
    except ValueError as exc:
        raise ConfigError(
            f"bad fiscal calendar {config.fiscal_calendar!r} for --fiscal-calendar: {exc} (expected "
            "START_MONTH:end|start, e.g. '2:end')"
        ) from None


def build_annotator(config: StageConfig) -> Any:
    """The configured annotator backend.

    Raises:
        ConfigError: unknown backend name, time zone or bad fiscal calendar (:func:`check_stage_config`).
    """
    from diachron.ingest.annotation.rules import RuleAnnotator
    from diachron.temporal.tagger import TaggerConfig

    fiscal = check_stage_config(config)
    tagger = TaggerConfig(timezone=config.timezone, fiscal=fiscal, date_order=config.date_order)  # type: ignore[arg-type]
    if config.annotator == "rules":
        return RuleAnnotator(tagger=tagger)
    from diachron.ingest.annotation.llm import (
        build_llm_annotator,
    )  # "vllm" (check_stage_config refused others)

    return build_llm_annotator(config.annotator_options, fallback=RuleAnnotator(tagger=tagger))


def chunk_time(intervals: list[Interval], published_at: datetime | None) -> tuple[list[Interval], str, str]:
    """Time of one chunk on its own: its intervals, else its document's publication day, else unknown.

    Returns ``(intervals, time_source, time_status)`` (DESIGN.md, "Event time"). Chunks of a whole
    document get their validity spans from :func:`document_times` instead.
    """
    if intervals:
        return intervals, "event", "known"
    if published_at is not None:
        return [period(published_at, Granularity.DAY)], "published", "known"
    return [], "unknown", "unknown"


def document_times(
    text: str, chunk_spans: list[tuple[int, int]], notes: list[Any], published_at: datetime | None
) -> list[Any]:
    """Validity spans of a document's chunks (:func:`diachron.ingest.annotation.spans.document_timeline`).

    ``chunk_spans`` are the chunks' character offsets in ``text`` (sections start at markdown headings);
    ``notes`` their stage-2 :class:`~diachron.ingest.annotation.base.ChunkAnnotation`. Returns one
    :class:`~diachron.ingest.annotation.spans.ChunkTime` per chunk.
    """
    from diachron.ingest.annotation.spans import (
        document_timeline,
        has_headings,
        present_tense,
        sections_by_position,
        spans_of,
    )

    literal = [spans_of(n.intervals, n.texts, n.kinds) for n in notes]
    sections = sections_by_position(text, chunk_spans)
    lead = sections[0] if len(set(sections)) > 1 else None  # the page's summary before its first section
    present = lead is not None and present_tense(text[chunk_spans[0][0] : chunk_spans[0][1]])
    return document_timeline(
        literal,
        sections=sections,
        published_at=published_at,
        headed=has_headings(text),
        lead=lead,
        lead_present=present,
    )


def hull(intervals: list[Interval]) -> tuple[datetime | None, datetime | None]:
    """``(min start, max end)``; an open side anywhere makes the hull open there; empty -> ``(None, None)``."""
    if not intervals:
        return None, None
    starts = [i.start for i in intervals]
    ends = [i.end for i in intervals]
    return (None if None in starts else min(starts)), (None if None in ends else max(ends))  # type: ignore[type-var]


def _span_rows(spans: list[Any]) -> list[dict[str, Any]]:
    return intervals_to_arrow(
        [s.interval for s in spans],
        [s.text for s in spans],
        kinds=[s.kind for s in spans],
        provenance=[s.provenance for s in spans],
    )


class AnnotateStage:
    """Documents -> chunks with stage-1 and stage-2 time annotation.

    REQUIRES: doc_id, series_id, title, text, published_at, valid_from, valid_until.
    Returns rows of :data:`CHUNK_STAGE_SCHEMA` (no vector yet).
    """

    REQUIRES = ("doc_id", "series_id", "title", "text", "published_at", "valid_from", "valid_until")

    def __init__(
        self,
        config: StageConfig,
        staging: Any = None,
        run_id: str = "",
        placeholder_time: datetime | None = None,
    ) -> None:
        from diachron.ingest.chunking import SentenceChunker
        from diachron.ingest.embedding import resolve_embedder

        spec = resolve_embedder(config.embedder)
        self.chunker = SentenceChunker(spec.load_tokenizer(), max_tokens=config.max_tokens or spec.max_tokens)
        self.annotator = build_annotator(config)
        self.staging, self.run_id, self.placeholder = staging, run_id, placeholder_time

    def __call__(self, batch: pa.Table) -> pa.Table:
        rows: list[dict[str, Any]] = []
        documents: list[dict[str, Any]] = []
        for doc in batch.to_pylist():
            try:
                chunk_rows = self._document(doc)
            except Exception as exc:  # one bad document must not stop the batch: quarantine it
                log.warning("annotation failed for %s: %s", doc["doc_id"], exc)
                rows.append(_failed_row(doc, f"annotation failed: {type(exc).__name__}: {exc}"))
                continue  # one outcome per record: quarantined, never also written
            rows.extend(chunk_rows)
            if self.staging is not None:
                documents.append(self._document_row(doc, chunk_rows))
        if self.staging is None:
            return pa.Table.from_pylist(rows, schema=CHUNK_STAGE_SCHEMA)
        from diachron.schemas.records import DocumentRecord, arrow_schema

        staged = self.staging.write(
            "documents", pa.Table.from_pylist(documents, schema=arrow_schema(DocumentRecord))
        )
        if not rows:  # every document had no text to chunk: a marker row still carries the counts
            rows.append(
                {
                    "chunk_id": None,
                    "doc_id": "",
                    "series_id": "",
                    "seq": -2,
                    "text": "",
                    "token_count": 0,
                    "time_source": "unknown",
                    "time_status": "unknown",
                    "annotator": "none",
                }
            )
        rows[0]["_staged"] = json.dumps({"documents": staged, "documents_staged": len(documents)})
        return pa.Table.from_pylist(rows, schema=CHUNK_STAGE_SCHEMA)

    def _document_row(self, doc: dict[str, Any], chunk_rows: list[dict[str, Any]]) -> dict[str, Any]:
        """The ``documents`` row of an annotated document (stage 1 read from its chunks)."""
        first = chunk_rows[0] if chunk_rows else {}
        published = first.get("published_at", doc["published_at"])
        source = first.get("published_at_source") or ("metadata" if doc["published_at"] else "unknown")
        return {
            "doc_id": doc["doc_id"],
            "series_id": doc["series_id"],
            "title": doc["title"],
            "text": doc["text"],
            "content_sha256": doc["content_sha256"],
            "published_at": published,
            "published_at_source": source,
            "source_timezone": doc.get("source_timezone"),
            "abstract": first.get("abstract") or "",
            "version": doc.get("version"),
            "supersedes": doc.get("supersedes"),
            "relation": doc.get("relation"),
            "valid_from": doc["valid_from"],
            "valid_until": doc["valid_until"],
            "source_uri": doc["source_uri"],
            "metadata_json": doc["metadata_json"],
            "annotator": first.get("annotator") or "none",
            "recorded_at": self.placeholder,
            "run_id": self.run_id,
        }

    def _document(self, doc: dict[str, Any]) -> list[dict[str, Any]]:
        text = doc["text"]
        stage1 = self.annotator.annotate_document(
            DocumentContext(
                doc["doc_id"],
                doc["title"],
                text[:_SEGMENT_CHARS],
                text[-_SEGMENT_CHARS:],
                doc["published_at"],
            )
        )
        chunks = self.chunker.chunk(text)
        notes = self.annotator.annotate_chunks([c.text for c in chunks], doc=stage1)
        times = document_times(text, [c.span for c in chunks], notes, stage1.published_at)
        return [
            self._row(doc, stage1, c.seq, c.text, c.token_count, n, t)
            for c, n, t in zip(chunks, notes, times, strict=True)
        ]

    @staticmethod
    def _row(
        doc: dict[str, Any],
        stage1: DocumentAnnotation,
        seq: int,
        text: str,
        tokens: int,
        note: Any,
        chunk_time: Any,
    ) -> dict[str, Any]:
        start, end = hull([s.interval for s in chunk_time.spans])
        return {
            "chunk_id": make_chunk_id(doc["doc_id"], seq, text),
            "doc_id": doc["doc_id"],
            "series_id": doc["series_id"],
            "seq": seq,
            "text": text,
            "token_count": tokens,
            "published_at": stage1.published_at,
            "intervals": _span_rows(chunk_time.spans),
            "event_start": start,
            "event_end": end,
            "time_source": chunk_time.time_source,
            "time_status": chunk_time.time_status,
            "valid_from": doc["valid_from"],
            "valid_until": doc["valid_until"],
            "annotator": note.annotator,
            "published_at_source": stage1.published_at_source,
            "abstract": stage1.abstract,
            "_quarantine": json.dumps([{"stage": "annotate", "reason": f} for f in note.flags])
            if note.flags
            else None,
        }


def _failed_row(doc: dict[str, Any], reason: str) -> dict[str, Any]:
    payload = {"doc_id": doc["doc_id"], "text": doc["text"][:2000]}
    return {
        "chunk_id": None,
        "doc_id": doc["doc_id"],
        "series_id": doc["series_id"],
        "seq": -1,
        "text": "",
        "token_count": 0,
        "time_source": "unknown",
        "time_status": "unknown",
        "annotator": "none",
        "_quarantine": json.dumps([{"stage": "annotate", "reason": reason, "payload": payload}]),
    }


class EmbedStage:
    """Adds ``vector`` (float32, unit norm, fixed-size list of ``dim``). REQUIRES: text."""

    REQUIRES = ("text",)

    def __init__(self, config: StageConfig) -> None:
        import os

        import torch
        from diachron.ingest.embedding import Embedder

        torch.set_num_threads(config.embed_threads or os.cpu_count() or 1)
        self.embedder = Embedder(config.embedder, batch_size=config.embed_batch_size)
        self.embedder.warm_up()
        self.node = _node_id()

    def __call__(self, batch: pa.Table) -> pa.Table:
        texts = batch.column("text").to_pylist()
        vectors = self.embedder.embed([t or " " for t in texts])
        flat = pa.array(vectors.reshape(-1), type=pa.float32())
        column = pa.FixedSizeListArray.from_arrays(flat, self.embedder.dim)
        return batch.append_column("vector", column).append_column(
            "_embed_node", pa.array([self.node] * len(texts))
        )


def _node_id() -> str:
    """The Ray node this process runs on ("" outside Ray)."""
    try:
        import ray

        return ray.get_runtime_context().get_node_id() if ray.is_initialized() else ""
    except Exception:  # noqa: BLE001 - a diagnostic only
        return ""


class ValidateStage:
    """Great Expectations checks; bad intervals leave their chunk, bad chunks are marked for quarantine.

    REQUIRES: chunk_id, doc_id, text, time_source, intervals, published_at, _quarantine.
    """

    REQUIRES = ("chunk_id", "doc_id", "text", "time_source", "intervals", "published_at", "_quarantine")

    def __init__(self, config: Any = None) -> None:
        from diachron.ingest.validation import Validator

        self.validator = Validator(config)
        self.validator.warm_up()  # import GX while the other stages load their models

    def __call__(self, batch: pa.Table) -> pa.Table:
        import pandas as pd

        rows = batch.to_pylist()
        flat = [
            (r, i, iv)
            for r, row in enumerate(rows)
            for i, iv in enumerate(row["intervals"] or [])
            if row["time_source"] == "event"
        ]
        limit = self.validator.config.max_years_after_publication
        frame = pd.DataFrame(
            {
                "start": pd.Series([iv["start"] for _, _, iv in flat], dtype="datetime64[us, UTC]"),
                "end": pd.Series([iv["end"] for _, _, iv in flat], dtype="datetime64[us, UTC]"),
                "latest_start": pd.Series(
                    [_years_after(rows[r]["published_at"], limit) for r, _, _ in flat],
                    dtype="datetime64[us, UTC]",
                ),
                "provenance": pd.Series([iv.get("provenance") for _, _, iv in flat], dtype="object"),
            }
        )
        bad_intervals = self.validator.check_intervals(frame)
        drop: dict[int, set[int]] = {}
        for pos, reasons in bad_intervals.items():
            r, i, iv = flat[pos]
            drop.setdefault(r, set()).add(i)
            _add_quarantine(
                rows[r],
                "validate_interval",
                "; ".join(reasons),
                {"chunk_id": rows[r]["chunk_id"], "interval": _json_interval(iv)},
            )
        for r, indices in drop.items():
            _retime(rows[r], [iv for i, iv in enumerate(rows[r]["intervals"]) if i not in indices])
        chunk_frame = pd.DataFrame(
            {k: [row[k] for row in rows] for k in ("chunk_id", "doc_id", "text", "time_source")}
        )
        for pos, reasons in self.validator.check_chunks(chunk_frame).items():
            rows[pos]["_rejected"] = "; ".join(reasons)
        schema = batch.schema.append(pa.field("_rejected", pa.string()))
        return pa.Table.from_pylist(
            [{**row, "_rejected": row.get("_rejected")} for row in rows], schema=schema
        )


def _years_after(instant: datetime | None, years: int) -> datetime | None:
    return None if instant is None else add_months(instant, 12 * min(years, 9998 - instant.year))


def _json_interval(iv: dict[str, Any]) -> dict[str, Any]:
    return {
        "start": format_instant(iv["start"]),
        "end": format_instant(iv["end"]),
        "granularity": iv["granularity"],
        "text": iv.get("text"),
    }


def _add_quarantine(row: dict[str, Any], stage: str, reason: str, payload: dict[str, Any]) -> None:
    entries = json.loads(row["_quarantine"]) if row.get("_quarantine") else []
    entries.append({"stage": stage, "reason": reason, "payload": payload})
    row["_quarantine"] = json.dumps(entries)


def _retime(row: dict[str, Any], kept: list[dict[str, Any]]) -> None:
    """Recompute a chunk's time after invalid intervals were removed (kept ones keep kind and provenance)."""
    intervals = [Interval(iv["start"], iv["end"], iv["granularity"]) for iv in kept]
    new, source, status = chunk_time(intervals, row["published_at"])
    if source == "event":
        row["intervals"] = [dict(iv) for iv in kept]
    else:
        row["intervals"] = intervals_to_arrow(new, provenance=["published"] * len(new))
    row["event_start"], row["event_end"] = hull(new)
    row["time_source"], row["time_status"] = source, status


def quarantine_id(stage: str, record_id: str, reason: str, payload_json: str) -> str:
    """Deterministic id of a quarantine entry: the same bad content with the same reason is one row, whichever
    run finds it (no run id in the hash), so re-runs do not quarantine it again."""
    return short_hash(stage, record_id, reason, payload_json)


def quarantine_row(
    stage: str,
    record_id: str,
    reason: str,
    payload: dict[str, Any],
    run_id: str,
    recorded_at: datetime | None,
) -> dict[str, Any]:
    """One ``quarantine`` row (payload as JSON, id from content)."""
    payload_json = json.dumps(payload, default=str, sort_keys=True)
    return {
        "quarantine_id": quarantine_id(stage, record_id, reason, payload_json),
        "run_id": run_id,
        "stage": stage,
        "record_id": record_id,
        "reason": reason,
        "payload_json": payload_json,
        "recorded_at": recorded_at,
    }


def stage_block(
    batch: pa.Table, *, staging: Any, run_id: str, embedder_id: str, dim: int, placeholder_time: datetime
) -> pa.Table:
    """Last pipeline step (a Ray task per block): write the block's chunk and quarantine rows as staged
    fragments; return one small row of fragment metadata and counts for the driver.

    Counts: ``chunks_in`` (chunks produced), ``chunks_rejected`` (failed chunk validation: quarantined, not
    written), ``documents_failed`` (annotation failed: quarantined, no document row), ``embed_nodes``.
    """
    from diachron.schemas.records import ChunkRecord, QuarantineRecord, arrow_schema

    chunks: list[dict[str, Any]] = []
    quarantine: dict[str, dict[str, Any]] = {}
    documents: list[str] = []
    counts = {"chunks_in": 0, "chunks_rejected": 0, "documents_failed": 0, "documents_staged": 0}
    nodes: set[str] = set()

    def add(stage: str, record_id: str, reason: str, payload: dict[str, Any]) -> None:
        row = quarantine_row(stage, record_id, reason, payload, run_id, placeholder_time)
        quarantine.setdefault(row["quarantine_id"], row)

    for row in batch.to_pylist():
        if row.get("_staged"):
            meta = json.loads(row["_staged"])
            documents.extend(meta["documents"])
            counts["documents_staged"] += meta["documents_staged"]
        if row.get("_embed_node"):
            nodes.add(row["_embed_node"])
        doc_id = row["doc_id"]
        for entry in json.loads(row["_quarantine"]) if row["_quarantine"] else []:
            add(
                entry["stage"],
                row["chunk_id"] or doc_id,
                entry["reason"],
                entry.get("payload") or {"chunk_id": row["chunk_id"], "doc_id": doc_id},
            )
        if row["seq"] == -1:
            counts["documents_failed"] += 1
        if row["seq"] < 0:
            continue
        counts["chunks_in"] += 1
        if row["_rejected"]:
            counts["chunks_rejected"] += 1
            add(
                "validate_chunk",
                row["chunk_id"],
                row["_rejected"],
                {"chunk_id": row["chunk_id"], "doc_id": doc_id, "text": row["text"]},
            )
            continue
        row.update(embedder=embedder_id, recorded_at=placeholder_time, run_id=run_id)
        chunks.append({k: row[k] for k in ChunkRecord.__slots__})
    chunk_table = pa.Table.from_pylist(chunks, schema=arrow_schema(ChunkRecord, dim=dim))
    if chunk_table.num_rows:
        chunk_table = chunk_table.sort_by([("event_start", "ascending")])  # time order within the fragment
    out = {
        "documents": json.dumps(documents),
        "chunks": json.dumps(staging.write("chunks", chunk_table)),
        "quarantine": json.dumps(
            staging.write(
                "quarantine",
                pa.Table.from_pylist(list(quarantine.values()), schema=arrow_schema(QuarantineRecord)),
            )
        ),
        "embed_nodes": json.dumps(sorted(nodes)),
        **counts,
    }
    return pa.Table.from_pylist([out])
