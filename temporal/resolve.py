"""diachron's resolution on top of the grammar: tense, relation words, the direction of year-less dates.

* :func:`tense_at` — the tense of the clause around an expression ("said Friday" is past, "will meet
  Friday" future, a bare "Friday" has none), read from auxiliaries, common past forms and time words.
  Year-less dates and bare weekdays resolve in its direction: past → the latest occurrence on or before
  the reference day, future or none → the next one (Duckling's reading).
* :func:`relation_before` — the relation word written just before an expression ("since", "until",
  "by", …) and :func:`apply_relation`, the open or bounded interval it makes (half-open UTC):

  ===================================  ===================================================
  before / prior to / earlier than     ``[-inf, X.start)``
  until / till / through / up to       ``[-inf, X.end)``  (X included)
  by                                   past tense: ``[-inf, X.end)``; otherwise a deadline
                                       ``[reference, X.start)`` when X is still ahead
  after / later than                   ``[X.end, +inf)``; a clock time: ``[X.start, +inf)``
  since / from / starting / as of      ``[X.start, +inf)``
  ===================================  ===================================================
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Literal

from diachron.schemas.time import Granularity, Interval
from diachron.temporal._patterns import sentence_ends

__all__ = ["Tense", "apply_relation", "relation_before", "tense_at"]

Tense = Literal["past", "future", "none"]

_I = re.IGNORECASE
_FUTURE = re.compile(
    r"\b(?:will|would|shall|won't|going\s+to|gonna|is\s+due|are\s+due|due\s+to|plans?\s+to|planned|"
    r"scheduled|expected|expects?|set\s+to|upcoming|intends?\s+to|aims?\s+to|next)\b|(?<=\w)'ll\b",
    _I,
)
# the irregular past forms of English verbs (a closed class), and words that place a clause in the past
_IRREGULAR = (
    "was|were|had|did|said|told|met|went|came|made|took|gave|held|began|became|left|fell|rose|won|"
    "lost|sold|bought|paid|saw|ran|got|found|thought|brought|wrote|spoke|broke|chose|drove|grew|knew|"
    "sent|spent|stood|built|felt|kept|led|meant|struck|fought|hit|shut|quit|sank|swore|threw|wore|"
    "ate|awoke|bore|beat|bent|bit|bled|blew|bound|bred|burst|caught|clung|crept|dealt|dug|drew|drank|"
    "fed|fled|flew|flung|forbade|forgave|forgot|froze|hid|hung|heard|laid|lay|lent|lit|mistook|overcame|"
    "overtook|overthrew|rang|rode|sang|sat|shook|shone|shot|slept|slid|sought|sped|spun|sprang|stole|"
    "stuck|stung|strove|swept|swam|swung|taught|tore|undertook|understood|upheld|withdrew|withheld|"
    "withstood|woke|wound|"
    "ago|earlier|last|yesterday|previously|formerly|once"
)
# a perfect ("has risen", "have been", "had shown") places the event before the clause's time
_PERFECT = r"(?:has|have|had)\s+(?:\w+ly\s+)?(?:been|\w+(?:en|wn|ne|un|ung|ought|aught|ed))"
# a participle after "be" is passive ("will be released", "is expected"): the auxiliary gives the tense
# verbs whose past form is their bare form ("cut", "put", "set"): past unless a modal, "to" or "do" makes
# them bare ("will cut", "to set", "did not cut")
_INVARIANT = "cut|put|set|let|cost|hurt|spread|split|burst|cast|bet|bid|broadcast|forecast|upset|thrust"
# a participle or bare form after an auxiliary ("will be released", "is set for", "to cut") is no cue:
# the auxiliary gives the tense
_AUX = (
    "be",
    "been",
    "being",
    "is",
    "are",
    "am",
    "to",
    "will",
    "would",
    "shall",
    "should",
    "can",
    "could",
    "may",
    "might",
    "must",
    "do",
    "does",
    "did",
    "not",
)
_PAST = re.compile(
    "".join(rf"(?<!\b{a}\s)" for a in _AUX)
    + rf"\b(?:{_PERFECT}|{_IRREGULAR}|{_INVARIANT}|(?!(?:need|speed|seed|indeed|"
    r"hundred|red|bed|feed|breed|shed|proceed|exceed|succeed|planned|scheduled|expected|united|limited|"
    r"related|based|interested|concerned|detailed|advanced|supposed|used)\b)[a-z]{2,}ed)\b",
    _I,
)
# the right-hand context stops at a word opening another clause ("hit a record on Monday and is expected")
_NEXT_CLAUSE = re.compile(
    r"\b(?:and|but|while|whereas|although|though|because|which|who|whom|whose|that)\b", _I
)

_RELATION = re.compile(
    r"\b(?P<word>sometime\s+before|sometimes\s+before|no\s+later\s+than|prior\s+to|earlier\s+than|later\s+than|"
    r"up\s+until|up\s+to|before|until|till|through|thru|by|after|since|from|starting(?:\s+(?:in|from|on))?|"
    r"beginning(?:\s+(?:in|on))?|as\s+of|between)\s+(?:the\s+)?$",
    _I,
)
_BEFORE = {"before", "prior to", "earlier than", "sometime before", "sometimes before"}
_UNTIL = {"until", "till", "through", "thru", "up to", "up until", "no later than"}
_SINCE = {"since", "from", "as of"}
_FINE = {Granularity.INSTANT, Granularity.HOUR}


def tense_at(text: str, span: tuple[int, int], *, window: int = 120) -> Tense:
    """The tense of the clause holding ``text[span[0]:span[1]]``: the cue nearest the expression wins.

    Only the sentence (:func:`diachron.temporal._patterns.sentence_ends`: "Feb. 28" ends none), at most
    ``window`` characters each side, is read, so the cost does not grow with the text; on the right it
    stops at a word opening another clause ("and", "but", "which", …) unless no cue is found before it.
    Cues: future auxiliaries and plans; irregular past forms, "-ed" forms and perfects ("has risen"); a
    participle after "be" ("will be held") is passive and no cue.
    """
    start, end = span
    cut = sentence_ends(text, max(0, start - window), start)
    left = text[cut[-1][1] if cut else max(0, start - window) : start]
    stop = sentence_ends(text, end, min(len(text), end + window))
    right = text[end : stop[0][0] if stop else end + window]
    clause = _NEXT_CLAUSE.search(right)
    tense = _nearest_cue(left, right[: clause.start()] if clause else right)
    if tense is None and clause:  # "he and the others were released": the words after it are still his
        tense = _nearest_cue(left, right)
    return tense or "none"


def _nearest_cue(left: str, right: str) -> Tense | None:
    best: tuple[int, Tense] | None = None
    for pattern, tense in ((_FUTURE, "future"), (_PAST, "past")):
        for m in pattern.finditer(left):
            distance = len(left) - m.end()
            if best is None or distance < best[0]:
                best = (distance, tense)
        for m in pattern.finditer(right):
            if best is None or m.start() < best[0]:
                best = (m.start(), tense)
    return None if best is None else best[1]


def relation_before(text: str, start: int) -> tuple[str, int] | None:
    """The relation word ending just before ``start`` (lower case, single-spaced) and where it begins."""
    m = _RELATION.search(text[max(0, start - 40) : start])
    if m is None:
        return None
    return " ".join(m["word"].lower().split()), start - (len(text[max(0, start - 40) : start]) - m.start())


def apply_relation(
    word: str | None, interval: Interval, *, reference: datetime | None = None, tense: Tense = "none"
) -> Interval:
    """The interval a relation word makes of ``interval`` (table in the module docstring); no word: itself."""
    if word is None or word == "between" or interval.is_open:
        return interval
    g = interval.granularity
    if word in _BEFORE:
        return Interval(None, interval.start, g)
    if word in _UNTIL:
        return Interval(None, interval.end, g)
    if word == "by":
        if tense != "past" and reference is not None and reference < interval.start:  # type: ignore[operator]
            return Interval(reference, interval.start, g)
        return Interval(None, interval.end, g)
    if word in ("after", "later than"):
        return Interval(interval.start if g in _FINE else interval.end, None, g)
    if word in _SINCE or word.startswith(("starting", "beginning")):
        return Interval(interval.start, None, g)
    return interval
