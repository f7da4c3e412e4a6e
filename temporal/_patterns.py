"""Regular expressions and word tables of the rule-based temporal tagger (see ``tagger.py``).

Month and weekday names are matched case-sensitively (``May`` the month, not "may" the verb); every
other word case-insensitively. Patterns only *find* expressions; ``tagger.py`` resolves them.
"""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = [
    "CENTURY",
    "CLOCK_RANGE",
    "DAY_RANGE",
    "DAY_RANGE_SHARED_YEAR",
    "DECADE",
    "DURATION_UP_TO",
    "DURATION_ENDED",
    "FOLD",
    "GATES",
    "Gate",
    "LEADS",
    "FISCAL_RELATIVE",
    "FISCAL_YEAR",
    "HALF",
    "ISO_DATE",
    "MONTHS",
    "MONTH_RANGE_BARE",
    "MONTH_RANGE_YEAR",
    "MONTH_YEAR",
    "NUMERIC_DATE",
    "PART_OF_YEAR",
    "NUMBER_WORDS",
    "ORDINAL_WORDS",
    "PRESENT_REF",
    "QUARTER",
    "RANGE",
    "RELATIVE_AGO",
    "RELATIVE_DAY",
    "RELATIVE_MONTH_DAY",
    "RELATIVE_ORDINAL_DAY",
    "RELATIVE_PERIOD",
    "WEEKDAY",
    "WEEKDAYS",
    "WORD_DATE_DMY",
    "WORD_DATE_MDY",
    "YEAR",
    "YEAR_EARLY",
    "YEAR_PRESENT",
    "YEAR_RANGE",
    "month_number",
    "number_value",
    "ordinal_value",
    "sentence_ends",
]

MONTHS = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
]
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
NUMBER_WORDS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "eighteen": 18,
    "twenty-four": 24,
}
_ORDINAL_LIST = [
    "first",
    "second",
    "third",
    "fourth",
    "fifth",
    "sixth",
    "seventh",
    "eighth",
    "ninth",
    "tenth",
    "eleventh",
    "twelfth",
    "thirteenth",
    "fourteenth",
    "fifteenth",
    "sixteenth",
    "seventeenth",
    "eighteenth",
    "nineteenth",
    "twentieth",
]
ORDINAL_WORDS = {word: i + 1 for i, word in enumerate(_ORDINAL_LIST)}
ORDINAL_WORDS |= {f"twenty-{w}": 20 + i + 1 for i, w in enumerate(_ORDINAL_LIST[:9])}
ORDINAL_WORDS |= {"thirtieth": 30, "thirty-first": 31}

_MONTH_ABBR = r"Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec"
MONTH = (
    r"(?-i:(?:January|February|March|April|May|June|July|August|September|October|November|"
    rf"December)|(?:{_MONTH_ABBR})\.?(?![a-z]))"
)
_ORD_WORD = "|".join(sorted(ORDINAL_WORDS, key=len, reverse=True))
DAY = rf"(?:[0-3]?\d(?:st|nd|rd|th)?|{_ORD_WORD})"
YEAR4 = r"(?:1[6-9]\d\d|2[01]\d\d)"
YEAR_M = (
    r"(?:1[0-9]\d\d|2[01]\d\d)"  # a year after a month name: never a count, so 1000-1599 too ("May 1546")
)
_NUM = "|".join(sorted(NUMBER_WORDS, key=len, reverse=True))
NUMBER = rf"(?:\d{{1,2}}|{_NUM})"
_FY = r"(?:FY\s?'?(?:\d{4}|\d{2})\b|fiscal\s+(?:year\s+)?(?:of\s+)?" + YEAR4 + ")"


