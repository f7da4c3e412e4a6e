"""The rule-based two-stage annotator (CPU, deterministic): the ``rules`` backend.

Stage 1: publication time from metadata, else the first explicit day in the document's first line (a
dateline, at most 200 characters), else in its last line; the abstract is the lead: the first one or two
sentences, at most ``abstract_chars`` characters. Stage 2: temporal expressions found by
:mod:`diachron.temporal.tagger`, resolved against the document's publication time (never the processing
clock) — anaphoric ones ("two years later", "the following season") against the narrative's previous
mention (:mod:`diachron.temporal.anaphora`) —, each with its kind
(:func:`diachron.ingest.annotation.spans.classify`: event, state, state start or end, mention), one entry
per distinct interval and kind; "now" in a dated text is its publication day (documents are dated to the
day: not the first second of it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from diachron.ingest.annotation.base import ChunkAnnotation, DocumentAnnotation, DocumentContext
from diachron.ingest.annotation.spans import classify
from diachron.schemas.time import Granularity, period
from diachron.temporal.anaphora import NarrativeClock
from diachron.temporal.tagger import TaggerConfig, extract_mentions, names_the_present

__all__ = ["RuleAnnotator"]

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")
_DATELINE_GRAINS = {Granularity.DAY, Granularity.HOUR, Granularity.INSTANT}
_DATELINE_CHARS = 200


@dataclass(slots=True)
class RuleAnnotator:
    """Rule-based stage 1 + stage 2.

    Args:
        tagger: configuration of the expression tagger (time zone, fiscal calendar, date order).
        abstract_chars: maximum abstract length in characters.
    """

    tagger: TaggerConfig = field(default_factory=TaggerConfig)
    abstract_chars: int = 300
    name: str = "rules"

    def annotate_document(self, doc: DocumentContext) -> DocumentAnnotation:
        abstract = self._abstract(doc.first_segment)
        if doc.published_at is not None:
            return DocumentAnnotation(doc.published_at, "metadata", abstract, self.name)
        for segment in (
            doc.first_segment.lstrip().split("\n", 1)[0],
            doc.last_segment.rstrip().rsplit("\n", 1)[-1],
        ):
            if (
                len(segment) > _DATELINE_CHARS
            ):  # a dateline is a short line, not a sentence ("born 24 April 1971")
                continue
            days = [
                m
                for m in extract_mentions(segment, reference=None, config=self.tagger)
                if m.interval.granularity in _DATELINE_GRAINS and m.interval.start is not None
            ]
            if days:
                return DocumentAnnotation(days[0].interval.start, "rules", abstract, self.name)
        return DocumentAnnotation(None, "unknown", abstract, self.name)

    def annotate_chunks(self, texts: list[str], *, doc: DocumentAnnotation) -> list[ChunkAnnotation]:
        out = []
        clock = NarrativeClock(doc.published_at, timezone=self.tagger.timezone)  # "two years later", in order
        for text in texts:
            distinct = {}  # one entry per interval and kind: "October 2008" written twice is one event time
            for m in clock.read(text, extract_mentions(text, reference=doc.published_at, config=self.tagger)):
                kind = classify(text, m.span, is_range=m.is_range)
                if (
                    m.interval.granularity is Granularity.INSTANT
                    and names_the_present(m)
                    and m.interval.start is not None
                ):
                    # "we are now at peace" in a dated address: the document's day, not its first second
                    m = replace(m, interval=period(m.interval.start, Granularity.DAY))
                distinct.setdefault((m.interval.start, m.interval.end, kind), (m, kind))
            found = list(distinct.values())
            out.append(
                ChunkAnnotation(
                    [m.interval for m, _ in found],
                    [m.text for m, _ in found],
                    self.name,
                    kinds=[k for _, k in found],
                    mentions=[m for m, _ in found],
                )
            )
        return out

    def _abstract(self, text: str) -> str:
        sentences = _SENTENCE_END.split(" ".join(text.split()))
        abstract = " ".join(sentences[:2])
        if len(abstract) > self.abstract_chars:
            abstract = abstract[: self.abstract_chars - 1].rsplit(" ", 1)[0] + "…"
        return abstract
