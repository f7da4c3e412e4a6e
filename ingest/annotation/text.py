"""``annotate_text``: the rule annotation of one text, in process (no Ray, no index): typed intervals.

The same steps as the ingest pipeline's annotate stage (docs/design.md, "Ingest"): stage 1 (publication time
from the argument, else a dateline), sentence chunking with the embedder's tokenizer, stage 2 (time
expressions found by :mod:`diachron.temporal.tagger` and resolved against the publication time; anaphoric
ones, "two years later", against the text's previous mention, :mod:`diachron.temporal.anaphora`), each
interval with its kind (:func:`diachron.ingest.annotation.spans.classify`), the expression as written
and its character offsets in the input text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from diachron.schemas.time import Interval, to_utc
from diachron.temporal.tagger import FiscalCalendar, TaggerConfig

__all__ = ["AnnotatedChunk", "TextInterval", "annotate_text"]


@dataclass(frozen=True)
class TextInterval:
    """One time expression of a chunk.

    Attributes:
        interval: half-open UTC interval of the expression itself.
        kind: ``event`` | ``state`` | ``state_start`` | ``state_end`` | ``mention``.
        expression: the expression as written.
        span: ``(start, end)`` character offsets in the *input text* (not the chunk).
        relation: the relation word before it ("since", "until", …) or ``None``.
        reading: the interval with the relation applied ("since 2020": ``[2020-01-01, +inf)``).
    """

    interval: Interval
    kind: str
    expression: str
    span: tuple[int, int]
    relation: str | None = None
    reading: Interval | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.interval.to_dict(),
            "kind": self.kind,
            "expression": self.expression,
            "span": list(self.span),
            "relation": self.relation,
            "reading": (self.reading or self.interval).to_dict(),
        }


@dataclass(frozen=True)
class AnnotatedChunk:
    """A chunk of the input: its text, character span ``[start, end)`` in the input, and its intervals."""

    seq: int
    text: str
    span: tuple[int, int]
    intervals: list[TextInterval] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "text": self.text,
            "span": list(self.span),
            "intervals": [i.to_dict() for i in self.intervals],
        }


def annotate_text(
    text: str,
    *,
    published_at: datetime | None,
    timezone: str = "UTC",
    fiscal_calendar: FiscalCalendar | str | None = None,
    max_tokens: int | None = None,
) -> list[AnnotatedChunk]:
    """Chunk ``text`` and annotate each chunk's time expressions against its publication time.

    Example::

        >>> from datetime import datetime, UTC
        >>> from diachron import annotate_text
        >>> day = datetime(2015, 2, 22, tzinfo=UTC)
        >>> [c] = annotate_text("Talks were put off until Monday.", published_at=day)
        >>> [(str(i.interval), i.expression, i.span, i.relation) for i in c.intervals]
        [('[2015-02-23T00:00:00Z, 2015-02-24T00:00:00Z)', 'Monday', (25, 31), 'until')]

    Args:
        text: the document text.
        published_at: the document's publication time (aware; naive = UTC); ``None``: read a dateline
            from the text, else relative expressions ("last Monday") stay unresolved.
        timezone: IANA zone in which local dates and clock times of the text are read.
        fiscal_calendar: a :class:`~diachron.temporal.tagger.FiscalCalendar` or its words / ``"2:end"``.
        max_tokens: chunk size in tokens (default: the embedder's maximum input length, 256).

    Returns:
        The chunks in order, each with its intervals (half-open UTC) in text order: one entry per distinct
        interval and kind, "now" in a dated text read as its publication day — the steps of the ingest
        pipeline (:func:`~diachron.ingest.annotation.document.annotate_document`).

    Raises:
        ValueError: an unknown time zone or an unreadable fiscal calendar.
    """
    from diachron.ingest.annotation.document import annotate_document, build_chunker
    from diachron.ingest.annotation.rules import RuleAnnotator

    config = TaggerConfig.from_options(timezone, fiscal_calendar)
    published = to_utc(published_at) if published_at is not None else None
    annotated = annotate_document(
        text,
        doc_id="text",
        title="",
        published_at=published,
        annotator=RuleAnnotator(tagger=config),
        chunker=build_chunker(None, max_tokens),
    )
    return [
        AnnotatedChunk(chunk.seq, chunk.text, chunk.span, _intervals(chunk.span[0], note))
        for chunk, note in zip(annotated.chunks, annotated.notes, strict=True)
    ]


def _intervals(base: int, note: Any) -> list[TextInterval]:
    """A chunk's stage-2 mentions as :class:`TextInterval`, spans shifted by the chunk's offset ``base``."""
    return [
        TextInterval(m.interval, kind, m.text, (base + m.span[0], base + m.span[1]), m.relation, m.reading)
        for m, kind in zip(note.mentions, note.kinds, strict=True)
    ]
