"""The stages' base class and the named columns that pass rows between them.

A stage is a callable class for ``Dataset.map_batches`` (heavy state built once per actor in ``__init__``)
taking and returning ``pyarrow.Table`` batches. It declares the input columns it reads in ``REQUIRES``;
:class:`Stage` checks them on the first non-empty batch and refuses a batch that lacks any with one line
naming the stage and the missing columns (:class:`StageInputError`), as Ray Data LLM's stages do.

Rows between the stages (:data:`ANNOTATED_SCHEMA`) say what they are in :data:`ROW_KIND`:

- ``chunk``: a chunk of an annotated document (embedded, validated, written to ``chunks``);
- ``document``: one per annotate batch with a staging area, carrying the staged ``documents`` fragments
  (:data:`STAGED_DOCUMENTS`) and no text;
- ``failed``: a document whose annotation failed (its quarantine entry in :data:`PENDING_QUARANTINE`);
- ``rejected``: a chunk a later stage turned away (embedding failed, chunk validation failed): quarantined
  with its reason, not written.

The embed stage adds ``vector`` and :data:`EMBED_NODE`. The written
tables' schemas (:mod:`diachron.schemas.records`) are not these: the last step picks their fields.
"""

from __future__ import annotations

from typing import ClassVar

import pyarrow as pa
from diachron.ingest.errors import TerminalIngestError
from diachron.schemas.records import INTERVAL_TYPE

__all__ = [
    "ANNOTATED_SCHEMA",
    "CHUNK",
    "DOCUMENT",
    "EMBED_NODE",
    "FAILED",
    "PENDING_QUARANTINE",
    "REJECTED",
    "ROW_KIND",
    "STAGED_DOCUMENTS",
    "Stage",
    "StageInputError",
    "is_record_fault",
]

#: column naming what a row is: :data:`CHUNK`, :data:`DOCUMENT`, :data:`FAILED` or :data:`REJECTED`
ROW_KIND = "row_kind"
CHUNK, DOCUMENT, FAILED, REJECTED = "chunk", "document", "failed", "rejected"
#: JSON list of ``{"stage", "reason", "payload"}`` quarantine entries a row carries to the last step
PENDING_QUARANTINE = "pending_quarantine"
#: JSON ``{"documents": [fragment metadata], "documents_staged": n}`` on a ``document`` row
STAGED_DOCUMENTS = "staged_documents"
#: the Ray node that embedded the row (a diagnostic: ``RunSummary.embed_nodes``)
EMBED_NODE = "embed_node"

TS = pa.timestamp("us", tz="UTC")
#: rows out of the annotate stage (no vector yet)
ANNOTATED_SCHEMA = pa.schema(
    [
        (ROW_KIND, pa.string()),
        ("chunk_id", pa.string()),
        ("doc_id", pa.string()),
        ("series_id", pa.string()),
        ("seq", pa.int64()),
        ("text", pa.string()),
        ("token_count", pa.int64()),
        ("published_at", TS),
        ("intervals", pa.list_(INTERVAL_TYPE)),
        ("event_start", TS),
        ("event_end", TS),
        ("time_source", pa.string()),
        ("time_status", pa.string()),
        ("valid_from", TS),
        ("valid_until", TS),
        ("annotator", pa.string()),
        ("published_at_source", pa.string()),
        ("abstract", pa.string()),
        (PENDING_QUARANTINE, pa.string()),
        (STAGED_DOCUMENTS, pa.string()),
    ]
)


class StageInputError(TerminalIngestError):
    """A stage got a batch without the columns it declares in ``REQUIRES`` (a wiring bug: terminal).

    Attributes:
        stage: the stage's class name.
        missing: the missing column names, in ``REQUIRES`` order.
    """

    def __init__(self, message: str = "", *, stage: str | None = None, missing: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.stage, self.missing = stage, tuple(missing)

    @classmethod
    def of(cls, stage: str, missing: tuple[str, ...]) -> StageInputError:
        """The error for ``stage`` missing the columns ``missing`` (one line naming both)."""
        return cls(
            f"{stage}: input batch lacks required column(s) {', '.join(missing)}",
            stage=stage,
            missing=missing,
        )


class Stage:
    """Base of the pipeline's stages: checks ``REQUIRES`` on the first non-empty batch, then ``process``.

    Subclasses set ``REQUIRES`` (input column names) and implement :meth:`process`; a stage whose inputs
    depend on its configuration overrides :meth:`requires`.
    """

    REQUIRES: ClassVar[tuple[str, ...]] = ()
    _inputs_checked = False

    def requires(self) -> tuple[str, ...]:
        """The input columns this stage reads (default ``REQUIRES``)."""
        return self.REQUIRES

    def __call__(self, batch: pa.Table) -> pa.Table:
        if not self._inputs_checked and batch.num_rows:
            missing = tuple(c for c in self.requires() if c not in batch.schema.names)
            if missing:
                raise StageInputError.of(type(self).__name__, missing)
            self._inputs_checked = True
        return self.process(batch)

    def process(self, batch: pa.Table) -> pa.Table:
        """One batch in, one batch out (subclasses)."""
        raise NotImplementedError


def is_record_fault(exc: BaseException) -> bool:
    """True for a failure that belongs to one record: any ``Exception``, or a Rust panic surfacing through
    pyo3 (``PanicException`` derives from ``BaseException``); False for interrupts and exits."""
    if isinstance(exc, Exception):
        return True
    return type(exc).__name__ == "PanicException"
