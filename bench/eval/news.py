"""News reading: recognition F1 and value accuracy of the document tagger on hand-worked news sentences.

TempEval-3's platinum set is not shipped with this project nor reachable from it (no registry package
holds it), so this is its closest honest substitute: ``bench/eval/news_sentences.jsonl``, 50 short news
documents written for this check, each with a publication time and every DATE/TIME expression's
half-open UTC interval worked out by hand (described in ``bench/eval/news.md``). Each record
is in half ``A`` (rules chosen on it) or ``B`` (checked on it).

Scoring, per half:

* recognition: an expected expression is found when a mention overlaps its span (TempEval's relaxed
  match); every mention overlapping no expected expression is a false positive. F1 over both.
* value (by meaning): a found expression's interval equals the expected one; an expected ``present``
  (TimeML's PRESENT_REF) is right when the mention lies within the publication day.

Run: ``python -m bench.eval.news`` (``--json`` for the figures as JSON, ``--show`` lists every miss).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from diachron.schemas.time import parse_instant
from diachron.temporal.tagger import TimeMention, extract_mentions

__all__ = ["DATA", "Tally", "score"]

DATA = Path(__file__).with_name("news_sentences.jsonl")


@dataclass
class Tally:
    """Counts of one half: expected, found (recognised), mentions, right values, and the misses."""

    expected: int = 0
    found: int = 0
    mentions: int = 0
    right: int = 0
    misses: list[str] = field(default_factory=list)

    def figures(self) -> dict[str, float | int]:
        precision = self.found / self.mentions if self.mentions else 1.0
        recall = self.found / self.expected if self.expected else 1.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        return {
            "expected": self.expected,
            "mentions": self.mentions,
            "recognised": self.found,
            "false_positives": self.mentions - self.found,
            "recognition_f1": round(100 * f1, 1),
            "value_accuracy": round(100 * self.right / self.found, 1) if self.found else 0.0,
        }


def _span(text: str, surface: str) -> tuple[int, int]:
    at = text.index(surface)
    return at, at + len(surface)


def _right(record: dict[str, Any], want: dict[str, Any], got: TimeMention) -> bool:
    iv = got.interval
    if want.get("present"):
        day = parse_instant(record["published"]).replace(hour=0, minute=0, second=0)
        return (
            iv.start is not None and iv.end is not None and day <= iv.start and iv.end <= day + timedelta(1)
        )
    return (iv.start, iv.end) == (parse_instant(want["start"]), parse_instant(want["end"]))


def _score_one(record: dict[str, Any], tally: Tally) -> None:
    text = record["text"]
    mentions = extract_mentions(text, reference=parse_instant(record["published"]))
    tally.mentions += len(mentions)
    used: set[int] = set()
    for want in record["expected"]:
        tally.expected += 1
        s, e = _span(text, want["text"])
        hit = [i for i, m in enumerate(mentions) if m.span[0] < e and s < m.span[1] and i not in used]
        if not hit:
            tally.misses.append(f"{record['id']} missed {want['text']!r}")
            continue
        used.add(hit[0])
        tally.found += 1
        if _right(record, want, mentions[hit[0]]):
            tally.right += 1
        else:
            iv = mentions[hit[0]].interval
            tally.misses.append(f"{record['id']} {want['text']!r}: got [{iv.start}, {iv.end})")
    for i, m in enumerate(mentions):
        if i not in used:
            tally.misses.append(f"{record['id']} false positive {m.text!r}")


def score(path: Path = DATA) -> dict[str, Tally]:
    """Tallies for halves ``A``, ``B`` and ``all`` of the news set at ``path``."""
    tallies = {"A": Tally(), "B": Tally(), "all": Tally()}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            _score_one(record, tallies[record["half"]])
            _score_one(record, tallies["all"])
    return tallies


def duckling_figures(path: Path) -> dict[str, dict[str, float | int]]:
    """Exact % of the question parser and the document tagger on Duckling's corpus at ``path``, per half
    (A: even example groups in file order, B: odd), and false positives on its negative texts."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
    from duckling_corpus import examples, run_parser, run_tagger

    groups = [
        json.loads(line)["id"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]
    half = {gid: "AB"[i % 2] for i, gid in enumerate(groups)}
    out: dict[str, dict[str, float | int]] = {}
    for reader, run in (("questions", run_parser), ("documents", run_tagger)):
        counts: dict[str, list[int]] = {"A": [0, 0], "B": [0, 0]}
        false_positives = 0
        for example in examples(path):
            outcome = run(example)
            tally = counts[half[example.id.rsplit("/", 1)[0]]]
            tally[0] += outcome.exact
            tally[1] += 1
            false_positives += not example.accepted and not outcome.exact
        for h, (exact, total) in counts.items():
            out[f"{reader}_{h}"] = {
                "exact": exact,
                "texts": total,
                "exact_pct": round(100 * exact / total, 1),
            }
        out[f"{reader}_negatives"] = {"false_positives": false_positives}
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.eval.news", description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--json", action="store_true", help="figures as one JSON object")
    parser.add_argument("--show", action="store_true", help="list every miss and false positive")
    parser.add_argument("--duckling", type=Path, help="also score Duckling's corpus (a .jsonl path)")
    args = parser.parse_args(argv)
    tallies = score(args.data)
    figures: dict[str, Any] = {half: t.figures() for half, t in tallies.items()}
    if args.duckling:
        figures |= duckling_figures(args.duckling)
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        for half, f in figures.items():
            print(f"{half:>3}: " + ", ".join(f"{k} {v}" for k, v in f.items()))
    if args.show:
        print("\n".join(tallies["all"].misses))


if __name__ == "__main__":
    main()
