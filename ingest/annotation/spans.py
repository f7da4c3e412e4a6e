"""Validity spans: what kind of time each mention is, and the span its fact holds in the document's timeline.

A date in a text is not always the time of the fact it dates. "He became a member of the SPD on 6 June
1995" says a state *began* then and holds afterwards; "he left the club in 2001" says a state *ended*.
Stage 2 therefore gives every chunk interval a **kind** (docs/design.md, "Event time"):

- ``event``: the fact happened within the interval ("in 1996 he won …").
- ``state``: the fact holds over the interval, written as a span ("from 1965 to 1975", "between …").
- ``state_start``: a state holds from here ("became", "joined", "was appointed", "since", "from 1995 on").
- ``state_end``: a state ends here ("until", "left", "resigned", "ended in").
- ``mention``: a date named in passing ("the 2002 election", a prior close).

:func:`classify` reads the kind from the mention and the words just before and after it (the relation
words of the clause). :func:`document_timeline` then works over one document's chunks in order:

1. **Opening and closing.** A ``state_start`` at ``[a, b)`` opens a span ``[a, c)`` where ``c`` is the
   start of the next change in the document's own timeline (the next dated ``state_start`` or ``state``
   after ``b``; the next appointment, the next club, the next version), else, for a document with a
   publication time, ends with its publication day (``inferred:to-publication``: a text cannot attest a
   state past its own date), else stays open (``end = None``). A state "to present" ("2019–present") is
   never closed by a later change. A page's *lead* (its first section: a summary of the whole page,
   "formed in 1990 … currently led by …") is no step of the timeline its sections narrate: a state in
   the lead is closed only by a change in the lead.
   A ``state_end`` at ``[a, b)`` closes a span ``[c, b)`` where ``c`` is the latest dated change (a
   ``state_start`` or ``state``) before ``a``, the span it closes (a dated event in between, "he won the
   cup in 2009", does not say when the state began); with no change before it, the document's first dated
   point (``inferred:timeline-start``: the state held as far back as the document's timeline reaches),
   else the open past. The derived span is added beside the literal one (the literal date stays:
   it is the evidence), with ``provenance`` ``inferred:next-change``, ``inferred:to-publication``,
   ``inferred:open``, ``inferred:previous-change``, ``inferred:timeline-start`` or ``inferred:open-past``;
   literal intervals have ``provenance = None``.
2. **Carrying.** A chunk's dated facts hold from its first date until the document's timeline moves on:
   ``[earliest start, next dated point at or after its latest end)``, kind ``state``, provenance
   ``inferred:timeline`` (nothing is carried when nothing later is dated: a single-chunk document gets
   no carried span). Narrative text (a biography section, a ship's history) states when things began
   far more often than when they ended.
3. **Sections.** A chunk with its own dates also carries its section's span (hull of the section's
   dated spans, kind ``inherited``, provenance ``inherited:section``) unless one of its own spans is that
   span (a chunk that is its whole section narrating 1881, 1882, 1886 … holds between its dates too):
   the section narrates one period, and the chunk's facts belong to it. A page's lead summarizes the
   whole page: its section span is the hull of the whole document's spans, left open to the future when
   the lead is in the present tense and the document has no publication time ("Ipsen is a French
   company … David Loew, CEO": the page describes its subject as it is when written, after its last
   date). Ranking weighs these spans low (:mod:`diachron.retrieval.tiers`).
4. **Inheritance.** A chunk without its own intervals inherits the hull of its section's dated spans
   (a section starts at a heading line; a heading's own dates, "Early life (1920–1938)", count), else —
   for a document without a publication time — the document's extent (hull of all dated spans), else its
   publication day: ``time_source`` ``inherited:section`` / ``inherited:document`` / ``published``,
   interval kind ``inherited``. Nothing is invented where nothing is known.
5. **Documents without headings** (a speech, a news story) have no sections: steps 2 and 3 apply only to
   documents with markdown headings — a speech that names 1812 and 1963 in passing does not narrate that
   span — and step 1 looks only at the chunk's own dated changes (a speech turns from the tariff to the
   navy; its next date is rarely the same subject's next change): a state end with none before it in the
   chunk derives nothing. **Publication.** In a document with a publication time every derived or
   inherited span ends with its publication day (a text cannot attest a state past its own date); spans
   as written are kept, but an open end ("since 1925" read as ``[1925, None)``) ends with the publication
   day too, and one that starts after it (a plan: "after the 1st of January" in a December 1927 address)
   keeps only its first day (provenance ``inferred:future``).

All intervals are half-open UTC ``[start, end)``; a ``None`` side is open.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from diachron.schemas.time import Granularity, Interval, period

__all__ = [
    "KINDS",
    "ChunkTime",
    "Span",
    "classify",
    "document_timeline",
    "has_headings",
    "present_tense",
    "section_starts",
    "sections_by_position",
    "spans_of",
]

KINDS = ("event", "state", "state_start", "state_end", "mention", "inherited")

_START_WORDS = (
    "since",
    "became",
    "become",
    "becomes",
    "becoming",
    "joined",
    "joins",
    "joining",
    "appointed",
    "elected",
    "re-elected",
    "reelected",
    "named",
    "assumed",
    "succeeded",
    "began",
    "begun",
    "begins",
    "started",
    "starting",
    "founded",
    "established",
    "formed",
    "moved",
    "moving",
    "relocated",
    "married",
    "marrying",
    "signed",
    "signing",
    "hired",
    "promoted",
    "transferred",
    "inaugurated",
    "sworn",
    "entered",
    "opened",
    "launched",
    "acquired",
    "bought",
    "purchased",
    "took over",
    "took office",
    "taking office",
    "returned",
    "chosen",
    "selected",
    "installed",
    "commissioned",
    "enrolled",
    "employed",
    "recruited",
    "nominated",
    "as of",
    "effective",
    "beginning",
    "onwards",
    "onward",
    # a change of what something is, which then holds: "was transformed into Vologda Governorate in 1796",
    # "renamed Ussuriysk in 1957", "assigned to the 3rd Flotilla", "took command of U-66"
    "transformed",
    "renamed",
    "reorganized",
    "reorganised",
    "converted",
    "merged",
    "designated",
    "crowned",
    "re-established",
    "reestablished",
    "restored",
    "assigned",
    "posted",
    "took command",
    "given command",
)
_END_WORDS = (
    "until",
    "till",
    "left",
    "leaves",
    "leaving",
    "resigned",
    "resigning",
    "retired",
    "retiring",
    "ended",
    "ending",
    "ends",
    "stepped down",
    "dismissed",
    "replaced",
    "removed",
    "divorced",
    "died",
    "death",
    "closed",
    "dissolved",
    "defeated",
    "lost",
    "sold",
    "ceased",
    "quit",
    "released",
    "departed",
    "expired",
    "demolished",
    "disbanded",
    "abolished",
    "up to",
    "succeeded by",
    "ousted",
    "deposed",
    "fired",
    "sacked",
    "terminated",
    "broke up",
    "relegated",
    "graduated",
    "graduating",
)
_RANGE_WORDS = ("between", "from")
_EVENT_PREPS = frozenset(
    {
        "in",
        "on",
        "at",
        "by",
        "during",
        "of",
        "circa",
        "c.",
        "around",
        "about",
        "early",
        "late",
        "mid",
        "ca.",
        "throughout",
        "within",
    }
)
# a clause ends at punctuation (not a decimal point: "$57.59", "6.1%"), a clause-opening conjunction, "and"
_CLAUSE_BREAK = re.compile(
    r"(?<!\d)\.|\.(?!\d)|[;:!?()\[\]]|,\s+(?:and|but|while|when|where|which|who)\b|\band\b"
)
_WORD = re.compile(r"[a-z][a-z.\-]*")
_FIGURE = re.compile(r"[$€£¥%]|\d\s*(?:percent|per cent)\b")
# a comparison's point of reference in the clause before a date ("compared with $57.59 at the close of
# October 31, 2005", "up from 4.1% in 2008", "higher than in 1990"): the date is the base the fact is
# measured against, named in passing, not the time of the fact
_REFERENCE = re.compile(
    r"\b(?:compared\s+(?:with|to)|in\s+comparison\s+(?:with|to)|versus|vs\.|relative\s+to|"
    r"(?:up|down)\s+from)\b|\bthan\s+(?:(?:in|on|at|during)\s+)?$"
)


def _phrase_re(words: Sequence[str]) -> re.Pattern[str]:
    alternatives = sorted(words, key=len, reverse=True)
    return re.compile(
        r"(?<![a-z])(?:" + "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in alternatives) + r")(?![a-z])"
    )


_START_RE = _phrase_re(_START_WORDS)
_END_RE = _phrase_re(_END_WORDS)
_TO_PRESENT = re.compile(r"[-–—]\s*(?:present|now|today)$")
# a parenthesized date right after a name and before its verb ("X ( 1136 – 11 July 1174 ) was", "Y (1922–1991)
# is"): the subject's lifespan or existence, written to identify it (it bounds every fact of the page and says
# nothing about which held when)
_IDENTIFYING = re.compile(r"\(\s*$")
_COPULA_AFTER = re.compile(r"^\s*\)\s*(?:was|is|were|are|has been)\b")
_ONWARD_AFTER = re.compile(
    r"^\s*(?:on|onwards?|and\s+(?:after|later|beyond)|forward|to\s+(?:the\s+)?present)\b"
)
_RANGE_AFTER = re.compile(r"^\s*(?:to|until|till|through|and|-|–|—)\s*(?:\(|\d|[a-z]+\s+\d)", re.I)


@dataclass(frozen=True, slots=True)
class Span:
    """One chunk interval with its kind and provenance.

    Attributes:
        interval: half-open UTC ``[start, end)``; ``None`` sides are open.
        kind: one of :data:`KINDS`.
        text: the surface text that gave it (``None`` for derived spans without their own words).
        provenance: ``None`` for an interval as written; ``inferred:…`` / ``inherited:…`` for derived bounds.
    """

    interval: Interval
    kind: str = "event"
    text: str | None = None
    provenance: str | None = None


@dataclass(frozen=True, slots=True)
class ChunkTime:
    """A chunk's time after the timeline pass: its spans, ``time_source`` and ``time_status``."""

    spans: list[Span]
    time_source: str
    time_status: str


