"""The answer step: a deterministic evidence summary carrying the temporal contract, or an LLM answer.

The contract (DESIGN.md, "Retrieve"): scope the answer to the question's interval, cite the applicable
version (doc id, valid interval, recorded at, superseded or corrected by), state conflicts and gaps, and
ask back instead of answering when the result needs clarification. :func:`summarize` writes that as plain
text without a model; :func:`answer` sends the same text as the prompt to an OpenAI-compatible
``/chat/completions`` endpoint (a vLLM server, as for the annotator) and returns the model's reply.
"""

from __future__ import annotations

import json
import urllib.request
from dataclasses import dataclass

from diachron.schemas.evidence import Evidence, SearchResult
from diachron.schemas.lineage import Clarification, ConflictSignal, GapSignal
from diachron.schemas.time import format_instant

__all__ = ["LLMConfig", "answer", "summarize"]

SYSTEM_PROMPT = (
    "Answer only from the numbered evidence. Scope the answer to the stated time interval ('between A and B, …'). "
    "Cite the version that applied ([n] with its doc id) and never blend superseded or corrected versions with "
    "the applicable one. State every conflict and gap listed. If clarification is needed, ask which candidate "
    "interval is meant instead of answering."
)


@dataclass(frozen=True, slots=True)
class LLMConfig:
    """An OpenAI-compatible chat endpoint: ``base_url`` (e.g. ``http://localhost:8000/v1``), ``model``,
    ``timeout`` in seconds, ``max_tokens``."""

    base_url: str
    model: str
    timeout: float = 60.0
    max_tokens: int = 400


def _interval(start: object, end: object) -> str:
    return f"[{format_instant(start) or '-inf'}, {format_instant(end) or '+inf'})"  # type: ignore[arg-type]


def _card(n: int, e: Evidence) -> str:
    notes = [f"valid {_interval(e.valid_from, e.valid_until)}", f"recorded {format_instant(e.recorded_at)}"]
    if e.superseded_by:
        notes.append(f"superseded by {e.superseded_by}")
    if e.corrected_by:
        notes.append(f"corrected by {e.corrected_by}")
    text = " ".join(e.text.split())
    return f"[{n}] {e.doc_id} (published {format_instant(e.published_at)}; {'; '.join(notes)}): {text[:300]}"


def _signal(s: ConflictSignal | GapSignal | Clarification) -> str:
    if isinstance(s, ConflictSignal):
        where = f" during {s.interval}" if s.interval else ""
        return f"CONFLICT ({s.kind.value}) in {s.series_id}{where}: {', '.join(s.doc_ids)}"
    if isinstance(s, GapSignal):
        return f"GAP: no evidence during {s.interval}"
    options = "; ".join(f"{c.doc_id} {c.valid}" for c in s.candidates)
    return f"CLARIFY: {s.reason}; which one is meant? {options}"


def summarize(result: SearchResult) -> str:
    """A deterministic, citable summary of ``result`` (no model).

    Lines: the scope (relation, intervals, reference time, transaction-time bound), one line per evidence
    item in the result's (chronological) order, then one line per signal. Instants are ISO-8601 UTC.
    """
    intent = result.intent
    windows = ", ".join(str(i) for i in intent.intervals) or "any time"
    as_of = result.trace.filter.get("as_of")
    lines = [
        f"Question: {intent.core_query}",
        (
            f"Scope: {intent.relation.value} {windows} (reference time {format_instant(intent.reference_time)}"
            f"{f'; as recorded by {as_of}' if as_of else ''})"
        ),
    ]
    if intent.needs_clarification:
        lines.append("Needs clarification before answering.")
    lines += [_card(n, e) for n, e in enumerate(result.evidence, 1)] or ["No evidence in scope."]
    lines += [_signal(s) for s in result.signals]
    return "\n".join(lines)


def answer(result: SearchResult, *, llm: LLMConfig | None = None) -> str:
    """The answer to ``result``'s question: the model's reply through ``llm``, else :func:`summarize`.

    Raises:
        urllib.error.URLError: the endpoint is unreachable (transient: retry).
        KeyError: the endpoint's reply has no ``choices[0].message.content`` (terminal: wrong endpoint).
    """
    summary = summarize(result)
    if llm is None:
        return summary
    body = {
        "model": llm.model,
        "max_tokens": llm.max_tokens,
        "temperature": 0.0,
        "messages": [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": summary}],
    }
    request = urllib.request.Request(
        f"{llm.base_url.rstrip('/')}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=llm.timeout) as response:
        reply = json.loads(response.read())
    return str(reply["choices"][0]["message"]["content"])
