"""Scoring of the question parser and the document tagger on Duckling's English time corpus (dev half).

The corpus (``shared/cases/duckling_en_time_dev.jsonl``, README beside it) gives example groups: equivalent
``texts``, a ``reference_time`` (Duckling's test clock, a local wall clock at a fixed offset, UTC−2 for
most groups) and the ``expected`` half-open interval (``null`` = a negative example: no time at all;
``alt_end`` = an accepted second end). A text counts as *exact* when:

* parser: :func:`diachron.retrieval.intent.parse_intent` gives exactly one interval, equal to the
  expected one (a negative example: no interval);
* tagger: :func:`diachron.temporal.tagger.extract_mentions` finds exactly one mention whose reading
  (:attr:`TimeMention.reading`, the interval with its relation word applied) equals the expected one
  (a negative example: no mention).

Both read the text in the clock's own fixed zone (``Etc/GMT+2`` for UTC−2), never in UTC.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from diachron.schemas.time import Interval, parse_instant

__all__ = ["Example", "Outcome", "examples", "run_parser", "run_tagger", "zone_of"]

Pair = tuple[datetime | None, datetime | None]


@dataclass(frozen=True)
class Example:
    """One text of the corpus with its clock, zone and accepted intervals (empty: a negative example)."""

    id: str
    category: str
    text: str
    reference: datetime
    timezone: str
    accepted: frozenset[Pair]


@dataclass(frozen=True)
class Outcome:
    example: Example
    observed: tuple[Pair, ...]

    @property
    def exact(self) -> bool:
        if not self.example.accepted:
            return not self.observed
        return len(self.observed) == 1 and self.observed[0] in self.example.accepted


def zone_of(reference: str) -> str:
    """The IANA fixed-offset zone of an ISO clock: ``-02:00`` is ``Etc/GMT+2`` (POSIX sign)."""
    offset = datetime.fromisoformat(reference).utcoffset()
    hours = int(offset.total_seconds() // 3600) if offset else 0
    return "UTC" if hours == 0 else f"Etc/GMT{-hours:+d}"


def _instant(value: str | None) -> datetime | None:
    return None if value is None else parse_instant(value)


def examples(path: Path) -> Iterator[Example]:
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        group: dict[str, Any] = json.loads(line)
        exp = group["expected"]
        accepted: set[Pair] = set()
        if exp is not None:
            accepted.add((_instant(exp["start"]), _instant(exp["end"])))
            if exp.get("alt_end"):
                accepted.add((_instant(exp["start"]), _instant(exp["alt_end"])))
        for i, text in enumerate(group["texts"]):
            yield Example(
                f"{group['id']}/{i}",
                group["category"],
                text,
                parse_instant(group["reference_time"]),
                zone_of(group["reference_time"]),
                frozenset(accepted),
            )


def _pair(interval: Interval) -> Pair:
    return (interval.start, interval.end)


def run_parser(example: Example) -> Outcome:
    from diachron.retrieval.intent import IntentConfig, parse_intent

    intent = parse_intent(example.text, now=example.reference, config=IntentConfig(timezone=example.timezone))
    return Outcome(example, tuple(_pair(i) for i in intent.intervals))


def run_tagger(example: Example) -> Outcome:
    from diachron.temporal.tagger import TaggerConfig, extract_mentions

    mentions = extract_mentions(
        example.text, reference=example.reference, config=TaggerConfig(timezone=example.timezone)
    )
    return Outcome(example, tuple(_pair(getattr(m, "reading", m.interval)) for m in mentions))


def score(path: Path, run: Callable[[Example], Outcome]) -> dict[str, list[Outcome]]:
    """Outcomes per category, in file order."""
    out: dict[str, list[Outcome]] = {}
    for example in examples(path):
        out.setdefault(example.category, []).append(run(example))
    return out