def _before(text: str, start: int) -> str:
    """The clause before a mention (back to the last clause break, at most 80 characters), lower case."""
    head = text[max(0, start - 80) : start].lower()
    breaks = list(_CLAUSE_BREAK.finditer(head))
    return head[breaks[-1].end() :] if breaks else head


def _after(text: str, end: int) -> str:
    """The clause after a mention (up to the next clause break, at most 80 characters), lower case."""
    tail = text[end : end + 80].lower()
    stop = _CLAUSE_BREAK.search(tail[1:])
    return tail[: stop.start() + 1] if stop else tail


def classify(text: str, span: tuple[int, int], *, is_range: bool = False) -> str:
    """The kind of the mention at ``text[span[0]:span[1]]`` (one of :data:`KINDS` except ``inherited``).

    Rules, first match wins: a year "to present" ("2019–present") is a ``state_start``; a date in
    parentheses between a name and its verb ("Audie Murphy ( 20 June 1925 – 28 May 1971 ) was …": a
    lifespan, written to identify the subject) a ``mention``; an explicit range (``is_range``, or "from X
    to Y" / "between X and Y") is a ``state``; an end word in the clause before it ("until", "left",
    "resigned") a ``state_end``; a start word before it ("since", "became", "joined", "was appointed") or
    "on/onwards" after it a ``state_start``; a bare date used as a modifier ("the 2002 election") or a
    comparison's base ("compared with $57.59 at the close of October 31, 2005", "up from … in 2008", "than
    in 1990") a ``mention``; a figure stated at a date (a price, a percentage: "shares closed April 2000 at
    $124.06") an ``event``; else an ``event``.
    The relation word nearest before the date decides; failing that, the first one after it in the same
    clause ("On 1 May 2006, he was appointed …").
    """
    mention = text[span[0] : span[1]].lower()
    if _TO_PRESENT.search(mention):
        return "state_start"  # "2019–present": a state from 2019 on
    if _IDENTIFYING.search(text[max(0, span[0] - 2) : span[0]]) and _COPULA_AFTER.match(
        text[span[1] : span[1] + 12]
    ):
        return "mention"  # "Audie Murphy ( 20 June 1925 – 28 May 1971 ) was …": a lifespan names its subject
    if (
        is_range
        or re.search(r"\b(?:to|until|till|through|and)\b|[-–—]", mention[1:])
        and re.match(r"^(?:from|between)\b", mention)
    ):
        return "state"
    before = _before(text, span[0])
    after = text[span[1] : span[1] + 30].lower()
    words = _WORD.findall(before)
    last = words[-1] if words else ""
    if last in _RANGE_WORDS and _RANGE_AFTER.match(after):
        return "state"
    if last in ("the", "a", "an") or before.rstrip().endswith("'s"):
        return "mention"  # a date used as a modifier: "the 2002 election", "the 1989 Revolution"
    if _REFERENCE.search(before):
        return "mention"  # a comparison's base: "compared with $57.59 at the close of October 31, 2005"
    clause = _after(text, span[1])
    if _FIGURE.search(before) or _FIGURE.search(clause):
        return "event"  # a figure at a date ("shares closed April 2000 at $124.06", "won 52% in 2007")
    for part in (before, clause):  # the relation word before the date wins, then the one after it
        ends = [m.start() for m in _END_RE.finditer(part)]
        starts = [m.start() for m in _START_RE.finditer(part)]
        if part is before:
            ends, starts = [-e for e in ends], [-s for s in starts]  # nearest to the date first
        if ends and (not starts or min(ends) < min(starts)):
            return "state_end"
        if starts:
            return "state_start"
        if part is before and (_ONWARD_AFTER.match(after) or last == "from"):
            return "state_start"
    return "event"


