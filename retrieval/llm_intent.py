"""LLM question decomposition: question -> :class:`~diachron.schemas.intent.TemporalIntent`, beside the rule parser.

The same backends as the ``vllm`` annotator (:mod:`diachron.temporal.llm_backends`) answer
``{"core_query", "relation", "intervals": [{"start", "end"}], "confidence"}`` under :data:`INTENT_SCHEMA`
(structured outputs). The clock ``now`` is written into the prompt, never assumed. Dates are ISO days;
intervals are half-open UTC ``[start, end)`` with ``null`` for an open side. An answer that is empty,
truncated or invalid is asked once more, then the rule parser's intent is returned with an assumption
saying so.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from diachron.schemas.intent import Relation, TemporalIntent
from diachron.schemas.time import Granularity, Interval, format_instant, parse_instant, to_utc
from diachron.temporal.llm_backends import LLMBackend

__all__ = ["INTENT_SCHEMA", "LLMIntentParser", "parse_intent_answer"]

log = logging.getLogger(__name__)

_DAY = {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"}
_SIDE = {"anyOf": [_DAY, {"type": "null"}]}
INTENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["core_query", "relation", "intervals", "confidence"],
    "properties": {
        "core_query": {"type": "string", "maxLength": 300},
        "relation": {"enum": [r.value for r in Relation]},
        "intervals": {
            "type": "array",
            "maxItems": 3,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["start", "end"],
                "properties": {"start": _SIDE, "end": _SIDE},
            },
        },
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    },
}

_SYSTEM = (
    "You split search questions into a topic and a time filter for a time-aware search index. "
    "Answer with one JSON object only."
)
_PROMPT = """Current date and time (UTC): {now}
Question: {question}

Give "core_query": the question without its time expressions; "relation": "at" (one period), "between" (a
range), "before", "after", "current" (true now) or "unknown" (no time in the question); "intervals": the
question's time as ISO days, "start" inclusive, "end" exclusive (the day after the last day), null for an open
side; relative expressions ("last quarter", "two years ago") are resolved against the current date above;
"confidence": 0 to 1."""


def parse_intent_answer(text: str, *, now: datetime) -> TemporalIntent:
    """Parse an answer under :data:`INTENT_SCHEMA` read against the clock ``now``.

    Raises:
        ValueError: not JSON, not the schema, an impossible date, or an empty/inverted interval.
    """
    import jsonschema

    data = json.loads(text)
    try:
        jsonschema.validate(data, INTENT_SCHEMA)
    except jsonschema.ValidationError as exc:
        raise ValueError(f"schema violation at {list(exc.absolute_path)}: {exc.message}") from exc
    intervals = tuple(
        Interval(
            parse_instant(i["start"]) if i["start"] else None,
            parse_instant(i["end"]) if i["end"] else None,
            Granularity.DAY,
        )
        for i in data["intervals"]
        if i["start"] or i["end"]
    )
    relation = Relation(data["relation"]) if intervals else Relation.UNKNOWN
    return TemporalIntent(
        data["core_query"].strip(),
        intervals,
        relation,
        to_utc(now),
        Granularity.DAY if intervals else None,
        float(data["confidence"]),
        assumptions=("intent read by an LLM",),
    )


@dataclass
class LLMIntentParser:
    """Question decomposition by an LLM with the rule parser as fallback.

    Args:
        backend: an :class:`~diachron.temporal.llm_backends.LLMBackend`.
        fallback: ``(question, now) -> TemporalIntent``, by default :func:`diachron.retrieval.intent.parse_intent`.
        max_tokens: answer budget, tokens (doubled on the retry).
    """

    backend: LLMBackend
    fallback: Any = None
    max_tokens: int = 200
    retry_temperature: float = 0.6
    _rules: Any = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        from diachron.retrieval.intent import parse_intent

        self._rules = self.fallback or (lambda question, now: parse_intent(question, now=now))

    def parse(self, question: str, *, now: datetime) -> TemporalIntent:
        """The question's intent; intervals half-open UTC. ``now``: the clock (aware; naive = UTC)."""
        now = to_utc(now)
        messages = [
            {"role": "system", "content": _SYSTEM},
            {"role": "user", "content": _PROMPT.format(now=format_instant(now), question=question)},
        ]
        for budget, temperature in ((self.max_tokens, 0.0), (2 * self.max_tokens, self.retry_temperature)):
            answer = self.backend.generate(
                [messages], schema=INTENT_SCHEMA, max_tokens=budget, temperature=temperature
            )[0]
            if answer.finish_reason == "stop" and answer.text.strip():
                try:
                    return parse_intent_answer(answer.text, now=now)
                except ValueError as exc:
                    log.info("llm intent unusable: %s", exc)
        intent = self._rules(question, now)
        return replace(intent, assumptions=(*intent.assumptions, "LLM answer unusable: rule parser used"))
