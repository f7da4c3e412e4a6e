"""The root of diachron's error hierarchy, tagged transient (retry) or terminal (fail fast, fix the input).

    DiachronError
    ├── TransientError   — retrying the same work can succeed (a lost worker, a commit conflict, a timeout)
    └── TerminalError    — retrying cannot help
        └── ConfigError  — bad configuration; the message names the setting and the accepted values

Each package subclasses these (``diachron.ingest.errors``, ``diachron.retrieval.errors``); every error
pickles cleanly (Ray moves them between processes) and says how to fix the problem.
"""

from __future__ import annotations

__all__ = ["ConfigError", "DiachronError", "TerminalError", "TransientError"]


class DiachronError(Exception):
    """Base of all diachron errors; ``transient`` says whether a retry can help."""

    transient: bool = False


class TransientError(DiachronError):
    transient = True


class TerminalError(DiachronError):
    transient = False


class ConfigError(TerminalError, ValueError):
    """Invalid configuration; the message names the setting and the accepted values."""
