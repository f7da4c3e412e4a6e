"""The LLM two-stage annotator (the ``vllm`` backend): prompts, JSON schemas, parsing, cross-checks, fallback.

Stage 1 (per document) reads the title and the first and last segments and answers
``{"published": "YYYY-MM-DD"|null, "confidence": 0..1, "abstract": str}``. Stage 2 (per chunk, batched)
reads the chunk with the stage-1 context and answers ``{"events": [{"description", "entities", "start",
"end", "granularity"}]}``. The answers are fixed by :data:`STAGE1_SCHEMA` / :data:`STAGE2_SCHEMA` (array and
string lengths capped) and enforced by vLLM structured outputs, then validated again here (jsonschema).

Robustness: an answer that is empty, truncated or invalid is asked again once (twice the token budget,
some temperature); if it fails again that chunk (or document) falls back to the rule annotator and its
``annotator`` says so: ``rules(fallback:vllm:<model>:p1)``; a good answer is ``vllm:<model>:p1``. Every
LLM interval is cross-checked against the dates the rule tagger finds in the same chunk and against the
publication time: within :class:`LLMPolicy` tolerances it is kept; beyond them it is left out of the
chunk and becomes a flag (a quarantine row with the reason). The rule tagger's dates that no kept LLM
interval covers are added, so an LLM that misses a written date never loses it. Intervals are half-open
UTC ``[start, end)``.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

from diachron.ingest.annotation.base import Annotator, ChunkAnnotation, DocumentAnnotation, DocumentContext
from diachron.ingest.errors import ConfigError
from diachron.schemas.errors import LLMOutputError  # re-exported: the tree is drawn there
from diachron.schemas.time import Granularity, Interval, format_instant, parse_instant, period
from diachron.temporal.llm_backends import PENDING, Completion, LLMBackend, build_backend

__all__ = [
    "PROMPT_VERSION",
    "AnswerPending",
    "STAGE1_SCHEMA",
    "STAGE2_SCHEMA",
    "Event",
    "LLMAnnotator",
    "LLMOutputError",
    "LLMPolicy",
    "Stage1Answer",
    "build_llm_annotator",
    "check_interval",
    "precompute_answers",
    "parse_stage1",
    "parse_stage2",
]

log = logging.getLogger(__name__)

PROMPT_VERSION = "p1"
MAX_EVENTS = 4
DATE = {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"}
GRAINS = ["day", "month", "quarter", "year", "decade"]
STAGE1_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["published", "confidence", "abstract"],
    "properties": {
        "published": {"anyOf": [DATE, {"type": "null"}]},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "abstract": {"type": "string", "maxLength": 300},
    },
}
#: interval kinds of stage 2 (the rule annotator's, :mod:`diachron.ingest.annotation.spans`); optional,
#: default event.
STAGE2_KINDS = ["event", "state", "state_start", "state_end", "mention"]
STAGE2_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["events"],
    "properties": {
        "events": {
            "type": "array",
            "maxItems": MAX_EVENTS,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["description", "entities", "start", "end", "granularity"],
                "properties": {
                    "description": {"type": "string", "maxLength": 100},
                    "entities": {
                        "type": "array",
                        "maxItems": 3,
                        "items": {"type": "string", "maxLength": 40},
                    },
                    "start": DATE,
                    "end": {"anyOf": [DATE, {"type": "null"}]},
                    "granularity": {"enum": GRAINS},
                    "kind": {"enum": STAGE2_KINDS},
                },
            },
        }
    },
}

_SYSTEM = (
    "You annotate time in documents for a time-aware search index. Answer with one JSON object only. "
    "Dates are ISO YYYY-MM-DD in UTC. Never invent dates that the text does not state or imply."
)
_STAGE1 = """Document title: {title}
Publication time from metadata: {published}

Beginning of the document:
<<<{first}>>>

End of the document:
<<<{last}>>>