def section_starts(chunk_texts: Sequence[str], heading_of: Sequence[str | None] | None = None) -> list[int]:
    """Section number of each chunk: a new section starts at a chunk whose ``heading_of`` value changes.

    ``heading_of[i]`` is the heading that chunk ``i`` falls under (``None`` = none); without it, a chunk
    starting with a markdown heading line (``# …``) starts a new section.
    """
    out, section, previous = [], 0, None
    for i, text in enumerate(chunk_texts):
        heading = (
            heading_of[i]
            if heading_of is not None
            else (text.lstrip().splitlines()[0] if text.lstrip().startswith("#") else previous)
        )
        if i and heading != previous:
            section += 1
        out.append(section)
        previous = heading
    return out


_HEADING = re.compile(r"^[ \t]*#{1,6}[ \t]+\S", re.M)
_HEADING_LINE = re.compile(r"^[ \t]*#{1,6}[ \t]+.*$", re.M)


def sections_by_position(text: str, chunk_spans: Sequence[tuple[int, int]]) -> list[int]:
    """Section number of each chunk: how many markdown heading lines (``# …``) start before its end.

    A chunk whose text begins with (or contains) a heading belongs to the section that heading opens.
    ``chunk_spans`` are the chunks' ``[start, end)`` character offsets in ``text``.
    """
    starts = [m.start() for m in _HEADING.finditer(text)]
    return [sum(1 for h in starts if h < end) for _, end in chunk_spans]


