"""The answer step: a cited answer that keeps the temporal contract, written without a model or by one.

The contract (docs/design.md, "Retrieve"): scope the answer to the question's interval ("between A and B"),
cite the version that applied, never blend superseded or corrected versions with it, state conflicts and
gaps, and ask back instead of answering when the question's time is ambiguous.

* :func:`compose` writes that answer deterministically from a :class:`SearchResult`: one paragraph per
  applicable version (a versioned document) or per interval (dated evidence), each claim followed by its
  ``[n]`` card (``n`` = 1-based position in ``result.evidence``), then conflicts, gaps and assumptions; a
  clarification question when the result needs one.
* :func:`answer` sends the same evidence and contract (:func:`summarize`) to an OpenAI-compatible chat
  endpoint (a vLLM server) through :class:`~diachron.temporal.llm_backends.OpenAIHTTPBackend` and checks
  the reply (:func:`check_reply`): every cited ``[n]`` exists, and every absolute date it states lies inside
  the cited evidence's intervals (event intervals, valid interval and its end day, publication day) or the
  question's own window. A reply that fails, or an endpoint that fails, gives the deterministic answer with
  the reason.

Dates in the text are written as people write them (UTC, ``diachron.schemas.display``); every interval is
half-open ``[start, end)`` in UTC.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from diachron.schemas.display import human_instant, human_interval
from diachron.schemas.evidence import Evidence, SearchResult
from diachron.schemas.intent import Relation
from diachron.schemas.lineage import Clarification, ConflictKind, ConflictSignal, GapSignal
from diachron.schemas.time import Granularity, Interval, floor_to, format_instant, parse_instant

__all__ = ["Answer", "Citation", "LLMConfig", "answer", "check_reply", "compose", "summarize"]

SYSTEM_PROMPT = (
    "Answer only from the numbered evidence. Scope the answer to the stated time interval "
    "('between A and B, …'). Cite the version that applied ([n] with its doc id) and never blend superseded "
    "or corrected versions with the applicable one. State every conflict and gap listed. If clarification "
    "is needed, ask which candidate interval is meant instead of answering. Write dates as they appear in "
    "the evidence. "
    'Reply as JSON: {"answer": "<text with [n] citations>"}.'
)
#: the reply's JSON schema (vLLM structured outputs): one string
ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
}
_CITE = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")
_DAY = timedelta(days=1)


@dataclass(frozen=True, slots=True)
class LLMConfig:
    """An OpenAI-compatible chat endpoint: ``base_url`` (e.g. ``http://localhost:8000/v1``; ``/v1`` is added
    when missing), ``model`` (the served name; ``None``: the first of the server's ``/v1/models``),
    ``timeout`` in seconds per request, ``max_tokens`` of the reply, ``retries`` on connection errors/5xx."""

    base_url: str
    model: str | None = None
    timeout: float = 60.0
    max_tokens: int = 400
    retries: int = 2


@dataclass(frozen=True, slots=True)
class Citation:
    """Card ``[n]`` of an answer: ``n`` (1-based position in the evidence), its ids and title, the version's
    ``valid`` interval (``None`` = not versioned) and the chunk's event ``intervals`` (half-open UTC)."""

    n: int
    doc_id: str
    chunk_id: str
    title: str
    valid: Interval | None
    intervals: tuple[Interval, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "doc_id": self.doc_id,
            "chunk_id": self.chunk_id,
            "title": self.title,
            "valid": self.valid.to_dict() if self.valid else None,
            "intervals": [i.to_dict() for i in self.intervals],
        }


@dataclass(frozen=True, slots=True)
class Answer:
    """A cited answer.

    Attributes:
        text: the answer; paragraphs separated by a blank line, claims followed by ``[n]``.
        citations: the cards the text cites, in ``n`` order.
        scope: the time the answer is about, in words ("between Jan 2021 and Dec 2021", "on 10 Apr 2024",
            "now (10 Dec 2024)", "at any time (no time in the question)"; ", as recorded by …" with as-of).
        checked: True when ``text`` keeps the contract: the deterministic answer (by construction) or an
            LLM reply that passed :func:`check_reply`.
        reason: why an LLM reply was not used (rejected by the check, or the endpoint failed); else ``None``.
        source: ``summary`` (deterministic) or ``llm``.
        needs_clarification: the text is a question back (which version or interval is meant).
        result: the search result answered (not part of ``to_dict``; the ``--json`` form carries it beside).
    """

    text: str
    citations: tuple[Citation, ...]
    scope: str
    checked: bool
    reason: str | None = None
    source: str = "summary"
    needs_clarification: bool = False
    result: SearchResult | None = field(default=None, compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The JSON ``answer`` object: ``{text, citations, scope, checked, reason, source,
        needs_clarification}``."""
        return {
            "text": self.text,
            "citations": [c.to_dict() for c in self.citations],
            "scope": self.scope,
            "checked": self.checked,
            "reason": self.reason,
            "source": self.source,
            "needs_clarification": self.needs_clarification,
        }


# ---- the evidence as a prompt ---------------------------------------------------------------------------


def _interval(start: object, end: object) -> str:
    return f"[{format_instant(start) or '-inf'}, {format_instant(end) or '+inf'})"  # type: ignore[arg-type]


def _card(n: int, e: Evidence) -> str:
    notes = [f"valid {_interval(e.valid_from, e.valid_until)}", f"recorded {format_instant(e.recorded_at)}"]
    if e.superseded_by:
        notes.append(f"superseded by {e.superseded_by}")
    if e.corrected_by:
        notes.append(f"corrected by {e.corrected_by}")
    if e.time_source == "unknown":
        notes.append("time unknown")
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
    """The evidence and its contract as plain text (the LLM's prompt; no model).

    Lines: the scope (relation, intervals, reference time, transaction-time bound), one line per evidence
    item in the result's (chronological) order, then one line per signal. Instants are ISO-8601 UTC.
    """
    intent = result.intent
    windows = ", ".join(str(i) for i in intent.intervals) or "any time"
    as_of = result.trace.filter.get("as_of")
    lines = [
        f"Question: {intent.core_query}",
        (
            f"Scope: {intent.relation.value} {windows} "
            f"(reference time {format_instant(intent.reference_time)}"
            f"{f'; as recorded by {as_of}' if as_of else ''})"
        ),
    ]
    if intent.needs_clarification:
        lines.append("Needs clarification before answering.")
    lines += [_card(n, e) for n, e in enumerate(result.evidence, 1)] or ["No evidence in scope."]
    lines += [_signal(s) for s in result.signals]
    return "\n".join(lines)


# ---- the deterministic answer ------------------------------------------------------------------------------


def _as_of(result: SearchResult) -> datetime | None:
    value = result.trace.filter.get("as_of")
    return parse_instant(value) if isinstance(value, str) else value


def _span_words(window: Interval) -> str:
    """``window`` scoped in words: "on 10 Apr 2024", "in Feb 2011", "between Jan 2021 and Dec 2021"."""
    g = window.granularity
    midnights = all(t is None or t == floor_to(t, Granularity.DAY) for t in (window.start, window.end))
    if g is Granularity.INSTANT and midnights:  # derived bounds (an overlap of two versions): whole days
        g = Granularity.DAY
    if window.start is None or window.end is None:
        return human_interval(window)  # "before 1920", "since 3 Mar 2020"
    first = human_instant(window.start, g)
    last = human_instant(floor_to(window.end - timedelta(microseconds=1), g), g)
    if first == last:
        return (
            f"on {first}" if g in (Granularity.DAY, Granularity.INSTANT, Granularity.HOUR) else f"in {first}"
        )
    return f"between {first} and {last}"


def scope_words(result: SearchResult) -> str:
    """The time ``result`` answers for, in words (see :attr:`Answer.scope`)."""
    intent = result.intent
    at_clock = all(w.start == intent.reference_time for w in intent.intervals)
    if intent.relation is Relation.CURRENT and at_clock:  # "current" read at the clock itself
        words = f"now ({human_instant(intent.reference_time)})"
    elif intent.intervals:
        words = " and ".join(_span_words(w) for w in intent.intervals)
    elif intent.relation is Relation.CURRENT:
        words = f"now ({human_instant(intent.reference_time)})"
    else:
        words = "at any time (no time in the question)"
    as_of = _as_of(result)
    return words + (f", as recorded by {human_instant(as_of, 'instant')}" if as_of else "")


def _versioned(e: Evidence) -> bool:
    return bool(e.valid_from or e.valid_until or e.superseded_by or e.corrected_by)


def _claim(text: str, limit: int = 220) -> str:
    """The card's first sentence (at most ``limit`` characters), whitespace folded."""
    flat = " ".join(text.split())
    sentence = re.split(r"(?<=[.!?])\s", flat, maxsplit=1)[0]
    return sentence if len(sentence) <= limit else sentence[: limit - 1].rstrip() + "…"


def _version_head(e: Evidence, now: datetime) -> str:
    valid = human_interval(Interval(e.valid_from, e.valid_until), "day")
    notes = [f"valid {valid}"]
    if e.superseded_by:
        ended = f" on {human_instant(e.valid_until)}" if e.valid_until else ""
        notes.append(f"superseded by {e.superseded_by}{ended}")
    elif Interval(e.valid_from, e.valid_until).contains(now) and not e.corrected_by:
        notes.append("the version valid now")
    if e.corrected_by:
        notes.append(f"corrected by {e.corrected_by}: rely on the correction")
    if e.recorded_at:
        notes.append(f"recorded {human_instant(floor_to(e.recorded_at, Granularity.DAY))}")
    return f"{e.doc_id} ({'; '.join(notes)})"


def _group_key(e: Evidence) -> str:
    if _versioned(e):
        return f"version:{e.doc_id}"
    if e.time_source == "unknown" or not e.intervals:
        return "unknown"
    return f"interval:{e.intervals[0]}"


def _paragraphs(result: SearchResult) -> list[str]:
    """One paragraph per applicable version or interval, cards in the result's (chronological) order."""
    groups: dict[str, list[int]] = {}
    for n, e in enumerate(result.evidence, 1):
        groups.setdefault(_group_key(e), []).append(n)
    now = result.intent.reference_time
    out = []
    for key, numbers in groups.items():
        first = result.evidence[numbers[0] - 1]
        if key.startswith("version:"):
            head = _version_head(first, now)
        elif key == "unknown":
            head = "Time unknown (admitted by similarity only; not dated)"
        else:
            head = human_interval(first.intervals[0])
        claims: dict[str, list[int]] = {}
        for n in numbers:
            claims.setdefault(_claim(result.evidence[n - 1].text), []).append(n)
        body = " ".join(f"{c} {''.join(f'[{n}]' for n in ns)}" for c, ns in claims.items())
        out.append(f"{head}: {body}")
    return out


def _cited(result: SearchResult, doc_ids: tuple[str, ...] | list[str]) -> str:
    numbers = [n for n, e in enumerate(result.evidence, 1) if e.doc_id in doc_ids]
    return "".join(f"[{n}]" for n in numbers)


def _signal_lines(result: SearchResult) -> list[str]:
    out = []
    for s in result.signals:
        if isinstance(s, ConflictSignal) and s.kind is ConflictKind.OVERLAP:
            during = f" {_span_words(s.interval)}" if s.interval else ""
            out.append(
                f"Conflict: {' and '.join(s.doc_ids)} ({s.series_id}) both apply{during}; "
                f"read them apart, not blended {_cited(result, s.doc_ids)}."
            )
        elif isinstance(s, ConflictSignal):
            target, fix = s.doc_ids[0], s.doc_ids[-1]
            out.append(
                f"Correction: {fix} corrects {target} ({s.series_id}); rely on {fix} "
                f"{_cited(result, (fix,))}, not on the corrected text {_cited(result, (target,))}."
            )
        elif isinstance(s, GapSignal):
            why = f" ({s.reason})" if s.reason else ""
            out.append(f"Gap: no evidence for {human_interval(s.interval)}{why}.")
    return out


def _clarification(result: SearchResult, scope: str) -> Answer | None:
    asks = [s for s in result.signals if isinstance(s, Clarification)]
    if not asks:
        return None
    options = "; ".join(
        f"{c.version and f'version {c.version}' or c.doc_id} ({c.doc_id}, valid "
        f"{human_interval(c.valid, 'day') if c.valid else 'never: replaced by a correction'})"
        for s in asks
        for c in s.candidates
    )
    reasons = "; ".join(s.reason for s in asks)
    text = (
        f"Which one do you mean? {reasons[:1].upper()}{reasons[1:]}, and each gives another answer: "
        f"{options}. "
        "Ask again with a date (e.g. 'on <day>')."
    )
    return Answer(text, (), scope, True, needs_clarification=True, result=result)


def _citations(result: SearchResult, numbers: set[int]) -> tuple[Citation, ...]:
    out = []
    for n in sorted(numbers):
        e = result.evidence[n - 1]
        valid = Interval(e.valid_from, e.valid_until) if _versioned(e) else None
        out.append(Citation(n, e.doc_id, e.chunk_id, e.title, valid, e.intervals))
    return tuple(out)


def compose(result: SearchResult) -> Answer:
    """The deterministic answer to ``result`` (no model); see the module docstring for its shape.

    The first paragraph scopes it ("On 10 Apr 2024, the evidence says:"); an empty result says there is no
    evidence for that scope (and why, from its gap signals); ``checked`` is True.
    """
    scope = scope_words(result)
    asked = _clarification(result, scope)
    if asked is not None:
        return asked
    intent = result.intent
    lead = f"{scope[:1].upper()}{scope[1:]}"
    if not result.evidence:
        text = "\n\n".join([f"{lead}: no evidence.", *_signal_lines(result)])
        return Answer(text, (), scope, True, result=result)
    parts = [f"{lead}, the evidence says:"]
    if intent.relation is Relation.UNKNOWN and any(_versioned(e) for e in result.evidence):
        parts[0] = (
            f"No time in the question, so this is read as now ({human_instant(intent.reference_time)}); "
            "earlier versions are marked superseded:"
        )
    parts += _paragraphs(result)
    parts += _signal_lines(result)
    parts += [f"Assumed: {a}." for a in intent.assumptions]
    numbers = set(range(1, len(result.evidence) + 1))
    return Answer("\n\n".join(parts), _citations(result, numbers), scope, True, result=result)


# ---- the LLM answer and its check ---------------------------------------------------------------------


def _numbers(text: str) -> list[int]:
    return [int(n) for group in _CITE.findall(text) for n in group.split(",")]


def _allowed(result: SearchResult, numbers: set[int]) -> list[Interval]:
    """Where a stated date may lie: each cited card's event intervals, valid interval and the day its
    validity ends (the successor's first day), its publication day; and the question's own window."""
    out = list(result.intent.intervals)
    for n in numbers:
        e = result.evidence[n - 1]
        out += e.intervals
        if _versioned(e):
            out.append(Interval(e.valid_from, e.valid_until))
        if e.valid_until is not None:
            out.append(Interval(e.valid_until, e.valid_until + _DAY))
        if e.published_at is not None:
            day = floor_to(e.published_at, Granularity.DAY)
            out.append(Interval(day, day + _DAY))
    return out


def _inside(inner: Interval, outer: Interval) -> bool:
    if inner.start is None or inner.end is None:
        return False
    starts = outer.start is None or outer.start <= inner.start
    return starts and (outer.end is None or inner.end <= outer.end)


def check_reply(text: str, result: SearchResult) -> str | None:
    """Why ``text`` (an LLM's answer to ``result``) breaks the contract, in one line; ``None`` if it keeps it.

    Checks, in order: the text is not empty; it cites at least one card when there is evidence; every
    ``[n]`` names a card (1 … ``len(result.evidence)``); every absolute date it states (found by diachron's
    tagger, :func:`diachron.temporal.tagger.extract_mentions`; relative phrases such as "within 30 days"
    are no dates) lies inside one of the allowed intervals of the cited cards (:func:`_allowed`).
    """
    from diachron.temporal.tagger import extract_mentions

    if not text.strip():
        return "the reply is empty"
    numbers = _numbers(text)
    count = len(result.evidence)
    if count and not numbers:
        return "the reply cites no evidence card"
    if bad := sorted({n for n in numbers if not 1 <= n <= count}):
        return f"the reply cites [{bad[0]}], but the evidence has {count} card(s)"
    allowed = _allowed(result, set(numbers))
    for mention in extract_mentions(_CITE.sub(" ", text), reference=None):
        if not any(_inside(mention.interval, a) for a in allowed):
            return (
                f"the reply states {mention.text!r} ({mention.interval}), outside the cited evidence's "
                "intervals"
            )
    return None


def _reply_text(raw: str) -> str:
    """The ``answer`` of a JSON reply, or the raw reply when it is not that JSON."""
    try:
        data = json.loads(raw)
    except ValueError:
        return raw.strip()
    return str(data.get("answer", "")).strip() if isinstance(data, dict) else raw.strip()


def _model(llm: LLMConfig) -> str:
    """``llm.model``, else the first model the server lists (``GET /v1/models``), else ``"default"``."""
    if llm.model:
        return llm.model
    import httpx

    base = llm.base_url.rstrip("/")
    base = base if base.endswith("/v1") else base + "/v1"
    try:
        listed = httpx.get(f"{base}/models", timeout=llm.timeout).json()["data"]
        return str(listed[0]["id"])
    except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError):
        return "default"


def answer(result: SearchResult, *, llm: LLMConfig | None = None) -> Answer:
    """The answer to ``result``: :func:`compose`, or through ``llm`` the model's reply when it passes
    :func:`check_reply` (else :func:`compose` with ``reason`` saying why the reply was not used).

    Never raises for the endpoint: an unreachable or failing server gives the deterministic answer with
    ``reason`` ``"LLM endpoint failed: …"``.
    """
    fallback = compose(result)
    if llm is None or fallback.needs_clarification:
        return fallback
    from diachron.temporal.llm_backends import LLMBackendError, OpenAIHTTPBackend

    backend = OpenAIHTTPBackend(llm.base_url, _model(llm), timeout_s=llm.timeout, retries=llm.retries)
    messages = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": summarize(result)}]
    try:
        (completion,) = backend.generate(
            [messages], schema=ANSWER_SCHEMA, max_tokens=llm.max_tokens, temperature=0.0
        )
    except LLMBackendError as exc:
        return replace(fallback, reason=f"LLM endpoint failed: {str(exc).splitlines()[0]}")
    finally:
        backend.close()
    if completion.finish_reason and completion.finish_reason.startswith("error:"):
        return replace(fallback, reason=f"LLM endpoint refused the request ({completion.finish_reason})")
    text = _reply_text(completion.text)
    problem = check_reply(text, result)
    if problem is not None:
        return replace(fallback, reason=f"LLM answer rejected: {problem}")
    cited = _citations(result, set(_numbers(text)))
    return Answer(text, cited, fallback.scope, True, source="llm", result=result)
