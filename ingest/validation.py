"""Validation of annotated chunks and their intervals with Great Expectations (DESIGN.md, "Validation").

Two suites run on every batch: one over chunk rows (required fields, non-empty text, a known time
source), one over the exploded event intervals (``start < end``; bounds sane relative to publication
time; an interval *as written* spans at most ``max_span_years``). A failing interval is removed from its
chunk and quarantined with the failed expectation as its reason; a failing chunk is quarantined whole.
Nothing is dropped silently.

The span cap is what keeps text from dictating time (issue 13): "this document is valid from 1900 to
2100" in one sentence would make the chunk an answer for every year of two centuries; such an interval
is flagged and the chunk falls back to its other intervals or its publication day. The cap applies to
intervals read from one expression (``provenance`` null); a span whose bound ingest derived from the
document's timeline (``inferred:…``) is not one sentence's claim and is not capped.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

__all__ = ["ValidationConfig", "Validator"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ValidationConfig:
    """Bounds for event intervals (UTC).

    Attributes:
        earliest: no interval may start before this instant.
        max_years_after_publication: an interval must start at most this many years after its
            document's publication time (a 2199 "year" in a 1930 text is a misread number).
        max_span_years: an interval read from one expression may span at most this many years
            (``[1900, 2101)`` from "from 1900 to 2100" spans 201); ``end <= start + max_span_years``.
    """

    earliest: datetime = datetime(1000, 1, 1, tzinfo=UTC)
    max_years_after_publication: int = 100
    max_span_years: int = 100


class Validator:
    """Runs the Great Expectations suites over pandas frames; cheap to build, GX loads on first use."""

    def __init__(self, config: ValidationConfig | None = None) -> None:
        self.config = config or ValidationConfig()
        self._gx: Any = None
        self._context: Any = None
        self._n = 0

    def warm_up(self) -> None:
        """Import Great Expectations and build the ephemeral context (≈6 s on 2 cores)."""
        self._ensure()

    def _ensure(self) -> None:
        if self._context is not None:
            return
        os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
        import great_expectations as gx

        self._gx = gx
        self._context = gx.get_context(mode="ephemeral")
        self._context.variables.progress_bars = {"globally": False}

    def _unexpected(self, frame: Any, expectations: list[Any]) -> dict[int, list[str]]:
        """Row index -> names of the expectations that row failed."""
        if frame.empty:
            return {}
        self._n += 1
        source = self._context.data_sources.add_pandas(f"src{self._n}")
        asset = source.add_dataframe_asset("frame")
        batch = asset.add_batch_definition_whole_dataframe("all").get_batch(batch_parameters={"dataframe": frame})
        failures: dict[int, list[str]] = {}
        for expectation in expectations:
            result = batch.validate(expectation, result_format={"result_format": "COMPLETE"})
            if result.success:
                continue
            name = type(expectation).__name__ + _describe(expectation)
            for idx in result.result.get("unexpected_index_list") or []:
                row = idx if isinstance(idx, int) else int(next(iter(idx.values())) if isinstance(idx, dict) else idx)
                failures.setdefault(row, []).append(name)
        return failures

    def check_chunks(self, frame: Any) -> dict[int, list[str]]:
        """Failed chunk rows of a frame with columns chunk_id, doc_id, text, time_source."""
        self._ensure()
        e = self._gx.expectations
        return self._unexpected(frame, [
            e.ExpectColumnValuesToNotBeNull(column="chunk_id"),
            e.ExpectColumnValuesToNotBeNull(column="doc_id"),
            e.ExpectColumnValueLengthsToBeBetween(column="text", min_value=1),
            e.ExpectColumnValuesToBeInSet(column="time_source", value_set=["event", "inherited:section",
                                                                          "inherited:document", "published", "unknown"]),
        ])

    def check_intervals(self, frame: Any) -> dict[int, list[str]]:
        """Failed interval rows of a frame.

        Args:
            frame: pandas frame with columns ``start``, ``end``, ``latest_start`` (UTC, nullable) and
                optionally ``provenance`` (null = as written; others are exempt from the span cap).

        Returns:
            Row position -> names of the failed expectations (the span cap reads
            ``…(column_A=widest_end, column_B=end)``).
        """
        self._ensure()
        e = self._gx.expectations
        return self._unexpected(frame.assign(widest_end=self._widest_end(frame)), [
            e.ExpectColumnPairValuesAToBeGreaterThanB(column_A="end", column_B="start",
                                                      ignore_row_if="either_value_is_missing"),
            e.ExpectColumnValuesToBeBetween(column="start", min_value=self.config.earliest),
            e.ExpectColumnPairValuesAToBeGreaterThanB(column_A="latest_start", column_B="start", or_equal=True,
                                                      ignore_row_if="either_value_is_missing"),
            e.ExpectColumnPairValuesAToBeGreaterThanB(column_A="widest_end", column_B="end", or_equal=True,
                                                      ignore_row_if="either_value_is_missing"),
        ])

    def _widest_end(self, frame: Any) -> Any:
        """``start + max_span_years`` for intervals as written; missing (not checked) for derived ones."""
        import pandas as pd

        widest = frame["start"] + pd.DateOffset(years=self.config.max_span_years)
        if "provenance" in frame:
            widest = widest.where(frame["provenance"].isna())
        return widest


def _describe(expectation: Any) -> str:
    keys = ("column", "column_A", "column_B", "min_value", "value_set")
    parts = [f"{k}={getattr(expectation, k)}" for k in keys if getattr(expectation, k, None) is not None]
    return "(" + ", ".join(parts) + ")"