def _changes(spans: Sequence[Span]) -> list[datetime]:
    """Sorted starts of the dated changes in a document: ``state_start`` and ``state`` intervals."""
    return sorted(
        {
            s.interval.start
            for s in spans
            if s.kind in ("state_start", "state") and s.interval.start is not None
        }
    )


def _points(spans: Sequence[Span]) -> list[datetime]:
    """Sorted starts of every dated literal interval in a document (changes and events)."""
    return sorted({s.interval.start for s in spans if s.kind != "mention" and s.interval.start is not None})


def _open(span: Span, changes: list[datetime], published_end: datetime | None = None) -> Span:
    end = span.interval.end
    # "2019–present" says the state still holds: no later change in the text closes it
    later = (
        []
        if span.text and _TO_PRESENT.search(span.text.lower())
        else [c for c in changes if end is not None and c >= end]
    )
    if later:
        return Span(
            Interval(span.interval.start, later[0], span.interval.granularity),
            "state",
            span.text,
            "inferred:next-change",
        )
    if published_end is not None and end is not None and published_end > end:
        # a text cannot attest a state past its own publication: the span ends with the publication day
        return Span(
            Interval(span.interval.start, published_end, span.interval.granularity),
            "state",
            span.text,
            "inferred:to-publication",
        )
    return Span(
        Interval(span.interval.start, None, span.interval.granularity), "state", span.text, "inferred:open"
    )


