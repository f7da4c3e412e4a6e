"""Errors of the ingest package, tagged transient (retry) or terminal (fail fast, fix the input).

    IngestError
    ├── TransientIngestError      — retrying the same work can succeed
    │   ├── StoreConflictError    — a LanceDB commit conflict or I/O hiccup
    │   └── WorkerLostError       — a Ray worker or node went away
    └── TerminalIngestError       — retrying cannot help
        ├── ConfigError           — bad configuration (unknown annotator, bad fiscal calendar, …)
        └── EmbedderMismatchError — the index was built by another embedder

Every error pickles cleanly (Ray moves them between processes) and says how to fix the problem.
"""

from __future__ import annotations

__all__ = ["ConfigError", "EmbedderMismatchError", "IngestError", "StoreConflictError", "TerminalIngestError",
           "TransientIngestError", "WorkerLostError"]


class IngestError(Exception):
    """Base of all ingest errors; ``transient`` says whether a retry can help."""

    transient: bool = False


class TransientIngestError(IngestError):
    transient = True


class TerminalIngestError(IngestError):
    transient = False


class StoreConflictError(TransientIngestError):
    """A LanceDB commit failed (concurrent writer, object-store hiccup). Retry the task."""


class WorkerLostError(TransientIngestError):
    """A Ray worker died while processing a shard. Retry the task."""


class ConfigError(TerminalIngestError):
    """Invalid configuration; the message names the setting and the accepted values."""


class EmbedderMismatchError(TerminalIngestError):
    """The store was built with another embedder; re-index or pass the matching model."""
