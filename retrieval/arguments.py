"""Checks on the Python API's keyword arguments (local and remote :class:`~diachron.retrieval.client.Client`).

A wrong type fails at the call with a :class:`~diachron.schemas.errors.ConfigError` (a ``ValueError``)
naming the argument, not deep inside with an ``AttributeError``.
"""

from __future__ import annotations

from datetime import date, datetime

from diachron.schemas.errors import ConfigError
from diachron.schemas.time import to_utc

__all__ = ["clock_argument"]


def clock_argument(value: object, name: str) -> datetime | None:
    """``value`` as an aware UTC datetime (naive = UTC, a ``date`` = its midnight UTC); ``None`` stays
    ``None``.

    Raises:
        ConfigError: ``value`` is no ``datetime``/``date`` (e.g. the string ``"garbage"``), or lies
            outside the years 1–9999 once in UTC; the message names ``name``.
    """
    if value is None:
        return None
    if not isinstance(value, (datetime, date)):
        shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
        hint = " (parse ISO-8601 text first: datetime.fromisoformat(...))" if isinstance(value, str) else ""
        raise ConfigError(
            f"{name} must be a datetime (aware, or naive = UTC), got {type(value).__name__} {shown}{hint}"
        )
    try:
        return to_utc(value)
    except OverflowError:
        raise ConfigError(f"{name}={value.isoformat()} lies outside the years 1-9999 in UTC") from None