def _close(
    span: Span, changes: list[datetime], points: list[datetime], *, open_past: bool = True
) -> Span | None:
    start = span.interval.start
    earlier = [c for c in changes if start is not None and c < start]
    if earlier:
        return Span(
            Interval(earlier[-1], span.interval.end, span.interval.granularity),
            "state",
            span.text,
            "inferred:previous-change",
        )
    first = [p for p in points if start is not None and p < start][:1]
    if first:  # nothing opened it: the state held as far back as the document's own timeline reaches
        return Span(
            Interval(first[0], span.interval.end, span.interval.granularity),
            "state",
            span.text,
            "inferred:timeline-start",
        )
    if not open_past:
        return None
    return Span(
        Interval(None, span.interval.end, span.interval.granularity), "state", span.text, "inferred:open-past"
    )


def _carry(spans: Sequence[Span], points: list[datetime]) -> Span | None:
    """The chunk's facts hold from its first dated statement until the document's timeline moves on.

    ``[earliest start, next dated point at or after the latest end)``, kind ``state``, provenance
    ``inferred:timeline``; ``None`` for a chunk with no dated fact or when nothing later is dated.
    """
    dated = [s for s in spans if s.kind != "mention" and s.interval.start is not None]
    if not dated:
        return None
    first = min(s.interval.start for s in dated)  # type: ignore[type-var]
    last_end = max((s.interval.end for s in dated if s.interval.end is not None), default=None)
    later = [p for p in points if last_end is not None and p >= last_end]
    if not later:  # nothing later is dated: the timeline never moves on, so nothing is carried
        return None
    grain = max((s.interval.granularity for s in dated), key=lambda g: g.rank)
    return Span(Interval(first, later[0], grain), "state", None, "inferred:timeline")


def _hull(spans: Sequence[Span]) -> Interval | None:
    """Hull of the spans' intervals (open sides ignored; ``None`` if no bounded side on either end)."""
    starts = [s.interval.start for s in spans if s.interval.start is not None]
    ends = [s.interval.end for s in spans if s.interval.end is not None]
    if not starts or not ends or min(starts) >= max(ends):
        return None
    grains = [s.interval.granularity for s in spans]
    return Interval(min(starts), max(ends), max(grains, key=lambda g: g.rank) if grains else Granularity.DAY)


