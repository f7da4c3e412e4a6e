"""The stage base (``REQUIRES`` checked on the first batch), row kinds, and per-record fault isolation."""

from __future__ import annotations

import pickle
from datetime import UTC, datetime

import pyarrow as pa
import pytest
from diachron.ingest.stages import (
    CHUNK,
    FAILED,
    AnnotateStage,
    Stage,
    StageConfig,
    StageInputError,
    is_record_fault,
)
from diachron.ingest.stages.base import PENDING_QUARANTINE, ROW_KIND


class _Echo(Stage):
    REQUIRES = ("a", "b", "c")

    def process(self, batch: pa.Table) -> pa.Table:
        return batch


def test_a_batch_without_a_required_column_is_refused_in_one_line() -> None:
    with pytest.raises(StageInputError) as caught:
        _Echo()(pa.table({"a": [1], "x": [2]}))
    assert str(caught.value) == "_Echo: input batch lacks required column(s) b, c"
    assert (caught.value.stage, caught.value.missing) == ("_Echo", ("b", "c"))
    again = pickle.loads(pickle.dumps(caught.value))  # Ray moves it between processes
    assert (str(again), again.stage, again.missing) == (str(caught.value), "_Echo", ("b", "c"))


def test_inputs_are_checked_on_the_first_non_empty_batch_only() -> None:
    stage = _Echo()
    assert stage(pa.table({"x": pa.array([], pa.int64())})).num_rows == 0  # empty: nothing to check yet
    assert stage(pa.table({"a": [1], "b": [2], "c": [3]})).num_rows == 1
    assert stage(pa.table({"a": [1]})).num_rows == 1  # checked once, like Ray Data LLM's stages


class PanicException(BaseException):  # the shape of pyo3's: a BaseException, not an Exception
    pass


def test_a_rust_panic_is_a_record_fault_an_interrupt_is_not() -> None:
    assert is_record_fault(ValueError("x"))
    assert is_record_fault(PanicException("called `Option::unwrap()` on a `None` value"))
    assert not is_record_fault(KeyboardInterrupt())
    assert not is_record_fault(SystemExit(1))


def _doc(doc_id: str, text: str | None) -> dict[str, object]:
    return {
        "doc_id": doc_id,
        "series_id": doc_id,
        "title": "",
        "text": text,
        "published_at": datetime(2015, 2, 22, tzinfo=UTC),
        "valid_from": None,
        "valid_until": None,
    }


def test_annotate_rows_name_their_kind_and_a_failed_document_does_not_stop_the_batch() -> None:
    stage = AnnotateStage(StageConfig(max_tokens=24))
    batch = pa.Table.from_pylist(
        [_doc("good", "Talks were put off until Monday."), _doc("bad", None), _doc("also", "It rained.")]
    )
    rows = stage(batch).to_pylist()
    assert [(r[ROW_KIND], r["doc_id"]) for r in rows] == [(CHUNK, "good"), (FAILED, "bad"), (CHUNK, "also")]
    assert [r["seq"] for r in rows] == [0, None, 0]  # no sentinel seq: the kind says it
    failed = rows[1][PENDING_QUARANTINE]
    assert '"stage": "annotate"' in failed and "annotation failed: TypeError" in failed
    monday = rows[0]["intervals"][0]
    assert (monday["start"], monday["end"]) == (
        datetime(2015, 2, 23, tzinfo=UTC),
        datetime(2015, 2, 24, tzinfo=UTC),
    )


def test_annotate_stage_with_staging_requires_the_document_fields() -> None:
    stage = AnnotateStage(StageConfig(max_tokens=24), staging=object(), run_id="r")
    with pytest.raises(StageInputError, match="AnnotateStage: .* content_sha256, source_timezone"):
        stage(pa.Table.from_pylist([_doc("good", "It rained.")]))


def test_ingest_config_is_frozen_and_copied_with_replace() -> None:
    import dataclasses

    from diachron.ingest.pipeline import IngestConfig

    config = IngestConfig(db_uri="data/x.lancedb")
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.batch_size = 4  # type: ignore[misc]
    other = dataclasses.replace(config, batch_size=4)
    assert (config.batch_size, other.batch_size, other.db_uri) == (16, 4, "data/x.lancedb")