def _c(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


# "December 30, 2010", also tokenized text's "December 30 , 2010" (Wikipedia dumps as in TimeQA)
WORD_DATE_MDY = _c(rf"\b(?P<month>{MONTH})\s+(?P<day>{DAY})(?!\d)\s?,?\s*(?P<year>{YEAR_M})\b")
WORD_DATE_DMY = _c(
    rf"\b(?:the\s+)?(?P<day>{DAY})(?:\s+day)?\s+(?:of\s+)?(?P<month>{MONTH}),?\s+(?P<year>{YEAR_M})\b"
)
DAY_RANGE = _c(
    rf"\b(?:from\s+)?(?P<month>{MONTH})\s+(?P<d1>{DAY})\s*(?:-|–|to|through)\s*(?P<d2>{DAY})(?!\d),?\s*"
    rf"(?P<year>{YEAR4})\b"
)
# A day range whose first end omits the year (and maybe the month): "from 3 June to 7 June 2024",
# "between June 3 and June 7, 2024", "between 3 and 7 June 2024"; both ends share the year.
_TO = r"(?:-|–|to|through|until|till|and)"
DAY_RANGE_SHARED_YEAR = _c(
    rf"\b(?:from\s+|between\s+)?(?:(?P<d1>{DAY})(?:\s+(?:of\s+)?(?P<m1>{MONTH}))?\s*{_TO}\s*(?P<d2>{DAY})\s+(?:of\s+)?"
    rf"(?P<m2>{MONTH})|(?P<m1b>{MONTH})\s+(?P<d1b>{DAY}),?\s*{_TO}\s*(?P<m2b>{MONTH})\s+(?P<d2b>{DAY})(?!\d)),?\s+"
    rf"(?P<year>{YEAR4})\b"
)
ISO_DATE = _c(r"\b(?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})(?:T[\d:.]+(?:Z|[+-]\d\d:?\d\d)?)?\b")
NUMERIC_DATE = _c(
    r"(?<![\d.,/$])(?P<a>\d{1,2})(?P<sep>[/.-])(?P<b>\d{1,2})(?P=sep)(?P<year>\d{4}|\d{2})"
    r"(?![\d/-]|\.\d)"
)
MONTH_YEAR = _c(rf"\b(?P<month>{MONTH}),?\s+(?:of\s+)?(?P<year>{YEAR_M})\b")
MONTH_RANGE_YEAR = _c(
    rf"\b(?:from\s+|between\s+)?(?P<m1>{MONTH})\s*(?:-|–|—|to|through|until|till|and)\s*"
    rf"(?P<m2>{MONTH}),?\s+(?P<year>{YEAR4})\b"
)
_ADDRESS = r"\s+(?:\w+\s+){0,2}(?:Avenue|Ave\.|Street|St\.|Road|Boulevard|Blvd|Lane|Drive|Place|Plaza)\b"
YEAR = _c(
    rf"(?<![\d$£€.,/-])(?<!\d,)(?P<year>{YEAR4})(?![\d%]|,\d|\.\d|\s*(?:per\s*cent|percent|tons|acres|"
    r"miles|shares|men|people|persons|dollars|feet|pounds)\b|" + _ADDRESS + ")"
)  # "1785 Massachusetts Avenue"
# a span of years; 1000-1599 too ("1546–1553 : Robert Weston"): two four-digit years joined by a dash are
# no count (the resolver refuses spans over 50 years)
YEAR_RANGE = _c(rf"(?<![\d$.,])(?P<y1>{YEAR_M})\s*[-–—/]\s*(?P<y2>{YEAR_M}|\d{{2}})(?![\d%/-])")
# "2019–present", "1998 - today": a state from that year on (Wikipedia lists of office holders)
YEAR_PRESENT = _c(rf"(?<![\d$.,])(?P<year>{YEAR_M})\s*[-–—]\s*(?:present|now|today)\b")
# a year 1000-1599 only where a year preposition precedes it ("in 1544", "about 1541", "since 1066"): a
# bare number in that range is more often a count (the lookahead first spares the lookbehinds at every
# other position)
_EARLY_CUES = (
    "in",
    "since",
    "until",
    "till",
    "from",
    "by",
    "about",
    "around",
    "circa",
    "c.",
    "ca.",
    "before",
    "after",
    "during",
    "year",
)
YEAR_EARLY = _c(
    r"(?=1[0-5]\d\d)(?:" + "|".join(rf"(?<=\b{re.escape(w)}\s)" for w in _EARLY_CUES) + ")"
    r"(?P<year>1[0-5]\d\d)(?![\d%]|,\d|\.\d|\s*(?:per\s*cent|percent|tons|acres|miles|shares|men|people|"
    r"persons|dollars|feet|pounds|soldiers|troops|metres|meters|km|words|pages)\b)"
)
DECADE = _c(r"\b(?:the\s+)?(?:(?P<part>early|mid|late)[-\s])?(?P<decade>1[6-9]\d0|20\d0)'?s\b")
# "early 2008", "mid-2007", "late 2008" (thirds of the year; decades are DECADE's)
PART_OF_YEAR = _c(rf"\b(?:the\s+)?(?P<part>early|mid|late|end\s+of)[-\s]+(?P<year>{YEAR4})(?!'?s\b|\d)")
CENTURY = _c(rf"\b(?:the\s+)?(?P<n>\d{{1,2}}(?:st|nd|rd|th)|{_ORD_WORD})[-\s]+century\b")
RELATIVE_MONTH_DAY = _c(
    rf"\b(?P<which>next|last|this)\s+(?P<month>{MONTH})\s+(?P<day>{DAY})(?!\d)(?!,?\s*\d{{4}})"
)
QUARTER = _c(
    rf"\b(?:(?:Q(?P<q1>[1-4])|(?P<qw>first|second|third|fourth|1st|2nd|3rd|4th)\s+quarter)"
    rf"(?:\s+of)?\s*(?:(?P<fy1>{_FY})|(?P<y1>{YEAR4}))"
    rf"|(?P<fy2>{_FY})\s*Q(?P<q2>[1-4]))\b"
)
HALF = _c(
    rf"\b(?:(?:H(?P<h1>[12])|(?P<hw>first|second)\s+half)(?:\s+of)?\s*(?:(?P<fy1>{_FY})|(?P<y1>{YEAR4}))"
    rf"|(?P<fy2>{_FY})\s*H(?P<h2>[12]))\b"
)
FISCAL_YEAR = _c(rf"\b(?P<fy>{_FY})|\b(?P<year>{YEAR4})\s+fiscal\s+year\b")
FISCAL_RELATIVE = _c(
    r"\b(?:the\s+)?(?P<which>present|current|this|last|past|previous|preceding|next|coming|"
    r"ensuing)\s+fiscal\s+year\b"
)
DURATION_ENDED = _c(
    rf"\b(?:(?P<n>{NUMBER})\s+(?P<unit>months|weeks)|(?:the\s+)?(?:fiscal\s+)?(?P<kind>year|"
    rf"quarter|half[-\s]year))\s+end(?:ed|ing)\s+(?:on\s+)?"
    rf"(?P<month>{MONTH})(?:\s+(?P<day>{DAY}))?(?!\d),?\s*(?P<year>{YEAR4})\b"
    rf"(?P<more>(?:\s*(?:,|and|,\s*and)\s*{YEAR4}\b)*)"
)
PRESENT_REF = _c(r"\b(?:currently|presently|nowadays|at\s+present|right\s+now|now)\b(?!\s+that\b)")
RELATIVE_DAY = _c(r"\b(?P<word>today|yesterday|tomorrow)\b")
RELATIVE_PERIOD = _c(
    r"\b(?:the\s+)?(?P<which>this|last|next|previous|preceding|current|present|coming)\s+"
    r"(?P<unit>week|month|quarter|year|decade)\b"
)
RELATIVE_AGO = _c(rf"\b(?P<n>{NUMBER})\s+(?P<unit>day|week|month|quarter|year)s?\s+ago\b")
RELATIVE_ORDINAL_DAY = _c(
    rf"\b(?:the\s+)?(?P<day>{DAY})\s+of\s+(?:the\s+)?(?P<which>this|last|next|previous|"
    r"current)\s+month\b"
)
WEEKDAY = _c(
    r"\b(?:(?P<which>next|last|this|this\s+coming|this\s+past)\s+)?"
    r"(?P<weekday>(?-i:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday))\b"
)
_CLOCK = r"(?:[01]?\d)(?::[0-5]\d)?\s*(?:[ap]\.?m\.?|o'clock)?"
_DAYREF = rf"(?:today|tomorrow|yesterday|(?:on\s+)?{MONTH}\s+{DAY},?\s*{YEAR4})"
CLOCK_RANGE = _c(
    rf"\b(?:(?P<day1>{_DAYREF})\s+)?(?:from\s+|between\s+)?(?P<t1>{_CLOCK})"
    rf"\s*(?:-|–|to|until|till|and)\s*(?P<t2>{_CLOCK})(?:\s+(?P<day2>{_DAYREF}))?\b"
)
# a month range without a year: "(March through May)" after "spring of 2012" takes the year written before it
MONTH_RANGE_BARE = _c(
    rf"\b(?:from\s+|between\s+)?(?P<m1>{MONTH})\s*(?:-|–|—|to|through|thru|until|till|and)\s*"
    rf"(?P<m2>{MONTH})\b(?!,?\s+(?:of\s+)?\d)"
)
# "the 24 hours up to 2 a.m. New York time on 10 March 2024": a duration counted back from a local instant
_ZONE_WORDS = r"(?P<zone>(?:[A-Z][a-z]+\s){1,3})time\s+"
DURATION_UP_TO = _c(
    rf"\b(?:the\s+)?(?P<n>\d{{1,3}}|{_NUM})\s+(?P<unit>hours|days|minutes)\s+(?:up\s+to|until|till|"
    rf"ending(?:\s+at)?|to|before)\s+(?P<t>{_CLOCK})\s+(?-i:{_ZONE_WORDS})?(?:on\s+)?"
    rf"(?:(?P<month>{MONTH})\s+(?P<day>{DAY}),?\s*|(?:the\s+)?(?P<day2>{DAY})\s+(?:of\s+)?(?P<month2>{MONTH}),?\s+)"
    rf"(?P<year>{YEAR4})\b"
)
_ATOM = (
    rf"(?:(?:early|mid|late|(?:the\s+)?end\s+of)[-\s]+{YEAR4}|{MONTH}\s+{DAY}\s?,?\s*{YEAR_M}|{DAY}\s+(?:of\s+)?{MONTH}\s?,?\s+{YEAR_M}|{MONTH}\s?,?\s+{YEAR_M}"
    rf"|Q[1-4]\s*{YEAR4}|(?:first|second|third|fourth)\s+quarter\s+of\s+{YEAR4}|\d{{4}}-\d\d-\d\d|{YEAR4})"
)
RANGE = _c(
    rf"(?<![\d$.,])(?:(?P<kw>from|between)\s+(?:the\s+(?:years|period)\s+)?(?P<a1>{_ATOM})\s+(?:to|through|until|till|and)\s+"
    rf"(?P<b1>{_ATOM})|(?P<a2>{_ATOM})\s*(?:–|—|-|\s(?:to|through)\s)\s*(?P<b2>{_ATOM}))(?![\d%])"
)


# --- leads: the characters a match can start with, looked ahead first ------------------------------------
# A pattern opening with \b, a lookbehind or a long alternation is tried at every position of the text; a
# one-character lookahead for the letters its matches can start with (under the pattern's own flags, so
# "May" and "may" alike) rejects most positions at once and finds the same matches. Month names start with
# one of "adfjmnos", day numbers with a digit or one of "efnst" (first ... thirty-first).
_MONTH_LEAD, _DAY_LEAD = "adfjmnos", r"\defnst"
LEADS: dict[re.Pattern[str], str] = {}


def _led(first: str, pattern: re.Pattern[str]) -> re.Pattern[str]:
    led = re.compile(f"(?=[{first}])" + pattern.pattern, pattern.flags)
    LEADS[led] = f"(?=[{first}])"
    return led


WORD_DATE_MDY, MONTH_YEAR, DAY_RANGE = (_led(_MONTH_LEAD, p) for p in (WORD_DATE_MDY, MONTH_YEAR, DAY_RANGE))
WORD_DATE_DMY = _led(_DAY_LEAD, WORD_DATE_DMY)
MONTH_RANGE_YEAR, MONTH_RANGE_BARE = (
    _led("b" + _MONTH_LEAD, p) for p in (MONTH_RANGE_YEAR, MONTH_RANGE_BARE)
)
DAY_RANGE_SHARED_YEAR = _led("b" + _MONTH_LEAD + _DAY_LEAD, DAY_RANGE_SHARED_YEAR)
YEAR = _led("12", YEAR)
PART_OF_YEAR = _led("elmt", PART_OF_YEAR)
RANGE = _led(
    f"belmqt{_MONTH_LEAD}{_DAY_LEAD}", RANGE
)  # from/between, early/mid/late/the end, Q1, first quarter


# --- gates: what every match of a pattern contains, so a text lacking it is not searched ---------------
# Each gate is a necessary condition (a cheap search that any match of the pattern also satisfies), so
# gating never changes what is found; it spares the costly patterns on the many chunks without, say, a
# month name. Month and weekday names are case-sensitive as in MONTH and WEEKDAY; every four-digit year
# of YEAR4/YEAR_M contains r"1\d{3}|2[01]\d\d"; every _ATOM ends in a digit and holds four digits.
# A case-insensitive gate is a case-sensitive search of the text folded to lower case (a literal prefix
# is searched fast, IGNORECASE scans every position): FOLD first maps the letters IGNORECASE also matches
# to an ASCII letter ("K" Kelvin, "ſ", "ı", "İ"), so a folded gate holds wherever its pattern matches.
FOLD = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})


