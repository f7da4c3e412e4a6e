"""Validation of annotated chunks and their intervals with Great Expectations (docs/design.md, "Validation").

Two suites run on every batch: one over chunk rows (required fields, non-empty text, a known time
source), one over the exploded event intervals (``start < end``; bounds sane relative to publication
time; an interval *as written* spans at most ``max_span_years``). A failing interval is removed from its
chunk and quarantined; a failing chunk is quarantined whole. Nothing is dropped silently. Each failure is
a :class:`Failure`: one readable line with the offending values ("interval end before start:
[2015-03-01T00:00:00Z, 2015-02-01T00:00:00Z)"), ending with the Great Expectations expectation that caught
it in parentheses, which is also its ``expectation`` attribute.

The span cap is what keeps text from dictating time (issue 13): "this document is valid from 1900 to
2100" in one sentence would make the chunk an answer for every year of two centuries; such an interval
is flagged and the chunk falls back to its other intervals or its publication day. The cap applies to
intervals read from one expression (``provenance`` null); a span whose bound ingest derived from the
document's timeline (``inferred:…``) is not one sentence's claim and is not capped.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from diachron.schemas.time import format_instant

__all__ = ["Failure", "ValidationConfig", "Validator"]

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


class Failure(str):
    """One failed check of one row: a readable one-line reason (the ``str``), and ``expectation``, the
    Great Expectations expectation class that caught it (e.g. ``ExpectColumnPairValuesAToBeGreaterThanB``)."""

    expectation: str

    def __new__(cls, reason: str, expectation: str) -> Failure:
        line = " ".join(f"{reason} ({expectation})".split())
        failure = super().__new__(cls, line)
        failure.expectation = expectation
        return failure

    def __reduce__(self) -> tuple[Any, ...]:  # pickles (Ray moves batches' results between processes)
        return (_failure, (str(self), self.expectation))


def _failure(line: str, expectation: str) -> Failure:
    failure = str.__new__(Failure, line)
    failure.expectation = expectation
    return failure


#: (expectation, the reason for one failing row of the frame) pairs
_Check = tuple[Any, Callable[[Any], str]]


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

    def _unexpected(self, frame: Any, checks: list[_Check]) -> dict[int, list[Failure]]:
        """Row position -> the failures of that row (a readable reason each, naming its expectation)."""
        if frame.empty:
            return {}
        self._n += 1
        source = self._context.data_sources.add_pandas(f"src{self._n}")
        asset = source.add_dataframe_asset("frame")
        batch = asset.add_batch_definition_whole_dataframe("all").get_batch(
            batch_parameters={"dataframe": frame}
        )
        failures: dict[int, list[Failure]] = {}
        for expectation, reason in checks:
            result = batch.validate(expectation, result_format={"result_format": "COMPLETE"})
            if result.success:
                continue
            for idx in result.result.get("unexpected_index_list") or []:
                row = (
                    idx
                    if isinstance(idx, int)
                    else int(next(iter(idx.values())) if isinstance(idx, dict) else idx)
                )
                failures.setdefault(row, []).append(
                    Failure(reason(frame.iloc[row]), type(expectation).__name__)
                )
        return failures

    def check_chunks(self, frame: Any) -> dict[int, list[Failure]]:
        """Failed chunk rows of a frame with columns chunk_id, doc_id, text, time_source.

        Returns:
            Row position -> failures, e.g. ``"time_source 'guess' is none of event, inherited:section,
            inherited:document, published, unknown (ExpectColumnValuesToBeInSet)"``.
        """
        self._ensure()
        e = self._gx.expectations
        sources = ["event", "inherited:section", "inherited:document", "published", "unknown"]
        return self._unexpected(
            frame,
            [
                (e.ExpectColumnValuesToNotBeNull(column="chunk_id"), lambda row: "chunk without chunk_id"),
                (
                    e.ExpectColumnValuesToNotBeNull(column="doc_id"),
                    lambda row: f"chunk {row['chunk_id']} without doc_id",
                ),
                (
                    e.ExpectColumnValueLengthsToBeBetween(column="text", min_value=1),
                    lambda row: f"chunk {row['chunk_id']} has empty text",
                ),
                (
                    e.ExpectColumnValuesToBeInSet(column="time_source", value_set=sources),
                    lambda row: f"time_source {row['time_source']!r} is none of {', '.join(sources)}",
                ),
            ],
        )

    def check_intervals(self, frame: Any) -> dict[int, list[str]]:
        """Failed interval rows of a frame.

        Args:
            frame: pandas frame with columns ``start``, ``end``, ``latest_start`` (UTC, nullable) and
                optionally ``provenance`` (null = as written; others are exempt from the span cap).

        Returns:
            Row position -> failures, one readable line each with the interval, e.g. ``"interval end before
            start: [2015-03-01T00:00:00Z, 2015-02-01T00:00:00Z) (ExpectColumnPairValuesAToBeGreaterThanB)"``,
            ``"interval spans more than 100 years as written: [1900-01-01T00:00:00Z,
            2101-01-01T00:00:00Z) …"``.
        """
        self._ensure()
        e, c = self._gx.expectations, self.config
        earliest = format_instant(c.earliest)
        return self._unexpected(
            frame.assign(widest_end=self._widest_end(frame)),
            [
                (
                    e.ExpectColumnPairValuesAToBeGreaterThanB(
                        column_A="end", column_B="start", ignore_row_if="either_value_is_missing"
                    ),
                    lambda row: (
                        f"{'empty interval' if row['end'] == row['start'] else 'interval end before start'}: "
                        f"{_interval(row)}"
                    ),
                ),
                (
                    e.ExpectColumnValuesToBeBetween(column="start", min_value=c.earliest),
                    lambda row: f"interval starts before {earliest}: {_interval(row)}",
                ),
                (
                    e.ExpectColumnPairValuesAToBeGreaterThanB(
                        column_A="latest_start",
                        column_B="start",
                        or_equal=True,
                        ignore_row_if="either_value_is_missing",
                    ),
                    lambda row: (
                        f"interval starts more than {c.max_years_after_publication} years after publication "
                        f"(latest start {_instant(row['latest_start'])}): {_interval(row)}"
                    ),
                ),
                (
                    e.ExpectColumnPairValuesAToBeGreaterThanB(
                        column_A="widest_end",
                        column_B="end",
                        or_equal=True,
                        ignore_row_if="either_value_is_missing",
                    ),
                    lambda row: (
                        f"interval spans more than {c.max_span_years} years as written: {_interval(row)}"
                    ),
                ),
            ],
        )

    def _widest_end(self, frame: Any) -> Any:
        """``start + max_span_years`` for intervals as written; missing (not checked) for derived ones."""
        import pandas as pd

        widest = frame["start"] + pd.DateOffset(years=self.config.max_span_years)
        if "provenance" in frame:
            widest = widest.where(frame["provenance"].isna())
        return widest


def _instant(value: Any) -> str:
    """A frame cell (pandas Timestamp, datetime or missing) as ISO-8601 UTC; "open" when missing."""
    import pandas as pd

    return "open" if value is None or pd.isna(value) else format_instant(pd.Timestamp(value).to_pydatetime())


def _interval(row: Any) -> str:
    return f"[{_instant(row['start'])}, {_instant(row['end'])})"