def document_timeline(
    chunks: Sequence[Sequence[Span]],
    *,
    sections: Sequence[int] | None = None,
    headings: dict[int, Sequence[Span]] | None = None,
    published_at: datetime | None = None,
    carry: bool = True,
    widen: bool = True,
    headed: bool = True,
    lead: int | None = None,
    lead_present: bool = False,
) -> list[ChunkTime]:
    """Open and close state spans in one document's timeline, then let undated chunks inherit.

    Args:
        chunks: each chunk's literal spans, in document order.
        sections: section number of each chunk (see :func:`section_starts`); default one section.
        headings: dated spans of section headings by section number ("Early life (1920–1938)").
        published_at: the document's publication time: derived and inherited spans end with its day (a
            text cannot attest a state past its own date), and undated chunks without a section span
            get its day (the document's extent only for a document without a publication time).
        headed: the document has heading-delimited sections (:func:`has_headings`); without headings
            there are no section spans (a speech's "section" would be the hull of every date it names).
        lead: section number of the page's lead (its summary before the first section heading), whose
            states close only within the lead; ``None`` = no lead.
        lead_present: the lead is written in the present tense (:func:`present_tense`: "X is a party",
            not "X was a soldier"): in a document without a publication time its section span stays open
            to the future (the page describes its subject as it is when written, after its last date).

    Returns:
        One :class:`ChunkTime` per chunk: literal spans plus derived ones (``time_source`` ``event``), or an
        inherited span (``inherited:section`` / ``inherited:document``), or the publication day
        (``published``), else no span (``unknown``).
    """
    sections = list(sections) if sections is not None else [0] * len(chunks)
    carry = carry and headed  # a speech naming 1812 in passing does not narrate 1812 onwards
    literal = [s for spans in chunks for s in spans]
    published_end = period(published_at, Granularity.DAY).end if published_at is not None else None
    own = _derived(chunks, sections, literal, published_end, headed=headed, lead=lead, carry=carry)
    by_section: dict[int, list[Span]] = {}
    for n, spans in zip(sections, own, strict=True):
        by_section.setdefault(n, []).extend(spans)
    for n, spans in (headings or {}).items():
        by_section.setdefault(n, []).extend(spans)
    extent = _hull(literal)
    page = _hull([x for v in own for x in v])
    if page is not None and lead_present and published_at is None:
        page = Interval(page.start, None, page.granularity)
    out = []
    for n, spans in zip(sections, own, strict=True):
        # the lead summarizes the whole page: its section is the page
        section = (page if n == lead else _hull(by_section.get(n, []))) if headed else None
        if section is not None and published_end is not None:
            section = _capped(section, published_end)
        spans = [c for c in (_cap(s, published_end) for s in spans) if c is not None]
        out.append(_chunk_time(spans, section, extent, published_at, widen=widen))
    return out


def _derived(
    chunks: Sequence[Sequence[Span]],
    sections: list[int],
    literal: list[Span],
    published_end: datetime | None,
    *,
    headed: bool,
    lead: int | None,
    carry: bool,
) -> list[list[Span]]:
    """Each chunk's literal spans plus the state spans opened, closed and carried from them."""
    changes, points = _changes(literal), _points(literal)
    lead_changes = _changes(
        [s for n, spans in zip(sections, chunks, strict=True) if n == lead for s in spans]
    )
    own: list[list[Span]] = []
    for n, spans in zip(sections, chunks, strict=True):
        # without headings a document is not one narrative (a speech turns from the tariff to the navy): a
        # chunk's state opens and closes only against its own dated changes, and a state end without one
        # derives nothing; a page's lead summarizes the whole page ("formed in 1990 … currently led by"),
        # it is not a step of the timeline its sections narrate: its states close only within the lead
        local = (lead_changes if n == lead else changes) if headed else _changes(spans)
        derived = [_open(s, local, published_end) for s in spans if s.kind == "state_start"]
        derived += [
            c
            for c in (
                _close(s, local, points if headed else [], open_past=headed)
                for s in spans
                if s.kind == "state_end"
            )
            if c is not None
        ]
        carried = _carry(spans, points) if carry else None
        derived += [carried] if carried is not None else []
        own.append([*spans, *derived])
    return own