class Gate(NamedTuple):
    """A necessary condition of a pattern: ``regex`` searched in the text, or in its fold when ``folded``."""

    regex: re.Pattern[str]
    folded: bool


def _g(pattern: str) -> Gate:
    return Gate(re.compile(pattern), False)


def _gf(pattern: str) -> Gate:
    return Gate(re.compile(pattern), True)


_G_MONTH = _g(r"Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec")
_G_YEAR = _g(r"1\d{3}|2[01]\d\d")
GATES: dict[re.Pattern[str], tuple[Gate, ...]] = {
    **{
        p: (_G_MONTH, _G_YEAR)
        for p in (
            WORD_DATE_MDY,
            WORD_DATE_DMY,
            MONTH_YEAR,
            DAY_RANGE,
            DAY_RANGE_SHARED_YEAR,
            MONTH_RANGE_YEAR,
        )
    },
    MONTH_RANGE_BARE: (_G_MONTH,),
    RELATIVE_MONTH_DAY: (_G_MONTH, _gf(r"next|last|this")),
    DURATION_UP_TO: (_G_MONTH, _G_YEAR, _gf(r"hours|days|minutes")),
    DURATION_ENDED: (_G_MONTH, _G_YEAR, _gf(r"end(?:ed|ing)")),
    ISO_DATE: (_g(r"\d{4}-\d\d-\d\d"),),
    NUMERIC_DATE: (_g(r"\d[/.-]\d"),),
    QUARTER: (_gf(r"q[1-4]|quarter"),),
    HALF: (_gf(r"h[12]|half"),),
    FISCAL_YEAR: (_gf(r"fy|fiscal"),),
    FISCAL_RELATIVE: (_gf(r"fiscal"),),
    DECADE: (_gf(r"\d0'?s"),),
    PART_OF_YEAR: (_G_YEAR, _gf(r"early|mid|late|end")),
    YEAR: (_G_YEAR,),
    YEAR_RANGE: (_G_YEAR,),
    YEAR_PRESENT: (_G_YEAR, _gf(r"present|now|today")),
    YEAR_EARLY: (_g(r"1[0-5]\d\d"),),
    CENTURY: (_gf(r"century"),),
    RELATIVE_ORDINAL_DAY: (_gf(r"(?:this|last|next|previous|current)\s+month"),),
    RELATIVE_AGO: (_gf(r"ago"),),
    RELATIVE_PERIOD: (
        _gf(
            r"(?:this|last|next|previous|preceding|current|present|coming)\s+(?:week|month|quarter|year|"
            r"decade)"
        ),
    ),
    RELATIVE_DAY: (_gf(r"today|yesterday|tomorrow"),),
    WEEKDAY: (_g(r"(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day"),),
    PRESENT_REF: (_gf(r"now|present|currently"),),
    CLOCK_RANGE: (_gf(r"\d(?::[0-5]\d)?\s*(?:[ap]\.?m\.?|o'clock)?\s*(?:-|–|to|until|till|and)\s*\d"),),
    RANGE: (_g(r"\d{4}[\s\S]*\d{4}"), _gf(r"\d\s*(?:–|—|-|to|through|until|till|and)")),
}


