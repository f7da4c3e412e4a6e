"""The answer stage: multiple-choice accuracy through an OpenAI-compatible chat endpoint (e.g. a vLLM server).

The paper's protocol (TA-RAG §4): retrieval sees only the question; the generator sees the retrieved
context, in chronological order (or in rank order, for the "no chronological structuring" ablation), the
question and the options, and answers with one option letter. Runs only when an endpoint URL is given.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from diachron.schemas.evidence import Evidence

from bench.eval.data import Question

__all__ = ["AnswerConfig", "ask", "prompt"]

_LETTER = re.compile(r"\b([A-D])\b")


@dataclass(frozen=True, slots=True)
class AnswerConfig:
    """Endpoint base URL (``…/v1``), model name, request timeout in seconds, and max answer tokens."""

    url: str
    model: str
    timeout: float = 120.0
    max_tokens: int = 16


def prompt(question: Question, evidence: Sequence[Evidence]) -> str:
    """The generator's prompt: numbered context (in the given order), question, options, answer format."""
    context = "\n".join(
        f"[{n}] ({e.published_at:%Y-%m-%d}) {e.text}" if e.published_at else f"[{n}] {e.text}"
        for n, e in enumerate(evidence, 1)
    )
    options = "\n".join(f"{letter}. {text}" for letter, text in sorted(question.options.items()))
    return (
        f"Context:\n{context}\n\nQuestion: {question.text}\nOptions:\n{options}\n\n"
        "Answer with the letter of the correct option only."
    )


#: the reply's JSON schema (vLLM structured outputs): one option letter
LETTER_SCHEMA = {
    "type": "object",
    "properties": {"letter": {"type": "string", "enum": ["A", "B", "C", "D"]}},
    "required": ["letter"],
}


def ask(config: AnswerConfig, text: str) -> str | None:
    """The option letter the model answers to ``text`` (``None`` if it gives none).

    The request goes through :class:`diachron.temporal.llm_backends.OpenAIHTTPBackend` (the project's one
    chat client: timeouts, retries on 5xx and connection errors) with the reply held to
    :data:`LETTER_SCHEMA`; a reply that is not that JSON is searched for a lone letter.

    Raises:
        LLMBackendError: the endpoint is unreachable or keeps failing (5xx) after the retries.
    """
    from diachron.temporal.llm_backends import OpenAIHTTPBackend

    backend = OpenAIHTTPBackend(config.url, config.model, timeout_s=config.timeout)
    try:
        (completion,) = backend.generate(
            [[{"role": "user", "content": text}]],
            schema=LETTER_SCHEMA,
            max_tokens=config.max_tokens,
            temperature=0.0,
        )
    finally:
        backend.close()
    try:
        letter = json.loads(completion.text).get("letter")
    except (ValueError, AttributeError):
        letter = None
    if letter in ("A", "B", "C", "D"):
        return letter
    match = _LETTER.search(completion.text or "")
    return match.group(1) if match else None