def _chunk_time(
    spans: list[Span],
    section: Interval | None,
    extent: Interval | None,
    published_at: datetime | None,
    *,
    widen: bool,
) -> ChunkTime:
    """A chunk's time: its own spans (and its section's), else its section's, else the document's extent
    (undated documents), else the publication day, else unknown."""
    if spans:
        wider = (
            [Span(section, "inherited", None, "inherited:section")]
            if widen and section is not None and all(s.interval != section for s in spans)
            else []
        )
        return ChunkTime([*spans, *wider], "event", "known")
    if section is not None:
        return ChunkTime(
            [Span(section, "inherited", None, "inherited:section")], "inherited:section", "known"
        )
    if extent is not None and published_at is None:
        return ChunkTime(
            [Span(extent, "inherited", None, "inherited:document")], "inherited:document", "known"
        )
    if published_at is not None:
        return ChunkTime(
            [Span(period(published_at, Granularity.DAY), "event", None, "published")], "published", "known"
        )
    return ChunkTime([], "unknown", "unknown")


def _capped(interval: Interval, end: datetime) -> Interval | None:
    """``interval`` ended no later than ``end`` (``None`` when it starts at or after it)."""
    if interval.start is not None and interval.start >= end:
        return None
    if interval.end is None or interval.end > end:
        return Interval(interval.start, end, interval.granularity)
    return interval


def _cap(span: Span, published_end: datetime | None) -> Span | None:
    """A derived or inherited span ends with the publication day; spans as written are kept as they are,
    except an open end ("after 1927" in a 1927 address: the text attests nothing past its own day), which
    then ends with the publication day (provenance ``inferred:to-publication``)."""
    if published_end is None or span.provenance == "published":
        return span
    if span.provenance is None:
        start, grain = span.interval.start, span.interval.granularity
        if span.interval.end is not None:
            return span
        if start is not None and start >= published_end:
            # a plan or forecast ("after the 1st of January" in a December address): the text attests its
            # first day, not a state for ever after
            return replace(
                span,
                interval=period(start, grain if grain.rank >= Granularity.DAY.rank else Granularity.DAY),
                provenance="inferred:future",
            )
        return replace(
            span, interval=Interval(start, published_end, grain), provenance="inferred:to-publication"
        )
    capped = _capped(span.interval, published_end)
    return replace(span, interval=capped) if capped is not None else None


_TENSE = re.compile(r"\b(is|are|was|were)\b")


def present_tense(lead: str) -> bool:
    """True when the first copula of a lead's opening (heading lines skipped) is present tense ("Ipsen is a
    French company") rather than past ("Audie Murphy … was an American soldier"): encyclopedic leads
    describe a subject that still exists in the present tense, one that ended in the past tense."""
    body = _HEADING_LINE.sub("", lead)[:400]
    m = _TENSE.search(body)
    return m is not None and m.group(1) in ("is", "are")


def has_headings(text: str) -> bool:
    """True when ``text`` has a markdown heading line (``# …``): its chunks fall in real sections."""
    return _HEADING.search(text) is not None


def spans_of(
    intervals: Sequence[Interval], texts: Sequence[str | None] = (), kinds: Sequence[str] = ()
) -> list[Span]:
    """A stage-2 annotation's literal spans (missing texts are ``None``, missing kinds ``event``).

    Raises:
        ValueError: a kind outside :data:`KINDS`.
    """
    out = []
    for n, interval in enumerate(intervals):
        kind = kinds[n] if n < len(kinds) else "event"
        if kind not in KINDS:
            raise ValueError(f"unknown interval kind {kind!r}: one of {', '.join(KINDS)}")
        out.append(Span(interval, kind, texts[n] if n < len(texts) else None))
    return out


def with_kind(span: Span, kind: str) -> Span:
    """``span`` with another kind (validated against :data:`KINDS`)."""
    if kind not in KINDS:
        raise ValueError(f"unknown interval kind {kind!r}: one of {', '.join(KINDS)}")
    return replace(span, kind=kind)
