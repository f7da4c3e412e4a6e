"""Errors of the ingest package, tagged transient (retry) or terminal (fail fast, fix the input).

Under :mod:`diachron.schemas.errors` (``DiachronError`` → ``TransientError`` / ``TerminalError``; its
``ConfigError``, a ``TerminalError``, is re-exported here):

    IngestError
    ├── TransientIngestError      — retrying the same work can succeed
    │   ├── StoreConflictError    — a LanceDB commit conflict or I/O hiccup
    │   └── WorkerLostError       — a Ray worker or node went away
    └── TerminalIngestError       — retrying cannot help
        ├── EmbedderMismatchError — the index was built by another embedder
        └── DatabaseRefusedError  — the ``--db`` is a file, read-only, or another application's database

Every error pickles cleanly (Ray moves them between processes) and says how to fix the problem.
"""

from __future__ import annotations

from diachron.schemas.errors import ConfigError, DiachronError, TerminalError, TransientError

__all__ = [
    "ConfigError",
    "DatabaseRefusedError",
    "EmbedderMismatchError",
    "IngestError",
    "StoreConflictError",
    "TerminalIngestError",
    "TransientIngestError",
    "WorkerLostError",
]


class IngestError(DiachronError):
    """Base of all ingest errors; ``transient`` says whether a retry can help."""


class TransientIngestError(IngestError, TransientError):
    transient = True


class TerminalIngestError(IngestError, TerminalError):
    transient = False


class StoreConflictError(TransientIngestError):
    """A LanceDB commit failed (concurrent writer, object-store hiccup). Retry the task."""


class WorkerLostError(TransientIngestError):
    """A Ray worker died while processing a shard. Retry the task."""


class EmbedderMismatchError(TerminalIngestError):
    """The store was built with another embedder; re-index or pass the matching model."""


class DatabaseRefusedError(TerminalIngestError):
    """The ``--db`` cannot hold a diachron index (a file, not writable, a foreign schema); checked before any
    write by :func:`diachron.ingest.preflight.check_database`. Give another directory."""
