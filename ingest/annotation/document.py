"""Annotate one document: stage 1, sentence chunking, stage 2, validity spans — the one implementation.

:func:`annotate_document` is used by the pipeline's annotate stage
(:class:`~diachron.ingest.stages.AnnotateStage`), by ``diachron annotate`` and by
:func:`~diachron.ingest.annotation.text.annotate_text`, so the three cannot drift (docs/design.md, "Ingest"):

1. stage 1 reads the first and last :data:`SEGMENT_CHARS` characters (publication time, abstract);
2. the text is cut into sentence-aligned chunks (:class:`~diachron.ingest.chunking.SentenceChunker`);
3. stage 2 annotates each chunk (one entry per distinct interval and kind; "now" in a dated text is its
   publication day — both done by the annotator);
4. each chunk gets its validity spans from the whole document
   (:func:`~diachron.ingest.annotation.spans.document_timeline`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from diachron.ingest.annotation.base import ChunkAnnotation, DocumentAnnotation, DocumentContext
from diachron.ingest.chunking import ChunkText
from diachron.schemas.time import Granularity, Interval, period

__all__ = [
    "SEGMENT_CHARS",
    "AnnotatedDocument",
    "annotate_document",
    "build_chunker",
    "chunk_time",
    "document_times",
    "hull",
]

#: characters of a document's start and end that stage 1 reads (TA-RAG §3.1: "first and last segments")
SEGMENT_CHARS = 1500


@dataclass(frozen=True, slots=True)
class AnnotatedDocument:
    """One annotated document; ``chunks``, ``notes`` and ``times`` are parallel lists (one entry per chunk).

    Attributes:
        stage1: publication time (UTC or ``None``), its source, the abstract.
        chunks: the chunks in order, each with its character span ``[start, end)`` in the text.
        notes: stage-2 annotation of each chunk (literal intervals, half-open UTC).
        times: validity spans of each chunk (:class:`~diachron.ingest.annotation.spans.ChunkTime`).
    """

    stage1: DocumentAnnotation
    chunks: list[ChunkText]
    notes: list[ChunkAnnotation]
    times: list[Any]


def build_chunker(embedder: str | None = None, max_tokens: int | None = None) -> Any:
    """The sentence chunker sized in ``embedder``'s tokens (``max_tokens`` ``None`` = its input limit)."""
    from diachron.ingest.chunking import SentenceChunker
    from diachron.ingest.embedding import resolve_embedder

    spec = resolve_embedder(embedder)
    return SentenceChunker(spec.load_tokenizer(), max_tokens=max_tokens or spec.max_tokens)


def annotate_document(
    text: str,
    *,
    doc_id: str,
    title: str,
    published_at: datetime | None,
    annotator: Any,
    chunker: Any,
) -> AnnotatedDocument:
    """Stage 1, chunking, stage 2 and validity spans of one document.

    Args:
        text: the document text.
        doc_id, title: shown to stage 1.
        published_at: metadata publication time (aware UTC) or ``None`` (stage 1 looks for a dateline).
        annotator: an :class:`~diachron.ingest.annotation.base.Annotator` (rules or LLM backend).
        chunker: a :class:`~diachron.ingest.chunking.SentenceChunker` (see :func:`build_chunker`).

    Raises:
        whatever the annotator or chunker raises for this text (the annotate stage quarantines it).
    """
    head, tail = text[:SEGMENT_CHARS], text[-SEGMENT_CHARS:]
    stage1 = annotator.annotate_document(DocumentContext(doc_id, title, head, tail, published_at))
    chunks = chunker.chunk(text)
    notes = annotator.annotate_chunks([c.text for c in chunks], doc=stage1)
    times = document_times(text, [c.span for c in chunks], notes, stage1.published_at)
    return AnnotatedDocument(stage1, chunks, notes, times)


def chunk_time(intervals: list[Interval], published_at: datetime | None) -> tuple[list[Interval], str, str]:
    """Time of one chunk on its own: its intervals, else its document's publication day, else unknown.

    Returns ``(intervals, time_source, time_status)`` (docs/design.md, "Event time"). Chunks of a whole
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
    """``(min start, max end)``; an open side anywhere makes the hull open there; empty: ``(None, None)``."""
    if not intervals:
        return None, None
    starts = [i.start for i in intervals]
    ends = [i.end for i in intervals]
    return (None if None in starts else min(starts)), (None if None in ends else max(ends))  # type: ignore[type-var]
