"""Checks on a question's inputs at the application edge (CLI and service): one-line errors, never tracebacks.

Every check raises :class:`QueryInputError` (a ``ValueError``) whose message names the input and says
what is expected, so the CLI prints it and the service answers 400 with it.
"""

from __future__ import annotations

from datetime import datetime

from diachron.schemas.time import parse_instant

__all__ = ["MAX_K", "QueryInputError", "check_k", "check_question", "parse_clock"]

#: largest top-k the edges accept
MAX_K = 100


class QueryInputError(ValueError):
    """A question, clock or top-k the edge refuses; the message is one line, fit to show a user."""


def check_question(question: str | None) -> str:
    """The question stripped; refuses an empty or blank one (it would rank arbitrary chunks).

    Raises:
        QueryInputError: the question is missing, blank or longer than ``MAX_QUESTION_CHARS`` (4,000).
    """
    from diachron.retrieval.intent import MAX_QUESTION_CHARS

    text = (question or "").strip()
    if not text:
        raise QueryInputError(
            "the question is empty: ask something, e.g. 'How did IBM stock do in March 2011?'"
        )
    if len(text) > MAX_QUESTION_CHARS:
        raise QueryInputError(
            f"the question has {len(text):,} characters: at most {MAX_QUESTION_CHARS:,} are read; shorten it"
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
            f"{name} must be an ISO-8601 instant such as 2024-05-01T00:00:00Z ({exc})"
        ) from None


def check_k(k: int) -> int:
    """``k`` when ``1 <= k <= MAX_K``.

    Raises:
        QueryInputError: out of range.
    """
    if not 1 <= int(k) <= MAX_K:
        raise QueryInputError(f"k must be between 1 and {MAX_K}, got {k}")
    return int(k)
