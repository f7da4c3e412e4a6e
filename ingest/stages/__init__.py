"""Ray Data stages of the ingest pipeline, one module per stage on a small base (:mod:`.base`).

=====================  ================================================================================
module                 stage
=====================  ================================================================================
:mod:`.base`           :class:`Stage` (checks ``REQUIRES`` on the first batch), the row kinds and columns
:mod:`.config`         :class:`StageConfig`, :func:`check_stage_config`, :func:`build_annotator`
:mod:`.annotate`       :class:`AnnotateStage`: documents -> annotated chunks (:func:`annotate_document`)
:mod:`.embed`          :class:`EmbedStage`: adds ``vector``
:mod:`.validate`       :class:`ValidateStage`: Great Expectations checks of intervals and chunks
:mod:`.block`          :func:`stage_block`: a block's chunk and quarantine rows as staged fragments
:mod:`.quarantine`     quarantine rows and their deterministic ids
=====================  ================================================================================

Each stage is a callable class for ``Dataset.map_batches`` (heavy state built once per actor) taking and
returning ``pyarrow.Table`` batches. A failure that belongs to one record (an exception or a Rust panic)
quarantines that record with its stage and reason, never the batch. With a
:class:`~diachron.ingest.staging.Staging` area, the annotate stage writes the document rows of its batch
and :func:`stage_block` (the last step) writes the chunk and quarantine rows, as Lance fragments, on the
worker; only fragment metadata and counts travel back to the driver.
"""

from __future__ import annotations

from diachron.ingest.annotation.document import (
    SEGMENT_CHARS,
    annotate_document,
    chunk_time,
    document_times,
    hull,
)
from diachron.ingest.stages.annotate import AnnotateStage
from diachron.ingest.stages.base import (
    ANNOTATED_SCHEMA,
    CHUNK,
    DOCUMENT,
    FAILED,
    REJECTED,
    ROW_KIND,
    Stage,
    StageInputError,
    is_record_fault,
)
from diachron.ingest.stages.block import stage_block
from diachron.ingest.stages.config import StageConfig, build_annotator, check_stage_config
from diachron.ingest.stages.embed import EmbedStage
from diachron.ingest.stages.quarantine import quarantine_id, quarantine_row
from diachron.ingest.stages.validate import ValidateStage

#: the annotate stage's output schema (its former name)
CHUNK_STAGE_SCHEMA = ANNOTATED_SCHEMA

__all__ = [
    "ANNOTATED_SCHEMA",
    "CHUNK",
    "CHUNK_STAGE_SCHEMA",
    "DOCUMENT",
    "FAILED",
    "REJECTED",
    "ROW_KIND",
    "SEGMENT_CHARS",
    "AnnotateStage",
    "EmbedStage",
    "Stage",
    "StageConfig",
    "StageInputError",
    "ValidateStage",
    "annotate_document",
    "build_annotator",
    "check_stage_config",
    "chunk_time",
    "document_times",
    "hull",
    "is_record_fault",
    "quarantine_id",
    "quarantine_row",
    "stage_block",
]
