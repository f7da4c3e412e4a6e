"""Event-anchored time: "after the 1929 crash", "since the merger", "at the time of the outage".

A question may date itself by an event instead of a calendar date. The event's time is not in the
question, so it is looked up in the corpus first (a search for the event, no time filter), read from the
evidence (the dated expression nearest to the event's words in the best hit that *states* the event, not
one that only refers to it with "after the merger"), and then becomes the window of the real search:

=========================================  ====================================
after / following / in the wake of E       ``[E.end, +inf)``
since E                                    ``[E.start, +inf)``
before / prior to / ahead of E             ``[-inf, E.start)``
until / till E                             ``[-inf, E.end)``
at the time of / during / around E         ``E``
=========================================  ====================================

The intent's ``assumptions`` name the anchor, its interval and the document it came from; when two
hits state the event at different times with similar similarity, ``needs_clarification`` is set and
both are listed (the first is used). No evidence for the event: the parser's own reading stays, with a
note; when the event's name holds a time ("the 1929 crash", read by the parser as the year 1929 with the
relation applied) that time is the anchor, else ``needs_clarification`` is set. The search is for the event
as written, its date included ("the 1929 crash"). Nothing here builds a filter from user text: the anchor
is a typed interval.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from diachron.retrieval.intent import NON_EVENT_WORDS, core_query
from diachron.schemas.evidence import Evidence
from diachron.schemas.intent import Relation, TemporalIntent
from diachron.schemas.time import Interval, period
from diachron.temporal.tagger import extract_mentions

__all__ = ["EventPhrase", "anchor_event", "event_query", "find_event_phrase"]

log = logging.getLogger(__name__)

_I = re.IGNORECASE
_EVENT = re.compile(
    r"\b(?P<rel>after|before|since|until|till|following|prior\s+to|ahead\s+of|in\s+the\s+wake\s+of|"
    r"at\s+the\s+time\s+of|around\s+the\s+time\s+of|during)\s+"
    r"(?P<event>(?:the|our|their|its|his|her)\s+(?:[\w'’-]+\s+){0,6}?[\w'’-]+)"
    r"(?=\s*(?:[?.,;:!)]|$)|\s+(?:and|or|but|what|how|who|which|when|did|does|do|was|were|is|are|has|have|had)\b)",
    _I,
)
_AFTER = {"after", "following", "in the wake of"}
_BEFORE = {"before", "prior to", "ahead of"}
_RELATIVE_REFERENCE = re.compile(r"\b(?:after|before|since|until|following|prior\s+to)\s+(?:the\s+)?$", _I)
MAX_DISTANCE = 80  # characters between the event's word and the date that states it
SIMILAR = 0.05  # cosine: two hits this close are equally plausible anchors


@dataclass(frozen=True)
class EventPhrase:
    """The relation word, the event as written ("the 1929 crash") and its keywords, with the span of both."""

    relation: str
    event: str
    keywords: tuple[str, ...]
    span: tuple[int, int]


def find_event_phrase(question: str, *, now: datetime) -> EventPhrase | None:
    """The first "relation + the <event>" of ``question`` whose event is not itself a time expression."""
    for m in _EVENT.finditer(question):
        event = m["event"]
        offset = m.start("event")
        masked = list(event)
        for mention in extract_mentions(event, reference=now):
            masked[mention.span[0] : mention.span[1]] = " " * (mention.span[1] - mention.span[0])
        words = [
            w for w in re.findall(r"[A-Za-z][\w'’-]*", "".join(masked)) if w.lower() not in NON_EVENT_WORDS
        ]
        if words:
            return EventPhrase(
                " ".join(m["rel"].lower().split()),
                event,
                tuple(w.lower() for w in words),
                (m.start(), offset + len(event)),
            )
    return None


@dataclass(frozen=True)
class _Anchor:
    interval: Interval
    evidence: Evidence
    distance: int
    expression: str


def _stated(e: Evidence, phrase: EventPhrase) -> _Anchor | None:
    """The dated expression nearest an event keyword in ``e`` where the text states the event."""
    text = e.text
    hits = [
        m
        for w in phrase.keywords
        for m in re.finditer(rf"\b{re.escape(w)}\w*", text, _I)
        if not _RELATIVE_REFERENCE.search(text[max(0, m.start() - 20) : m.start()])
    ]
    if not hits:
        return None
    years = {int(y) for y in re.findall(r"\b(1[0-9]\d\d|20\d\d)\b", phrase.event)}
    best: _Anchor | None = None
    for mention in extract_mentions(text, reference=e.published_at):
        iv = mention.interval
        if iv.is_open or (years and iv.start.year not in years):  # type: ignore[union-attr]
            continue
        distance = min(max(mention.span[0] - h.end(), h.start() - mention.span[1], 0) for h in hits)
        if distance <= MAX_DISTANCE and (best is None or distance < best.distance):
            best = _Anchor(iv, e, distance, mention.text)
    if best is None and e.published_at is not None and not years:
        best = _Anchor(period(e.published_at, "day"), e, MAX_DISTANCE + 1, "its publication day")
    return best


def _window(relation: str, event: Interval) -> tuple[Interval, Relation]:
    g = event.granularity
    if relation in _AFTER:
        return Interval(event.end, None, g), Relation.AFTER
    if relation == "since":
        return Interval(event.start, None, g), Relation.AFTER
    if relation in _BEFORE:
        return Interval(None, event.start, g), Relation.BEFORE
    if relation in ("until", "till"):
        return Interval(None, event.end, g), Relation.BEFORE
    return event, Relation.AT


def anchor_event(
    question: str, intent: TemporalIntent, search: Callable[[str], Sequence[Evidence]]
) -> TemporalIntent:
    """``intent`` with the window an event phrase of ``question`` makes, its time found by ``search``.

    Args:
        question: the question as asked.
        intent: the parser's intent for it (its clock is used for the phrase's own time words).
        search: ``event text -> evidence`` (a timeless search of the same index, best first).

    Returns:
        ``intent`` unchanged when the question names no event; else the anchored intent (table in the
        module docstring), its assumptions naming the anchor and the evidence, ``needs_clarification``
        when two plausible anchors disagree.
    """
    phrase = find_event_phrase(question, now=intent.reference_time)
    if phrase is None:
        return intent
    hits = sorted(search(phrase.event), key=lambda e: -e.score)
    anchors = [a for a in (_stated(e, phrase) for e in hits) if a is not None]
    if not anchors and _written_time(question, intent, phrase):  # "since the 1929 crash": 1929 as written
        note = (
            f"event '{phrase.event}' not dated by any evidence: the time written in it is the anchor "
            f"({', '.join(str(i) for i in intent.intervals)})"
        )
        return replace(intent, assumptions=(*[a for a in intent.assumptions if phrase.event not in a], note))
    if not anchors:
        note = f"event '{phrase.event}' not dated by any evidence: no window from it"
        return replace(intent, assumptions=(*intent.assumptions, note), needs_clarification=True)
    chosen, rivals = _choose(hits, anchors)
    window, relation = _window(phrase.relation, chosen.interval)
    notes = _notes(phrase, chosen, rivals)
    log.debug("event anchor: %s", notes[0])
    start, end = phrase.span
    kept = [iv for iv in intent.intervals if not _inside(question, iv, phrase, intent)]
    intervals = (*kept, window) if kept and intent.relation is relation else (window,)
    return replace(
        intent,
        core_query=core_query(question, [(start, end)]) or intent.core_query,
        intervals=intervals,
        relation=relation,
        granularity=chosen.interval.granularity,
        needs_clarification=bool(rivals),
        confidence=min(intent.confidence, 0.8),
        assumptions=(*[a for a in intent.assumptions if phrase.event not in a], *notes),
    )


def _choose(hits: Sequence[Evidence], anchors: Sequence[_Anchor]) -> tuple[_Anchor, list[_Anchor]]:
    """The anchor to use (among those of evidence scored near the best: nearest its keyword first) and its
    rivals (as near, as well scored, at a time that does not overlap it)."""
    top = max(e.score for e in hits)
    plausible = [a for a in anchors if a.evidence.score >= top - 2 * SIMILAR]
    plausible.sort(key=lambda a: (a.distance > MAX_DISTANCE, a.distance, -a.evidence.score))
    chosen = plausible[0] if plausible else anchors[0]
    rivals = [
        a
        for a in plausible[1:]
        if a.distance <= MAX_DISTANCE
        and not a.interval.overlaps(chosen.interval)
        and abs(a.evidence.score - chosen.evidence.score) <= SIMILAR
    ]
    return chosen, rivals


def _notes(phrase: EventPhrase, chosen: _Anchor, rivals: Sequence[_Anchor]) -> list[str]:
    """The assumptions naming the anchor and the evidence (and the first rival, if any)."""
    notes = [
        f"'{phrase.relation} {phrase.event}' anchored on '{chosen.expression}' {chosen.interval} in "
        f"{chosen.evidence.doc_id} ({chosen.evidence.title!r}), found by a search for '{phrase.event}'"
    ]
    for rival in rivals[:1]:
        notes.append(
            f"also plausible: '{rival.expression}' {rival.interval} in {rival.evidence.doc_id} "
            f"({rival.evidence.title!r})"
        )
    return notes


def _written_time(question: str, intent: TemporalIntent, phrase: EventPhrase) -> bool:
    """True when the parser dated the event by a time written in its name ("the 1929 crash" -> 1929)."""
    return any(_inside(question, iv, phrase, intent) for iv in intent.intervals)


def _inside(question: str, interval: Interval, phrase: EventPhrase, intent: TemporalIntent) -> bool:
    """True for a parser interval read from inside the event phrase ("1929" of "the 1929 crash")."""
    start, end = phrase.span
    for mention in extract_mentions(question[start:end], reference=intent.reference_time):
        if mention.interval.overlaps(interval) or (mention.reading and mention.reading.overlaps(interval)):
            return True
    return False


def event_query(event: str, intent: TemporalIntent) -> TemporalIntent:
    """The timeless intent of the search for an event ("the merger"), at the question's clock."""
    return TemporalIntent(
        event,
        (),
        Relation.UNKNOWN,
        intent.reference_time,
        confidence=0.5,
        assumptions=("search for an anchoring event",),
    )