Task: estimate when this document was published ("published", YYYY-MM-DD, or null if the text gives no
clue), how sure you are ("confidence", 0 to 1), and summarise it in one or two sentences ("abstract")."""
_STAGE2 = """Document published: {published}
Document summary: {abstract}

Passage:
<<<{text}>>>

Task: list the events this passage describes that have a time (at most {max_events}). For each give a short
"description", the "entities" involved, and when it happened: "start" is the first day; "end" is the day
AFTER the last day, or null for exactly one period of "granularity" (day, month, quarter, year, decade)
starting at "start". Say what "kind" of time it is: "event" (happened within it), "state" (holds over
it: "from 1965 to 1975"), "state_start" (a state begins and holds afterwards: "became", "joined", "since"),
"state_end" (a state ends: "until", "left", "resigned"), "mention" (a date named in passing). Resolve
relative expressions ("last year", "the quarter after the merger") against the publication date. An
empty list is right when the passage has no dated event."""

T = TypeVar("T")


class AnswerPending(RuntimeError):
    """Stage 1 of a document waits for an answer a recording backend has not got yet (see
    :func:`precompute_answers`): stage 2 cannot be asked before it."""


@dataclass(frozen=True, slots=True)
class Stage1Answer:
    """Parsed stage-1 answer: ``published`` (aware UTC midnight or None), ``confidence`` 0..1, abstract."""

    published: datetime | None
    confidence: float
    abstract: str


@dataclass(frozen=True, slots=True)
class Event:
    """One stage-2 event: ``interval`` half-open UTC, or None with ``problem`` saying why it is unusable."""

    description: str
    entities: tuple[str, ...]
    interval: Interval | None
    problem: str | None = None
    kind: str = "event"


@dataclass(frozen=True, slots=True)
class LLMPolicy:
    """How the annotator asks and checks.

    Attributes:
        batch_size: chunks per engine call (the engine batches them continuously).
        max_tokens_document: answer budget of stage 1, tokens (doubled on the retry).
        max_tokens_chunk: answer budget of stage 2, tokens (doubled on the retry).
        retry_temperature: sampling temperature of the one retry (the first try is greedy).
        date_tolerance: most distance between an LLM interval and the nearest date the rule tagger found
            in the same chunk; beyond it the interval is flagged and left out.
        future_tolerance: most time an LLM interval may start after the publication time (forecasts).
        max_span: longest plausible event interval (a model may answer "[1558, 2015)" for "since 2015").
        min_confidence: least stage-1 confidence for an LLM publication time to be used.
        segment_chars: most characters of a chunk or segment put in a prompt.
    """

    batch_size: int = 16
    max_tokens_document: int = 160
    max_tokens_chunk: int = 256
    retry_temperature: float = 0.6
    date_tolerance: timedelta = timedelta(days=31)
    future_tolerance: timedelta = timedelta(days=366)
    max_span: timedelta = timedelta(days=3653)
    min_confidence: float = 0.5
    segment_chars: int = 2000


def _load(text: str, schema: dict[str, Any]) -> dict[str, Any]:
    import jsonschema

    try:
        data = json.loads(text)
        jsonschema.validate(data, schema)
    except json.JSONDecodeError as exc:
        raise LLMOutputError(f"not JSON: {exc}") from exc
    except jsonschema.ValidationError as exc:
        raise LLMOutputError(f"schema violation at {list(exc.absolute_path)}: {exc.message}") from exc
    return data


def parse_stage1(text: str) -> Stage1Answer:
    """Parse a stage-1 answer.

    Raises:
        LLMOutputError: not JSON, not :data:`STAGE1_SCHEMA`, or ``published`` is not a calendar date.
    """
    data = _load(text, STAGE1_SCHEMA)
    try:
        published = parse_instant(data["published"]) if data["published"] else None
    except ValueError as exc:
        raise LLMOutputError(f"published: {exc}") from exc
    return Stage1Answer(published, float(data["confidence"]), data["abstract"].strip())


def parse_stage2(text: str) -> list[Event]:
    """Parse a stage-2 answer; events whose dates are impossible keep ``interval=None`` and a ``problem``.

    ``end`` is exclusive; ``end=null`` means one whole period of ``granularity`` from ``start``, and so does
    ``end == start`` (models often write a one-day event with an inclusive end).

    Raises:
        LLMOutputError: not JSON or not :data:`STAGE2_SCHEMA`.
    """
    events = []
    for raw in _load(text, STAGE2_SCHEMA)["events"]:
        grain = Granularity(raw["granularity"])
        try:
            start = parse_instant(raw["start"])
            end = parse_instant(raw["end"]) if raw["end"] else None
            interval = (
                Interval(start, end, grain) if end is not None and end != start else period(start, grain)
            )
            problem = None
        except ValueError as exc:
            interval, problem = None, f"invalid interval {raw['start']}..{raw['end']}: {exc}"
        events.append(
            Event(raw["description"], tuple(raw["entities"]), interval, problem, raw.get("kind", "event"))
        )
    return events


def _gap(a: Interval, b: Interval) -> timedelta:
    if a.overlaps(b):
        return timedelta(0)
    if a.end is not None and b.start is not None and a.end <= b.start:
        return b.start - a.end
    return a.start - b.end  # type: ignore[operator]


def check_interval(
    interval: Interval, *, explicit: Sequence[Interval], published: datetime | None, policy: LLMPolicy
) -> str | None:
    """Why an LLM interval disagrees beyond the policy's bounds, or ``None`` when it is acceptable.

    Checks: at most ``max_span`` long, within ``date_tolerance`` of some rule-tagger interval of the same
    chunk (when there are any), and starting at most ``future_tolerance`` after ``published`` (when known).
    """
    if interval.duration is not None and interval.duration > policy.max_span:
        return (
            f"llm interval {interval} spans {interval.duration.days} days (bound {policy.max_span.days} days)"
        )
    if explicit:
        gap = min(_gap(interval, e) for e in explicit)
        if gap > policy.date_tolerance:
            return (
                f"llm interval {interval} is {gap.days} days from the chunk's explicit dates "
                f"{', '.join(map(str, explicit))} (bound {policy.date_tolerance.days} days)"
            )
    if (
        published is not None
        and interval.start is not None
        and interval.start - published > policy.future_tolerance
    ):
        return (
            f"llm interval {interval} starts {(interval.start - published).days} days after publication "
            f"{format_instant(published)} (bound {policy.future_tolerance.days} days)"
        )
    return None


@dataclass(slots=True)
class LLMAnnotator:
    """Two-stage annotator over an :class:`~diachron.temporal.llm_backends.LLMBackend`; see the module doc.

    Args:
        backend: the engine (Ray actor or HTTP server).
        fallback: the rule annotator, used for cross-checks and when the LLM fails.
        policy: batching, budgets and tolerances.
    """

    backend: LLMBackend
    fallback: Annotator
    policy: LLMPolicy = field(default_factory=LLMPolicy)
    name: str = ""
    stats: dict[str, float] = field(
        default_factory=lambda: {"requests": 0, "tokens": 0, "seconds": 0.0, "fallbacks": 0}
    )
    pending: int = 0

    def __post_init__(self) -> None:
        self.name = self.name or f"vllm:{Path(self.backend.model_name).name}:{PROMPT_VERSION}"

    @property
    def fallback_name(self) -> str:
        return f"{self.fallback.name}(fallback:{self.name})"

    def annotate_document(self, doc: DocumentContext) -> DocumentAnnotation:
        """Stage 1: metadata publication time wins; else the LLM's if confident and near the rules' dateline.

        Raises:
            AnswerPending: a recording backend has no stage-1 answer yet.
        """
        rules = self.fallback.annotate_document(doc)
        cut = self.policy.segment_chars
        prompt = _STAGE1.format(
            title=doc.title or "(none)",
            first=doc.first_segment[:cut],
            last=doc.last_segment[-cut:],
            published=format_instant(doc.published_at) or "unknown",
        )
        self.pending = 0
        answer = self._ask([prompt], STAGE1_SCHEMA, parse_stage1, self.policy.max_tokens_document)[0]
        if answer is None and self.pending:
            raise AnswerPending(f"{doc.doc_id}: stage-1 answer not there yet")
        if answer is None:
            return replace(rules, annotator=self.fallback_name)
        published, source = rules.published_at, rules.published_at_source
        if source != "metadata" and answer.published and answer.confidence >= self.policy.min_confidence:
            near = published is None or abs(answer.published - published) <= self.policy.date_tolerance
            if near:
                published, source = answer.published, "llm"
            else:
                log.warning(
                    "%s: llm publication %s far from dateline %s; kept the dateline",
                    doc.doc_id,
                    format_instant(answer.published),
                    format_instant(published),
                )
        return DocumentAnnotation(published, source, answer.abstract or rules.abstract, self.name)

    def annotate_chunks(self, texts: list[str], *, doc: DocumentAnnotation) -> list[ChunkAnnotation]:
        """Stage 2 in batches of ``policy.batch_size``; one :class:`ChunkAnnotation` per text, in order."""
        rules = self.fallback.annotate_chunks(texts, doc=doc)
        cut = self.policy.segment_chars
        prompts = [
            _STAGE2.format(
                published=format_instant(doc.published_at) or "unknown",
                abstract=doc.abstract or "(none)",
                text=t[:cut],
                max_events=MAX_EVENTS,
            )
            for t in texts
        ]
        answers: list[list[Event] | None] = []
        for i in range(0, len(prompts), self.policy.batch_size):
            answers += self._ask(
                prompts[i : i + self.policy.batch_size],
                STAGE2_SCHEMA,
                parse_stage2,
                self.policy.max_tokens_chunk,
            )
        return [
            self._merge(events, rule, doc.published_at) for events, rule in zip(answers, rules, strict=True)
        ]

    def _merge(
        self, events: list[Event] | None, rule: ChunkAnnotation, published: datetime | None
    ) -> ChunkAnnotation:
        if events is None:
            self.stats["fallbacks"] += 1
            return replace(rule, annotator=self.fallback_name)
        intervals: list[Interval] = []
        texts: list[str | None] = []
        kinds: list[str] = []
        flags: list[str] = []
        for event in events:
            problem = event.problem or check_interval(
                event.interval,
                explicit=rule.intervals,  # type: ignore[arg-type]
                published=published,
                policy=self.policy,
            )
            if problem:
                flags.append(f"{self.name}: {problem} ({event.description[:80]!r})")
            else:
                intervals.append(event.interval)  # type: ignore[arg-type]
                texts.append(event.description)
                kinds.append(event.kind)
        rule_kinds = rule.kinds or ["event"] * len(rule.intervals)
        for interval, text, kind in zip(
            rule.intervals, rule.texts or [None] * len(rule.intervals), rule_kinds, strict=True
        ):
            if not any(interval.overlaps(kept) for kept in intervals):
                intervals.append(interval)
                texts.append(text)
                kinds.append(kind)
        return ChunkAnnotation(intervals, texts, self.name, flags, kinds)

    def _ask(
        self, prompts: list[str], schema: dict[str, Any], parse: Callable[[str], T], max_tokens: int
    ) -> list[T | None]:
        """One batched call, then one retry of the answers that were empty, truncated or invalid."""
        results: list[T | None] = [None] * len(prompts)
        pending = list(range(len(prompts)))
        for attempt, (budget, temperature) in enumerate(
            ((max_tokens, 0.0), (2 * max_tokens, self.policy.retry_temperature))
        ):
            if not pending:
                break
            completions = self._generate([prompts[i] for i in pending], schema, budget, temperature)
            failed = []
            for i, completion in zip(pending, completions, strict=True):
                if completion.finish_reason == PENDING:  # recording: asked later, in one batch
                    self.pending += 1
                    continue
                try:
                    results[i] = parse(_usable(completion))
                except LLMOutputError as exc:
                    log.info("llm answer %d unusable (try %d): %s", i, attempt + 1, exc)
                    failed.append(i)
            pending = failed
        return results

    def _generate(
        self, prompts: list[str], schema: dict[str, Any], max_tokens: int, temperature: float
    ) -> list[Completion]:
        conversations = [
            [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": p}] for p in prompts
        ]
        t0 = time.perf_counter()
        out = self.backend.generate(
            conversations, schema=schema, max_tokens=max_tokens, temperature=temperature
        )
        seconds = time.perf_counter() - t0
        tokens = sum(c.tokens for c in out)
        self.stats["requests"] += len(out)
        self.stats["tokens"] += tokens
        self.stats["seconds"] += seconds
        log.info(
            "%s: %d requests, %d tokens in %.1f s (%.1f tokens/s)",
            self.name,
            len(out),
            tokens,
            seconds,
            tokens / seconds if seconds else 0.0,
        )
        return out


def _usable(completion: Completion) -> str:
    if not completion.text.strip():
        raise LLMOutputError(f"empty answer (finish_reason={completion.finish_reason})")
    if completion.finish_reason != "stop":
        raise LLMOutputError(f"truncated answer (finish_reason={completion.finish_reason})")
    return completion.text


_POLICY_KEYS = {
    "batch_size": int,
    "max_tokens_document": int,
    "max_tokens_chunk": int,
    "retry_temperature": float,
    "min_confidence": float,
    "segment_chars": int,
}


def build_llm_annotator(options: Mapping[str, Any], *, fallback: Annotator) -> LLMAnnotator:
    """The ``vllm`` annotator from CLI/config options.

    Options: ``model`` (required: HF directory or name), backend options (see
    :func:`~diachron.temporal.llm_backends.build_backend`: ``url`` selects the HTTP backend), policy
    options (:class:`LLMPolicy` fields; ``date_tolerance_days``, ``future_tolerance_days`` in days).

    Raises:
        ConfigError: no ``model``, or an option of the wrong type.
    """
    opts = dict(options)
    try:
        policy = LLMPolicy(
            **{k: cast(opts.pop(k)) for k, cast in _POLICY_KEYS.items() if k in opts},
            **{
                k: timedelta(days=float(opts.pop(f"{k}_days")))
                for k in ("date_tolerance", "future_tolerance", "max_span")
                if f"{k}_days" in opts
            },
        )
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"bad vllm annotator option: {exc}") from exc
    return LLMAnnotator(build_backend(opts), fallback, policy)


#: rounds of :func:`precompute_answers`: stage 1; its retries and stage 2; their retries (x2)
MAX_ROUNDS = 4


def precompute_answers(
    docs: Any, config: Any, *, engine: Any = None, max_rounds: int = MAX_ROUNDS
) -> dict[str, Any]:
    """Ask every LLM question of a run through Ray Data LLM, batched across documents; annotator options
    under which the annotate stage actors replay the answers (no engine in them).

    Each round annotates the documents still waiting (the pipeline's own code,
    :func:`~diachron.ingest.annotation.document.annotate_document`) with a recording
    :class:`~diachron.temporal.llm_backends.ReplayBackend`, gathers the requests it could not answer and runs
    them all through one processor (:meth:`~diachron.temporal.llm_backends.RayDataLLMBackend.answer`).
    Round 1 asks stage 1 of every document; round 2 the stage-1 retries and stage 2 of every chunk; rounds
    3-4 the remaining retries. A run whose answers all parse needs two rounds (two engine start-ups).

    Args:
        docs: ``ray.data.Dataset`` of documents (doc_id, title, text, published_at).
        config: the :class:`~diachron.ingest.stages.StageConfig` (annotator ``vllm``).
        engine: what answers a round's requests (``answer(dataset) -> {key: Completion}``); ``None`` =
            the :class:`~diachron.temporal.llm_backends.RayDataLLMBackend` of ``config.annotator_options``.
        max_rounds: most processor runs; a request still missing after them falls back to the rules.

    Returns:
        ``config.annotator_options`` plus ``answers`` (a Ray ``ObjectRef`` to key -> Completion), or the
        options unchanged when the annotator is not ``vllm`` on Ray (``url`` set, or answers already there).

    Raises:
        LLMBackendError: a processor run failed.
    """
    import ray
    import ray.data

    options = dict(config.annotator_options)
    if config.annotator != "vllm" or "url" in options or "answers" in options:
        return options
    if engine is None:
        engine = build_backend({k: v for k, v in options.items() if _backend_key(k)})
        engine.batch_size = int(options.get("batch_size", LLMPolicy.batch_size))
    answers: dict[str, Completion] = {}
    waiting: Any = None  # doc ids still waiting; None = all
    for round_no in range(1, max_rounds + 1):
        requests = docs.map_batches(
            _RecordRequests,
            fn_constructor_args=(config, ray.put(answers), ray.put(waiting)),
            batch_format="pyarrow",
            batch_size=8,
            compute=ray.data.ActorPoolStrategy(min_size=1, max_size=_cpus()),
        ).materialize()
        count = requests.count()
        log.info("llm round %d: %d requests", round_no, count)
        if not count:
            break
        waiting = set(requests.unique("doc_id"))
        answers |= engine.answer(requests.drop_columns(["doc_id"]))
    return {**options, "answers": ray.put(answers)}


def _backend_key(key: str) -> bool:
    return key not in _POLICY_KEYS and not key.endswith("_days")


def _cpus() -> int:
    import ray

    return max(1, int(ray.cluster_resources().get("CPU", 1)))


def _request_schema() -> Any:
    import pyarrow as pa

    message = pa.struct([("role", pa.string()), ("content", pa.string())])
    params = pa.struct(
        [
            ("max_tokens", pa.int64()),
            ("temperature", pa.float64()),
            ("structured_outputs", pa.struct([("json", pa.string())])),
        ]
    )
    return pa.schema(
        [
            ("doc_id", pa.string()),
            ("key", pa.string()),
            ("budget", pa.int64()),
            ("messages", pa.list_(message)),
            ("sampling_params", params),
        ]
    )


class _RecordRequests:
    """Ray Data stage of :func:`precompute_answers`: documents -> the requests their annotation waits for."""

    def __init__(self, config: Any, answers: Any, waiting: Any) -> None:
        from diachron.ingest.annotation.document import build_chunker
        from diachron.ingest.stages import build_annotator

        options = {**config.annotator_options, "answers": answers}
        self.annotator = build_annotator(replace(config, annotator_options=options))
        self.annotator.backend.record = True
        self.chunker = build_chunker(config.embedder, config.max_tokens)
        self.waiting = _get(waiting)

    def __call__(self, batch: Any) -> Any:
        import pyarrow as pa
        from diachron.ingest.annotation.document import annotate_document

        rows: list[dict[str, Any]] = []
        backend = self.annotator.backend
        for doc in batch.select(["doc_id", "title", "text", "published_at"]).to_pylist():
            if self.waiting is not None and doc["doc_id"] not in self.waiting:
                continue
            backend.missing.clear()
            try:
                annotate_document(
                    doc["text"],
                    doc_id=doc["doc_id"],
                    title=doc["title"],
                    published_at=doc["published_at"],
                    annotator=self.annotator,
                    chunker=self.chunker,
                )
            except AnswerPending:
                pass
            except Exception as exc:  # the annotate stage quarantines it; nothing to ask
                log.info("llm requests of %s not gathered: %s", doc["doc_id"], exc)
            rows += [{"doc_id": doc["doc_id"], **r} for r in backend.missing.values()]
        return pa.Table.from_pylist(rows, schema=_request_schema())


def _get(ref: Any) -> Any:
    import ray

    return ray.get(ref)
