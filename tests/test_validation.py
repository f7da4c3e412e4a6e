"""Quarantine reasons from validation (Great Expectations): one readable line with the values, the
expectation's name kept at the end and as ``Failure.expectation``; expected lines written out by hand."""

from __future__ import annotations

import pickle
from datetime import UTC, datetime

import pytest
from diachron.ingest.validation import Failure, Validator


def _utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


@pytest.fixture(scope="module")
def validator() -> Validator:
    v = Validator()
    v.warm_up()  # GX import once for the module (≈6 s)
    return v


def _intervals(rows: list[tuple]) -> object:
    import pandas as pd

    return pd.DataFrame(
        {
            "start": pd.Series([r[0] for r in rows], dtype="datetime64[us, UTC]"),
            "end": pd.Series([r[1] for r in rows], dtype="datetime64[us, UTC]"),
            "latest_start": pd.Series([r[2] for r in rows], dtype="datetime64[us, UTC]"),
            "provenance": pd.Series([r[3] for r in rows], dtype="object"),
        }
    )


def test_interval_reasons_are_one_readable_line_each(validator):
    frame = _intervals(
        [
            (_utc(2015, 3, 1), _utc(2016, 1, 1), _utc(2115, 3, 1), None),  # 0: fine
            (_utc(2015, 3, 1), _utc(2015, 2, 1), _utc(2115, 3, 1), None),  # 1: inverted
            (_utc(900, 1, 1), _utc(901, 1, 1), _utc(2115, 3, 1), None),  # 2: before 1000
            (_utc(2199, 1, 1), _utc(2200, 1, 1), _utc(2030, 6, 1), None),  # 3: 1930 text, a 2199 "year"
            (_utc(1900, 1, 1), _utc(2101, 1, 1), _utc(2121, 1, 1), None),  # 4: "from 1900 to 2100"
            (
                _utc(1900, 1, 1),
                _utc(2101, 1, 1),
                _utc(2121, 1, 1),
                "inferred:next",
            ),  # 5: derived span: not capped
            (_utc(2015, 3, 1), _utc(2015, 3, 1), _utc(2115, 3, 1), None),  # 6: empty
        ]
    )
    failures = validator.check_intervals(frame)
    assert sorted(failures) == [1, 2, 3, 4, 6]
    pair = "ExpectColumnPairValuesAToBeGreaterThanB"
    assert failures[1] == [
        f"interval end before start: [2015-03-01T00:00:00Z, 2015-02-01T00:00:00Z) ({pair})"
    ]
    assert failures[2] == [
        "interval starts before 1000-01-01T00:00:00Z: [0900-01-01T00:00:00Z, 0901-01-01T00:00:00Z) "
        "(ExpectColumnValuesToBeBetween)"
    ]
    assert failures[3] == [
        "interval starts more than 100 years after publication (latest start 2030-06-01T00:00:00Z): "
        f"[2199-01-01T00:00:00Z, 2200-01-01T00:00:00Z) ({pair})"
    ]
    assert failures[4] == [
        f"interval spans more than 100 years as written: [1900-01-01T00:00:00Z, 2101-01-01T00:00:00Z) "
        f"({pair})"
    ]
    assert failures[6] == [f"empty interval: [2015-03-01T00:00:00Z, 2015-03-01T00:00:00Z) ({pair})"]
    assert [f.expectation for f in failures[2]] == ["ExpectColumnValuesToBeBetween"]
    for reasons in failures.values():
        assert all("\n" not in r and "column_A" not in r and "min_value" not in r for r in reasons)


def test_chunk_reasons_name_the_chunk_and_the_value(validator):
    import pandas as pd

    frame = pd.DataFrame(
        {
            "chunk_id": ["c1", "c2", "c3"],
            "doc_id": ["d", "d", None],
            "text": ["ok", "", "ok"],
            "time_source": ["event", "published", "guess"],
        }
    )
    failures = validator.check_chunks(frame)
    assert failures == {
        1: ["chunk c2 has empty text (ExpectColumnValueLengthsToBeBetween)"],
        2: [
            "chunk c3 without doc_id (ExpectColumnValuesToNotBeNull)",
            "time_source 'guess' is none of event, inherited:section, inherited:document, published, unknown "
            "(ExpectColumnValuesToBeInSet)",
        ],
    }


def test_a_failure_pickles_with_its_expectation():
    failure = Failure("interval end before start: [a, b)", "ExpectColumnPairValuesAToBeGreaterThanB")
    back = pickle.loads(pickle.dumps(failure))
    assert back == failure and back.expectation == "ExpectColumnPairValuesAToBeGreaterThanB"
    assert isinstance(back, str) and "; ".join([back, back]).count("(Expect") == 2