# A full stop ends a sentence only when the next word is not lower case or a number and the stop does not
# close an abbreviation: a month's ("Feb. 28", "in Sept. after"), a title's ("Mr. Smith") or one letter's
# ("U.S. officials"). "!", "?", ";" and a line break always end one.
_STOP = re.compile(r"(?<=[.!?;])\s+(?=\S)|\n+")
_ABBREVIATION = re.compile(
    rf"(?:\b(?-i:{_MONTH_ABBR}|Mr|Mrs|Ms|Dr|St|Sen|Rep|Gov|Gen|Lt|Col|Sgt|Capt|Prof|Jr|Sr|No|Inc|Corp|Co|"
    r"Ltd|vs|[A-Z])|\.[A-Za-z])\.$"
)


def sentence_ends(text: str, start: int = 0, stop: int | None = None) -> list[tuple[int, int]]:
    """``(start, end)`` of each run of spaces ending a sentence in ``text[start:stop]`` (rule above)."""
    stop = len(text) if stop is None else stop
    out: list[tuple[int, int]] = []
    for m in _STOP.finditer(text, start, stop):
        if text[m.start() - 1] == "." and "\n" not in m[0]:
            after = text[m.end()] if m.end() < len(text) else ""
            if (
                after.islower()
                or after.isdigit()
                or _ABBREVIATION.search(text, max(0, m.start() - 6), m.start())
            ):
                continue
        out.append(m.span())
    return out


def month_number(name: str) -> int:
    """1..12 for a month name or abbreviation ("Sept.", "march")."""
    key = name.strip(". ").lower()[:3]
    return [m[:3] for m in MONTHS].index(key) + 1


def ordinal_value(text: str) -> int:
    """Day number of "1st", "15", "fourth", "twenty-first"."""
    word = text.strip().lower()
    if word in ORDINAL_WORDS:
        return ORDINAL_WORDS[word]
    return int(re.sub(r"\D", "", word))


def number_value(text: str) -> int:
    """Integer value of "9", "nine", "a"."""
    word = text.strip().lower()
    return NUMBER_WORDS[word] if word in NUMBER_WORDS else int(word)
