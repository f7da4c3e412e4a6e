"""The evaluation's questions: ``stocks_quandl_wiki/questions.jsonl`` with gold evidence and a dev/test split.

The split is by the number ending the question id (``trend-0007`` -> 7, ``month-best-AAPL-2001`` -> 2001):
even -> ``dev``, odd -> ``test``. Tuning looks at ``dev`` only.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from diachron.schemas.time import Interval, parse_instant

__all__ = ["Question", "load_questions", "split_of"]

_TRAILING_NUMBER = re.compile(r"(\d+)$")


@dataclass(frozen=True, slots=True)
class Question:
    """One stock question: text, type, the half-open UTC window, gold document ids, options and answer."""

    qid: str
    type: str
    text: str
    window: Interval
    gold: frozenset[str]
    options: dict[str, str]
    answer: str

    @property
    def split(self) -> str:
        return split_of(self.qid)


def split_of(qid: str) -> str:
    """``dev`` when the number ending ``qid`` is even, ``test`` when odd.

    Raises:
        ValueError: ``qid`` does not end in a number.
    """
    match = _TRAILING_NUMBER.search(qid)
    if match is None:
        raise ValueError(f"question id {qid!r} does not end in a number")
    return "dev" if int(match.group(1)) % 2 == 0 else "test"


def _question(record: dict[str, Any]) -> Question:
    window = Interval(parse_instant(record["window_start"]), parse_instant(record["window_end"]))
    return Question(
        qid=record["qid"],
        type=record["type"],
        text=record["question"],
        window=window,
        gold=frozenset(record["evidence_doc_ids"]),
        options=dict(record.get("options") or {}),
        answer=str(record["answer"]),
    )


def load_questions(path: Path, *, split: str = "both") -> list[Question]:
    """Questions of ``split`` (``dev``, ``test`` or ``both``) from a ``questions.jsonl`` file, in file
    order."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    questions = [_question(json.loads(line)) for line in lines if line.strip()]
    return [q for q in questions if split == "both" or q.split == split]
