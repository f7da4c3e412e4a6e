"""Checks on a question's inputs at the application edge (CLI and service): one-line errors, never tracebacks.

Every check raises :class:`~diachron.schemas.errors.QueryInputError` (a ``TerminalError`` and a
``ValueError``; ``field`` names the input) whose message names the input and says what is expected, so the
CLI prints it and the service answers 400 with it. The service's ``k`` is bounded by ``MAX_K`` in its
request model.
"""

from __future__ import annotations

from datetime import datetime

from diachron.schemas.errors import QueryInputError
from diachron.schemas.time import parse_instant

__all__ = ["MAX_K", "QueryInputError", "check_question", "parse_clock"]

#: largest top-k the edges accept
MAX_K = 100


def check_question(question: str | None) -> str:
    """The question stripped; refuses an empty or blank one (it would rank arbitrary chunks).

    Raises:
        QueryInputError: the question is missing, blank or longer than ``MAX_QUESTION_CHARS`` (4,000).
    """
    from diachron.retrieval.intent import MAX_QUESTION_CHARS

    text = (question or "").strip()
    if not text:
        raise QueryInputError(
            "the question is empty: ask something, e.g. 'How did IBM stock do in March 2011?'",
            field="question",
        )
    if len(text) > MAX_QUESTION_CHARS:
        raise QueryInputError(
            f"the question has {len(text):,} characters: at most {MAX_QUESTION_CHARS:,} are read; shorten it",
            field="question",
        )
    return text


def parse_clock(value: str | None, name: str) -> datetime | None:
    """An ISO-8601 instant (``Z`` or an offset) as aware UTC, ``None`` when absent or blank.

    Raises:
        QueryInputError: not ISO-8601, or outside the years 1–9999 once in UTC.
    """
    if value is None or not str(value).strip():
        return None
    try:
        return parse_instant(str(value))
    except ValueError as exc:
        raise QueryInputError(
            f"{name} must be an ISO-8601 instant such as 2024-05-01T00:00:00Z ({exc})", field=name.lstrip("-")
        ) from None
