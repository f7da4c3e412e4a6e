"""The annotator interface: stage 1 (per document) and stage 2 (per chunk), backend-independent.

TA-RAG §3.1: stage 1 reads a document's first and last segments and estimates its publication time and a
short abstract; stage 2 reads each chunk with that context and lists the events' time intervals
(half-open UTC). Backends: ``rules`` (CPU, deterministic) and ``vllm`` (LLM, GPU workers).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from diachron.schemas.time import Interval

__all__ = ["Annotator", "ChunkAnnotation", "DocumentAnnotation", "DocumentContext"]


@dataclass(frozen=True, slots=True)
class DocumentContext:
    """What stage 1 sees of a document: title, first and last segments, metadata publication time."""

    doc_id: str
    title: str
    first_segment: str
    last_segment: str
    published_at: datetime | None


@dataclass(frozen=True, slots=True)
class DocumentAnnotation:
    """Stage-1 result. ``published_at_source``: ``metadata`` | ``llm`` | ``rules`` | ``unknown``."""

    published_at: datetime | None
    published_at_source: str
    abstract: str
    annotator: str


@dataclass(frozen=True, slots=True)
class ChunkAnnotation:
    """Stage-2 result: intervals (half-open UTC), the surface text and the kind of each.

    ``kinds`` is parallel to ``intervals`` (``event`` | ``state`` | ``state_start`` | ``state_end`` |
    ``mention``, see :mod:`diachron.ingest.annotation.spans`); empty means all ``event``. ``mentions`` (rules
    backend only, else empty): the tagger's :class:`~diachron.temporal.tagger.TimeMention` behind each
    interval (expression, character span in the chunk, relation word, reading).
    """

    intervals: list[Interval]
    texts: list[str | None] = field(default_factory=list)
    annotator: str = "rules"
    flags: list[str] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    mentions: list[Any] = field(default_factory=list)


class Annotator(Protocol):
    """A two-stage time annotator. ``name`` is recorded on every row it produces."""

    name: str

    def annotate_document(self, doc: DocumentContext) -> DocumentAnnotation: ...

    def annotate_chunks(self, texts: list[str], *, doc: DocumentAnnotation) -> list[ChunkAnnotation]: ...
