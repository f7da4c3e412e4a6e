"""Duckling's readings made fit for prose, then resolved the diachron way (used by the tagger).

Duckling (:mod:`diachron.temporal.duckling`) was built for short commands ("remind me at 3pm"); in running
text it also reads "15 to 20 days" as a clock time and "the second man" as a date. This module keeps a
reading only when it is written like a time, and then applies what is diachron's:

* **guards**: a clock reading needs a clock cue (``3pm``, ``15:30``, ``16h``, "noon", "in the morning",
  "in 2 minutes", a zone); a bare ordinal or unit ("the first", "the year") counts only as the whole
  text; Duckling's latent guesses count only as the whole text and never for bare numbers ("4a", "3 30");
* **relation words** ("since 2pm", "until Monday", "by 2:00pm") are split from the expression: the
  mention is the anchor ("2pm"), the word its ``relation``, the open interval its ``reading``
  (:func:`diachron.temporal.resolve.apply_relation`);
* **clock-range ends are exclusive**: "from 2PM to 3PM" ends at 15:00 (Duckling counts the whole last
  hour; dates keep their last day: "July 13-15" ends on 16 July 00:00);
* **year-less dates** take a year written earlier in the same sentence ("late 2008, from September to
  December"), else the direction of the tense (:func:`diachron.temporal.resolve.tense_at`): past → the
  latest occurrence on or before the reference day; otherwise the next one (Duckling's own reading).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from diachron.schemas.time import Interval, to_utc
from diachron.temporal._patterns import FOLD, sentence_ends
from diachron.temporal.duckling import DucklingMatch, duckling_parse
from diachron.temporal.resolve import Tense, apply_relation, tense_at

__all__ = ["GrammarMention", "grammar_mentions"]

_I = re.IGNORECASE
_CLOCK_CUE = re.compile(
    r"\d\s*:\s*\d|\d\s*(?:[ap]\.?\s?m\b\.?|[ap]\b|h\b|h\d)|\b[ap]\.?\s?m\b|o'?\s?clock|\b(?:noon|midnight|midday|"
    r"mid\s?day|morning|afternoon|evening|night|tonight|lunch|school|week-?end|wkend|dawn|dusk)|\b(?:hours?|"
    r"minutes?|mins?|seconds?|secs?|days?|weeks?|now|asap|half|quarter|past|ago|hence|tomorrow|today)\b|"
    r"as soon as possible|@|\d['\"]|\bat\s+(?:\d|one|two|three|four|five|six|seven|eight|nine|ten|eleven|"
    r"twelve)\b|\b(?:gmt|utc|cet|cest|ist|est|edt|pst|pdt|cst|cdt|mst|mdt|bst|jst|aest|hst|akst)\b",
    _I,
)
_BARE = re.compile(
    r"(?:the\s+)?(?:\d{1,2}(?:st|nd|rd|th)?|first|second|third|fourth|fifth|sixth|seventh|eighth|"
    r"ninth|tenth|last|year|week|month|day|weekend|quarter)",
    _I,
)
_PART_OF_NUMBER = re.compile(r"\d{1,2}\s*[-/.]\s*\d{1,2}")
_BY_END = re.compile(r"by\s+(?:the\s+)?(?:eo[mdy]|end\s+of)\b", _I)
_NUMERIC_ONLY = re.compile(r"[\d\s:./-]*[ap]?\.?", _I)
_LEADING_RELATION = re.compile(
    r"(?P<word>sometimes\s+before|sometime\s+before|no\s+later\s+than|prior\s+to|earlier\s+than|later\s+than|"
    r"up\s+until|up\s+to|before|until|untill|till|through|thru|by|after|since|from|starting(?:\s+(?:in|from|on))?|"
    r"beginning(?:\s+(?:in|on))?|as\s+of)\s+",
    _I,
)
_PREPOSITION = re.compile(r"(?:on|during|at|@|for)\s+(?=\S)|in\s+(?=(?:the\s+)?(?:\d{4}|[A-Z][a-z]+)\b)", _I)
_CLOCK_RANGE_WORD = re.compile(
    r"\d\s*(?:[ap]\.?\s?m\.?|h\d*|:\d\d)?\s*(?:-|–|to|till|until|untill|thru|through)\s*\d|"
    r"\bbetween\b.+\band\b",
    _I,
)
_RANGE_WORD = re.compile(
    r"(?:\s|\d|\w\.?)(?:-|–|—)(?:\s|\d|\w)|\s(?:to|till|until|untill|thru|through)\s|"
    r"\bbetween\b.+\band\b",
    _I,
)
_DEICTIC = re.compile(
    r"\b(?:next|last|this|coming|upcoming|past|previous|ago|hence|from\s+now|tomorrow|yesterday|"
    r"today|tonight|after\s+next|before\s+last|current|now|closest|in\s+(?:\d+|a|an|one|two|"
    r"three|four|five|six|seven|eight|nine|ten|a\s+couple))\b",
    _I,
)
_WEEKDAY_ONLY = re.compile(
    r"(?:mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)(?:day|nesday|sday|urday)?\.?", _I
)
_WEEKDAY_PART = re.compile(
    r"(?:mon|tues?|wed(?:nes)?|thu(?:rs)?|fri|sat(?:ur)?|sun)(?:day)?\.?\s+(?:morning|afternoon|evening|night)",
    _I,
)
_YEAR_WORD = re.compile(r"(?<![\d$.,])(1[0-9]\d\d|20\d\d|21\d\d)(?![\d%])")
_FORWARD_WORDS = {
    "until",
    "till",
    "untill",
    "by",
    "before",
    "from",
    "starting",
    "through",
    "thru",
    "up to",
    "up until",
    "no later than",
}


@dataclass(frozen=True)
class GrammarMention:
    """A reading kept from Duckling: anchor interval, its span, the relation word and the reading it makes."""

    interval: Interval
    span: tuple[int, int]
    is_range: bool
    relation: str | None
    reading: Interval


def _kept(m: DucklingMatch, text: str) -> bool:
    body = m.text.strip()
    whole = text.strip(" \t\n.,;:!?").lower() == body.strip(" .,;:!?").lower()
    if m.latent:
        return whole and not _NUMERIC_ONLY.fullmatch(body)
    if body.lower() == "now" and re.match(
        r"\s+that\b", text[m.span[1] : m.span[1] + 8], _I
    ):  # "now that ..."
        return False
    if (
        m.grain in ("second", "minute", "hour")
        and not _CLOCK_CUE.search(body)
        and not _BY_END.match(body)
        and not (m.is_interval and re.match(r"by\s", body, _I))
    ):  # "by March 31": [now, 31 March)
        return False
    if _PART_OF_NUMBER.fullmatch(body) and (
        re.match(r"[-/.]\d", text[m.span[1] : m.span[1] + 2])
        or re.search(r"\d[-/.]$", text[max(0, m.span[0] - 2) : m.span[0]])
    ):  # "4-6" of "4-6-0", "12/5" of "3/12/5/7": a piece of a longer number, not a date
        return False
    # a bare ordinal or unit, also after a relation word ("after the fourth child"), is no time in prose
    bare = re.sub(r"^(?:on|in|at|during|for|of|by|after|before|since|until|till|from)\s+", "", body, flags=_I)
    if _BARE.fullmatch(bare) and not whole:
        return False
    return True


_CALENDAR_WORD = re.compile(
    r"(?:january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|"
    r"mar|apr|jun|jul|aug|sept?|oct|nov|dec|monday|tuesday|wednesday|thursday|friday|saturday|sunday|mon|"
    r"tues?|wed|thu(?:rs?)?|fri|sat|sun|spring|summer|autumn|fall|winter)\.?",
    _I,
)
_WEEKDAY_WORD = re.compile(r"(?:mon|tue|wed|thu|fri|sat|sun)", _I)
# a word that makes the next one a time: a preposition, a determiner, a modifier, a number
_TIME_LEAD = re.compile(
    r"(?:\b(?:in|on|at|during|since|until|till|by|before|after|from|through|thru|of|this|last|next|every|"
    r"each|early|late|mid|coming|past|previous|the|a|an|that|same|whole|entire|and|or)|\d(?:st|nd|rd|"
    r"th)?|[-–—/])\s*$",
    _I,
)
# what follows a month or season used as a name or a verb: a pronoun, an auxiliary, a finite verb, "on"/"to"
_VERB_AFTER = re.compile(
    r"\s+(?:(?-i:I)|we|you|he|she|it|they|can|could|may|might|must|should|will|would|shall|is|are|was|were|"
    r"has|have|had|does|did|says|said|told|wrote|asked|added|on|to|into|against|toward|towards|[a-z]+ed)\b"
)
_SEASON = re.compile(r"spring|summer|autumn|fall|winter", _I)
# a season word used as a verb: after a modal, "to" or a pronoun ("will fall back", "to spring"), or
# before a particle or in a hyphenated compound ("fall back", "spring-forward")
_VERB_BEFORE = re.compile(
    r"\b(?:will|would|shall|should|can|could|may|might|must|to|we|you|they|clocks?)\s+$", _I
)
_PARTICLE_AFTER = re.compile(r"-\w|\s+(?:back|forward|ahead|off|out|up|down|apart|short|behind|asleep)\b", _I)
_NAME_AFTER = re.compile(r"\s+(?-i:[A-Z][a-z]+)\b")
_NAME_BEFORE = re.compile(r"(?-i:[A-Z][a-z]+)\s+$")


def _ordinary_word(m: DucklingMatch, piece: str) -> bool:
    """True when Duckling's one-word reading is an ordinary word of the sentence, not a time (rules by the
    word's form and neighbours, never by the string):

    * a month or weekday name written in lower case in text that capitalises ("delegates sat", "to
      march on", "sun"), unless a time word or a number stands next to it ("on sat", "march 3"); a
      season word (lower case as a rule) only when it is a verb by form ("will fall back", "spring-forward");
    * a capitalised month or season word that is part of a name or a verb phrase: no time word before
      it, and a capitalised word ("Summer Brennan", "April Ryan", "Fall Out Boy"), a pronoun, an
      auxiliary or a finite verb ("Summer said", "May I", "March on the capital") after it;
    * a capitalised word read as an abbreviation ("Boy" for the beginning of the year): only upper or
      lower case spells one.
    """
    word = m.text.strip(" ,;:")
    lead = re.match(r"(?:on|in|at|during|for)\s+", word, _I)
    begin = m.span[0] + (m.text.find(word) if word else 0) + (lead.end() if lead else 0)
    word = word[lead.end() :] if lead else word
    if not word or not re.fullmatch(r"[A-Za-z]+\.?", word):
        return False
    end = begin + len(word)
    before, after = piece[max(0, begin - 16) : begin], piece[end : end + 30]
    if word.islower() and _SEASON.fullmatch(word) and _PARTICLE_AFTER.match(after):
        return True  # "the spring-forward transition", "clocks fall back"
    if _TIME_LEAD.search(before) or re.match(r"\s*,?\s*\d", after):
        return False
    if not _CALENDAR_WORD.fullmatch(word):
        return word[0].isupper() and word[1:].islower() and not _TRIGGER.fullmatch(word)
    if word.islower() and _SEASON.fullmatch(word):  # seasons are written in lower case: a verb only by form
        return _VERB_BEFORE.search(before) is not None
    if word.islower():
        return re.search(r"[A-Z]", piece) is not None
    if _WEEKDAY_WORD.match(word):
        return False
    next_is_time = re.match(r"\s+(?:Day|Eve|\d)", after) or _CALENDAR_WORD.match(after.strip())
    if (_NAME_AFTER.match(after) or _NAME_BEFORE.search(before)) and not next_is_time:
        return True
    return _VERB_AFTER.match(after) is not None


# "Since January, 40 people have died": the number after the comma counts the next clause's noun
_TRAILING_COUNT = re.compile(r"(?P<head>.*[A-Za-z.])\s*,\s*\d{1,3}")


def _without_count(m: DucklingMatch, piece: str, reference: datetime, timezone: str) -> DucklingMatch | None:
    """``m`` without a trailing ", NN" that begins a counted phrase ("January, 40 people"): the words
    before the comma re-read alone (None when they read as nothing); ``m`` itself otherwise."""
    found = _TRAILING_COUNT.fullmatch(m.text)
    if not found or not re.match(r"\s+[a-z]", piece[m.span[1] : m.span[1] + 2]):
        return m
    head = found["head"]
    again = _reparse(head, reference, timezone)
    if again is None:
        return None
    return DucklingMatch(
        (m.span[0], m.span[0] + len(head)),
        head,
        again.interval,
        again.grain,
        False,
        again.is_interval,
        again.holiday,
    )


def _reparse(body: str, reference: datetime, timezone: str) -> DucklingMatch | None:
    for lead in ("", "in "):  # Duckling reads "May 2002" only after a word ("after May 2002", "in May 2002")
        found = duckling_parse(lead + body, reference=reference, timezone=timezone, latent=True)
        whole = sorted(
            (m for m in found if m.span[1] == len(lead) + len(body) and m.span[0] in (0, len(lead))),
            key=lambda m: m.latent,
        )
        if whole:
            return whole[0]
    return None


def _exclusive_clock_end(m: DucklingMatch) -> Interval:
    iv = m.interval
    if not (
        m.is_interval
        and iv.end is not None
        and m.grain in ("hour", "minute", "second")
        and _CLOCK_RANGE_WORD.search(m.text)
    ):
        return iv
    step = {"hour": timedelta(hours=1), "minute": timedelta(minutes=1), "second": timedelta(seconds=1)}[
        m.grain
    ]
    end = iv.end - step
    return Interval(iv.start, end, iv.granularity) if iv.start is None or iv.start < end else iv


_YEARLY = re.compile(
    r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?(?![a-z])|\b(?:spring|summer|"
    r"autumn|fall|winter)\b",
    _I,
)  # what a written year can complete (not a weekday, not "the 1st")


def _year_context(text: str, start: int) -> int | None:
    cut = sentence_ends(text, max(0, start - 100), start)
    left = text[cut[-1][1] if cut else max(0, start - 100) : start]
    years = _YEAR_WORD.findall(left)
    return int(years[-1]) if years else None


def _redirect(
    m: DucklingMatch,
    body: str,
    text: str,
    span: tuple[int, int],
    reference: datetime,
    timezone: str,
    tense: Tense | None,
) -> Interval:
    """Year-less readings: a year written before it in the sentence, else the tense's direction (read
    from the text when ``tense`` is None)."""
    iv = m.interval
    part_of_day = _WEEKDAY_PART.fullmatch(body)  # "Sunday night": a weekday's part follows the tense too
    if (m.grain in ("second", "minute", "hour") and not part_of_day) or _DEICTIC.search(body) or iv.is_open:
        return iv
    zone = ZoneInfo(timezone)
    year = _year_context(text, span[0])
    if year is not None and not _YEAR_WORD.search(body) and (m.holiday or _YEARLY.search(body)):
        jan1 = to_utc(datetime(year, 1, 1), tz=zone)
        again = _reparse(body, jan1, timezone)
        if (
            again is not None
            and again.interval.start is not None
            and again.interval.start.astimezone(zone).year == year
        ):
            return again.interval
    if iv.start is not None and iv.start > reference and (tense or tense_at(text, span)) == "past":
        back = timedelta(days=7) if _WEEKDAY_ONLY.fullmatch(body) or part_of_day else timedelta(days=365)
        again = _reparse(body, reference - back, timezone)
        if again is not None and again.interval.start is not None and again.interval.start <= reference:
            return again.interval
    return iv


def _one(
    m: DucklingMatch, text: str, offset: int, reference: datetime, timezone: str
) -> GrammarMention | None:
    start, end = m.span
    body = m.text.rstrip(",;: ")  # "announced Friday, …": Duckling keeps the comma
    end -= len(m.text) - len(body)
    relation: str | None = None
    duckling_reading: Interval | None = None
    lead = _LEADING_RELATION.match(body)
    if lead and not (m.interval.is_open or lead["word"].lower() == "by"):
        lead = None
    anchor: DucklingMatch | None = None
    if lead:
        anchor = _reparse(body[lead.end() :], reference, timezone)
        if anchor is None and not m.interval.is_open:  # "by EOM": only the whole phrase reads
            lead = None
        elif anchor is None:
            side = m.interval.start if m.interval.start is not None else m.interval.end
            anchor_iv = Interval.at(side)  # type: ignore[arg-type]
        else:
            anchor_iv = anchor.interval
    if lead:
        relation = " ".join(lead["word"].lower().split()).replace("untill", "until")
        duckling_reading = m.interval
        start += lead.end()
        body = body[lead.end() :]
        m = DucklingMatch(
            (start, end),
            body,
            anchor_iv,
            anchor.grain if anchor else m.grain,
            False,
            anchor.is_interval if anchor else False,
            m.holiday,
        )
    prep = _PREPOSITION.match(body)
    if prep and relation is None:
        start += prep.end()
        body = body[prep.end() :]
    span = (offset + start, offset + end)
    forward = relation in _FORWARD_WORDS
    direction: Tense | None = "future" if forward else "past" if relation == "since" else None
    interval = _redirect(m, body, text, span, reference, timezone, direction)  # "since X": X is behind
    interval = _exclusive_clock_end(m) if interval == m.interval else interval
    if interval.is_open and relation is None:  # "ASAP", "before 11 am" with the word unsplittable
        relation = "since" if interval.start is not None else "before"
        side = interval.start if interval.start is not None else interval.end
        reading, interval = interval, Interval.at(side)  # type: ignore[arg-type]
    elif relation == "by" and tense_at(text, span) != "past" and duckling_reading is not None:
        reading = duckling_reading
    else:
        tense: Tense = tense_at(text, span) if relation == "by" else "none"
        reading = apply_relation(relation, interval, reference=reference, tense=tense)
    is_range = m.is_interval and not interval.is_open and relation is None and bool(_RANGE_WORD.search(body))
    return GrammarMention(interval, span, is_range, relation, reading)


_UNIT = (
    r"(?!\s*(?:h\b|hrs?|hours?|min|mins|minutes?|sec|secs|seconds?|days?|weeks?|months?|years?|[ap]\.?m\b))"
)
_NOISE = re.compile(
    rf"[$€£¥]\s?\d[\d,.]*(?:\s?(?:million|billion|bn|m|k)\b)?|(?<![\d.:])\d[\d,]*\.\d+(?![\d.:]){_UNIT}\s?%?|"
    r"(?<![\d,])\d{1,3}(?:,\d{3})+(?![\d,])|\d+(?:\.\d+)?\s?(?:%|per\s?cent)"
)
_MONTH_CUE = (
    r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|(?-i:May)|june?|july?|aug(?:ust)?|sept?(?:ember)?|"
    r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?"
)
# a count of units is a time only as an offset ("in 7 days", "last 2 days", "a week ago", "3 days before
# Christmas"); "traded on 23 days in the month" is none (Duckling reads nothing there worth keeping)
_UNITS = r"(?:days?|weeks?|months?|years?|quarters?|decades?|hours?|minutes?|seconds?|seasons?)"
_COUNT = (
    r"(?:\d+|a|an|(?:(?:twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)[-\s]?)?(?:one|two|three|four|"
    r"five|six|seven|eight|nine)|ten|eleven|twelve|(?:thir|four|fif|six|seven|eigh|nine)teen|twenty|thirty|forty|"
    r"fifty|sixty|seventy|eighty|ninety|hundred|dozen|several|few|couple(?:\s+of)?)"
)
_OFFSET_LEAD = r"(?:in|within|after|before|next|last|past|previous|coming|upcoming|by|until|till|since)"
_OFFSET_TAIL = r"(?:ago|hence|from\s+now|before|after|earlier|later|back|since|prior)"
_TRIGGER = re.compile(
    r"\d\s*(?:[ap]\.?\s?m\b|h\b|h\d|:\d\d)|\d{1,2}\s*[/-]\s*\d{1,2}|\b(?:o'?clock|noon|midnight|midday|today|tonight|"
    r"tomorrow|yesterday|ago|hence|morning|afternoon|evening|night|weekend|wkend|qtr|"
    rf"(?:next|last|this|past|previous|coming|upcoming|current)\s+{_UNITS}|{_OFFSET_LEAD}\s+(?:the\s+)?"
    rf"(?:(?:next|last|past)\s+)?(?:a\s+)?{_COUNT}\s+{_UNITS}|{_COUNT}\s+{_UNITS}\s+{_OFFSET_TAIL}|"
    r"season|spring|summer|autumn|fall|winter|new\s+year'?s?|beginning\s+of|end\s+of|"
    rf"(?:early|late|mid)[-\s]+(?:in\s+the\s+)?(?:{_MONTH_CUE}|\d{{4}}|morning|afternoon|evening|night|week|month|year)|"
    r"eve|christmas|xmas|easter|thanksgiving|halloween|valentine'?s?|holiday|eid|ramadan|diwali|hanukk?ah|chanukah|"
    rf"passover|purim|rosh|kippur|lent|pentecost|advent|jayanti|navami|pongal|asap|eo[mdy]|{_MONTH_CUE}|"
    r"(?:mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)(?:day|nesday|sday|urday)?)\b",
    _I,
)
# searched case-sensitively in the folded text (diachron.temporal._patterns.FOLD, then lower case: every
# character folds to one that the same literals, \w, \d and \s match), three times faster than IGNORECASE
# and the same answer; only "May" is case-sensitive, searched apart in the text itself
_TRIGGER_FOLDED = re.compile(_TRIGGER.pattern.replace("(?-i:May)", "(?!)"))
_MAY = re.compile(r"\bMay\b")
SHORT_TEXT = 300  # characters: a question or a heading goes to Duckling whole


def grammar_mentions(
    text: str, *, reference: datetime, timezone: str = "UTC", covered: list[tuple[int, int]] | None = None
) -> list[GrammarMention]:
    """Duckling's readings of ``text`` kept and resolved as described in the module docstring.

    Cost: Duckling's chart parser dominates, so money, decimals, percentages and thousands are blanked
    (same length, offsets kept) before it reads, and a text longer than :data:`SHORT_TEXT` characters is
    read sentence by sentence, only the sentences holding a time cue (a clock time, a month, weekday or
    time word, a holiday word, an offset such as "in 7 days" or "the past eighteen months" — a bare count,
    "traded on 23 days", is none) outside the spans ``covered`` by diachron's own patterns. A holiday named
    alone in a long text with no other cue in its sentence is therefore not read.

    Args:
        text: any length; the cost grows linearly with it.
        reference: the clock or the document's publication time (aware; naive means UTC).
        timezone: IANA zone of the text's local wall clock.
        covered: spans already read by the tagger's own patterns (they do not count as cues).

    Returns:
        Readings in text order; they may overlap (the tagger chooses).
    """
    reference = to_utc(reference).replace(microsecond=0)
    blank = _NOISE.sub(lambda m: " " * len(m[0]), text)
    out: list[GrammarMention] = []
    for offset, piece in _pieces(blank, covered or []):
        found = duckling_parse(piece, reference=reference, timezone=timezone, latent=False)
        if len(text) <= 40:
            found += [
                m
                for m in duckling_parse(piece, reference=reference, timezone=timezone, latent=True)
                if m.latent
            ]
        for m in found:
            m = _without_count(m, piece, reference, timezone)
            if m is None or not _kept(m, piece) or _ordinary_word(m, piece):
                continue
            try:
                mention = _one(m, text, offset, reference, timezone)
            except (ValueError, OverflowError):  # a reading past the years 1-9999 (a clock at their edge)
                continue
            if mention is not None:
                out.append(mention)
    return sorted(out, key=lambda g: g.span)


def _pieces(text: str, covered: list[tuple[int, int]], size: int = 2000) -> list[tuple[int, str]]:
    if len(text) <= SHORT_TEXT:
        return [(0, text)]
    cues = list(text)
    for start, end in covered:
        cues[start:end] = " " * (end - start)
    cue_text = "".join(cues)
    folded = cue_text.translate(FOLD).lower()

    def cue(start: int, stop: int) -> bool:
        return bool(_TRIGGER_FOLDED.search(folded, start, stop) or _MAY.search(cue_text, start, stop))

    pieces: list[tuple[int, str]] = []
    start = 0
    for stop in [a for a, _ in sentence_ends(text)] + [len(text)]:
        while stop - start > size:  # a run-on "sentence": cut at a space
            cut = text.rfind(" ", start, start + size)
            cut = start + size if cut <= start else cut
            if cue(start, cut):
                pieces.append((start, text[start:cut]))
            start = cut
        if stop > start and cue(start, stop):
            pieces.append((start, text[start:stop]))
        start = stop
    return pieces
