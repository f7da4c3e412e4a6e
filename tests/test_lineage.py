"""Lineage: versions, supersession, corrections, as-of, conflicts, gaps, clarification, the answer step.

Unit tests run on hand-built rows. The golden scenarios (issue 5) are built as data below, run through the
real ingest (``run_ingest`` on JSONL in ``tmp_path``, local Ray, LanceDB) and the real ``Client``; one
ingest (two runs: a base run and a late run two days later) is shared by all scenarios. Real data:
``shared/data/tzdb_news`` (2018–2020 releases) and ``shared/data/debian_changelogs`` (two packages).
"""

from __future__ import annotations

import calendar
import json
import os
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from diachron.ingest.sources import SourceDocument
from diachron.ingest.versioning import plan_versions
from diachron.retrieval.answer import summarize
from diachron.retrieval.lineage import (
    Lineage,
    clarify,
    conflicts,
    derive_spans,
    gaps,
    mentions_earlier_version,
    version_at,
)
from diachron.schemas.lineage import (
    DERIVED_UNTIL_KEY,
    UNRESOLVED_KEY,
    ConflictKind,
    ConflictSignal,
    GapSignal,
)
from diachron.schemas.time import Granularity, Interval


def d(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def row(
    doc_id: str,
    *,
    series: str = "s",
    start: str | None = None,
    until: str | None = None,
    published: str | None = None,
    supersedes: str | None = None,
    relation: str | None = None,
    recorded: str = "2025-01-01",
    derived: bool = False,
) -> dict[str, Any]:
    return {
        "doc_id": doc_id,
        "series_id": series,
        "version": doc_id,
        "supersedes": supersedes,
        "relation": relation,
        "valid_from": d(start) if start else None,
        "valid_until": d(until) if until else None,
        "published_at": d(published) if published else None,
        "recorded_at": d(recorded),
        "metadata_json": json.dumps({DERIVED_UNTIL_KEY: True} if derived else {}),
    }


# --- unit: effective intervals ---------------------------------------------------------------------------


def test_three_versions_each_valid_until_the_next_takes_effect() -> None:
    spans = {
        s.doc_id: s
        for s in derive_spans(
            [row("v3", start="2024-06-01"), row("v1", start="2024-01-01"), row("v2", start="2024-03-01")]
        )
    }
    assert spans["v1"].valid == Interval(d("2024-01-01"), d("2024-03-01"))
    assert spans["v2"].valid == Interval(d("2024-03-01"), d("2024-06-01"))
    assert spans["v3"].valid == Interval(d("2024-06-01"), None)
    assert (spans["v1"].superseded_by, spans["v2"].superseded_by, spans["v3"].superseded_by) == (
        "v2",
        "v3",
        None,
    )
    ordered = derive_spans(
        [row("v3", start="2024-06-01"), row("v1", start="2024-01-01"), row("v2", start="2024-03-01")]
    )
    assert version_at(ordered, d("2024-02-29T23:59:59")).doc_id == "v1"
    assert version_at(ordered, d("2024-03-01")).doc_id == "v2"
    assert version_at(ordered, d("2030-01-01")).doc_id == "v3"
    assert version_at(ordered, d("2023-12-31")) is None


def test_published_only_versions_start_at_publication() -> None:
    spans = derive_spans([row("a", published="2019-03-25"), row("b", published="2019-07-01")])
    assert [s.valid for s in spans] == [
        Interval(d("2019-03-25"), d("2019-07-01")),
        Interval(d("2019-07-01"), None),
    ]


def test_derived_valid_until_is_rederived_but_a_stated_one_is_kept() -> None:
    late = derive_spans(
        [
            row("v1", start="2023-01-01", until="2023-09-01", derived=True),
            row("v3", start="2023-09-01"),
            row("v2", start="2023-05-01", recorded="2025-02-01"),
        ]
    )
    assert late[0].valid == Interval(d("2023-01-01"), d("2023-05-01"))
    stated = derive_spans([row("v1", start="2022-01-01", until="2022-07-01"), row("v2", start="2022-06-01")])
    assert stated[0].valid == Interval(d("2022-01-01"), d("2022-07-01"))
    found = conflicts(Lineage({"s": stated}), ["v2"])
    assert found == [
        ConflictSignal(ConflictKind.OVERLAP, "s", ("v1", "v2"), Interval(d("2022-06-01"), d("2022-07-01")))
    ]
    with pytest.raises(ValueError, match="2 versions"):
        version_at(stated, d("2022-06-15"))


def test_correction_replaces_its_target_from_the_target_start() -> None:
    spans = {
        s.doc_id: s
        for s in derive_spans(
            [
                row("fee", start="2024-11-01", published="2024-12-01"),
                row("fix", published="2024-12-03", supersedes="fee", relation="corrects"),
                row("fee2", start="2025-02-01"),
            ]
        )
    }
    assert spans["fee"].valid is None and spans["fee"].corrected_by == "fix"
    assert spans["fix"].valid == Interval(d("2024-11-01"), d("2025-02-01"))
    assert spans["fix"].superseded_by == "fee2"
    lineage = Lineage({"s": list(spans.values())})
    assert conflicts(lineage, ["fee", "fix"]) == [
        ConflictSignal(ConflictKind.CORRECTION, "s", ("fee", "fix"), None)
    ]
    assert conflicts(lineage, ["fix"]) == []


def test_coexisting_version_ends_nobody() -> None:
    spans = {
        s.doc_id: s
        for s in derive_spans(
            [row("a", start="2024-01-01"), row("b", start="2024-02-01", relation="coexists")]
        )
    }
    assert spans["a"].valid == Interval(d("2024-01-01"), None)
    assert conflicts(Lineage({"s": list(spans.values())}), ["a", "b"]) == []


# --- unit: gaps, clarification, versioning ------------------------------------------------------------


def test_gap_is_the_uncovered_month_run() -> None:
    covered = [
        Interval(d(f"2021-{m:02d}-10"), d(f"2021-{m:02d}-11")) for m in (1, 2, 3, 4, 7, 8, 9, 10, 11, 12)
    ]
    found = gaps(Interval(d("2021-01-01"), d("2022-01-01"), Granularity.YEAR), covered)
    assert found == [GapSignal(Interval(d("2021-05-01"), d("2021-07-01"), Granularity.MONTH))]
    assert gaps(Interval(d("2021-01-01"), d("2021-01-04")), [Interval(d("2021-01-02"), None)]) == [
        GapSignal(Interval(d("2021-01-01"), d("2021-01-02"), Granularity.DAY))
    ]
    with pytest.raises(ValueError, match="bounded"):
        gaps(Interval(None, d("2021-01-01")), covered)


def test_old_rule_needs_clarification_only_with_several_old_versions() -> None:
    assert mentions_earlier_version("What did the old parking rule say?")
    assert not mentions_earlier_version("What does the parking rule say?")
    three = derive_spans(
        [
            row("p1", series="p", start="2019-01-01"),
            row("p2", series="p", start="2019-06-01"),
            row("p3", series="p", start="2020-01-01"),
        ]
    )
    two = derive_spans([row("b1", series="b", start="2019-01-01"), row("b2", series="b", start="2019-06-01")])
    lineage = Lineage({"p": three, "b": two})
    found, admitted = clarify(lineage, ["p"], d("2024-12-01"))
    assert [c.doc_id for c in found[0].candidates] == ["p1", "p2"] and admitted == {"p1", "p2"}
    found, admitted = clarify(lineage, ["b"], d("2024-12-01"))
    assert found == [] and admitted == {"b1"}


def test_unversioned_document_is_current_once_published() -> None:
    from diachron.retrieval.lineage import latest_first

    lineage = Lineage(
        {
            "a": derive_spans([row("a", series="a", published="2021-03-15")]),
            "b": derive_spans([row("b", series="b", published="2021-08-15")]),
            "c": derive_spans([row("c", series="c")]),
            "e": derive_spans([row("e", series="e", start="2020-01-01", until="2021-01-01")]),
        }
    )
    day = Interval(d("2021-05-01"), d("2021-05-02"))
    assert [lineage.current(x, x, day) for x in "abce"] == [True, False, False, False]
    assert lineage.current("b", "b", Interval(d("2021-08-15"), d("2021-08-16")))  # published that day
    rows = [{"doc_id": x, "series_id": x, "published_at": lineage.span(x).published_at} for x in "cab"]
    assert latest_first(rows, lineage, k=2) == ([2, 1], 2)  # b (August), then a (March); c (no date) last


def doc(doc_id: str, text: str, **kw: Any) -> SourceDocument:
    return SourceDocument(doc_id=doc_id, title=doc_id, text=text, source_uri="test", **kw)


def test_version_string_supersedes_resolves_within_the_batch() -> None:
    plan = plan_versions(
        [
            doc("p/1", "one", series_id="p", version="1", valid_from=d("2024-01-01")),
            doc("p/2", "two", series_id="p", version="2", supersedes="1", valid_from=d("2024-03-01")),
            doc("q/2", "other", series_id="q", version="2", supersedes="9"),
        ],
        [],
    )
    by_id = {p.doc_id: p for p in plan.todo}
    assert by_id["p/2"].supersedes == "p/1"
    assert by_id["q/2"].supersedes is None  # not in the series: no predecessor, and a lineage issue says so
    assert by_id["q/2"].source.metadata[UNRESOLVED_KEY] == "9"
    (issue,) = plan.issues
    assert (issue.stage, issue.record_id) == (
        "lineage",
        "q/2",
    ) and "'9' resolves to no document" in issue.reason
    assert by_id["p/1"].source.valid_until == d("2024-03-01")
    assert by_id["p/1"].source.metadata[DERIVED_UNTIL_KEY] is True
    assert DERIVED_UNTIL_KEY not in by_id["p/2"].source.metadata


# --- golden scenarios through real ingest + Client --------------------------------------------------------

BASE_CLOCK = d("2024-12-01")
LATE_CLOCK = d("2024-12-03")  # two days later
NOW = d("2024-12-10")
MONTHS = list(calendar.month_name)[1:]  # English: Python's default C locale


def policy(series: str, n: int, text: str, start: str, **kw: Any) -> dict[str, Any]:
    return {
        "doc_id": f"{series}/v{n}",
        "series_id": series,
        "version": str(n),
        "title": f"{series} v{n}",
        "text": text,
        "valid_from": start,
        "published_at": start,
        **kw,
    }


def base_documents() -> list[dict[str, Any]]:
    """Every scenario's documents recorded at ``BASE_CLOCK``."""
    refund = [
        policy(
            "refund-policy",
            1,
            "Refund policy: customers may return goods for a refund within 14 days.",
            "2024-01-01",
        ),
        policy(
            "refund-policy",
            2,
            "Refund policy: customers may return goods for a refund within 30 days.",
            "2024-03-01",
            supersedes="1",
        ),
        policy(
            "refund-policy",
            3,
            "Refund policy: customers may return goods for a refund within 60 days.",
            "2024-06-01",
            supersedes="2",
        ),
    ]
    fee = [
        policy(
            "fee-schedule",
            1,
            "Fee schedule: the late payment fee is 50 euros per invoice.",
            "2024-11-01",
            published_at="2024-12-01",
        )
    ]
    retention = [
        policy("data-retention", 1, "Data retention rule: logs are kept for 90 days.", "2023-01-01"),
        policy("data-retention", 3, "Data retention rule: logs are kept for 30 days.", "2023-09-01"),
    ]
    travel = [
        policy(
            "travel-policy",
            1,
            "Travel policy: economy class for all flights.",
            "2022-01-01",
            valid_until="2022-07-01",
        ),
        policy("travel-policy", 2, "Travel policy: business class for flights over six hours.", "2022-06-01"),
    ]
    parking = [
        policy("parking-rule", n, f"Parking rule: staff may park in garage {g} with a permit.", s)
        for n, g, s in ((1, "A", "2019-01-01"), (2, "B", "2019-06-01"), (3, "C", "2020-01-01"))
    ]
    badge = [
        policy("badge-rule", n, f"Badge rule: visitor badges are {c} and must be returned.", s)
        for n, c, s in ((1, "yellow", "2019-02-01"), (2, "green", "2019-08-01"))
    ]
    reports = [
        {
            "doc_id": f"ops-report/2021-{m:02d}",
            "title": f"Operations report {MONTHS[m - 1]} 2021",
            "text": f"Operations report for {MONTHS[m - 1]} 2021: the warehouse shipped orders on time.",
            "published_at": f"2021-{m:02d}-15",
        }
        for m in range(1, 13)
        if m != 5
    ]
    return refund + fee + retention + travel + parking + badge + reports


def late_documents() -> list[dict[str, Any]]:
    """Recorded at ``LATE_CLOCK``: a correction two days later and a late-arriving older version."""
    return [
        {
            "doc_id": "fee-schedule/fix-1",
            "series_id": "fee-schedule",
            "title": "fee schedule correction",
            "text": (
                "Correction to the fee schedule: the late payment fee is 15 euros per invoice, not 50 euros."
            ),
            "published_at": "2024-12-03",
            "supersedes": "fee-schedule/v1",
            "relation": "corrects",
        },
        policy("data-retention", 2, "Data retention rule: logs are kept for 60 days.", "2023-05-01"),
    ]


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return str(path)


def ingest(db: str, sources: list[str], clock: datetime) -> Any:
    from diachron.ingest.pipeline import IngestConfig, run_ingest

    return run_ingest(sources, IngestConfig(db_uri=db, num_cpus=2, optimize=False), clock=lambda: clock)


@pytest.fixture(scope="module")
def scenarios(tmp_path_factory: pytest.TempPathFactory) -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from diachron.retrieval.client import Client

    tmp = tmp_path_factory.mktemp("lineage")
    db = str(tmp / "db")
    first = ingest(db, [write_jsonl(tmp / "base.jsonl", base_documents())], BASE_CLOCK)
    second = ingest(db, [write_jsonl(tmp / "late.jsonl", late_documents())], LATE_CLOCK)
    assert (first.documents_written, second.documents_written) == (len(base_documents()), 2)
    assert first.quarantined == 0 and second.quarantined == 0
    return Client(db)


def series_docs(result: Any, series: str) -> list[str]:
    return sorted({e.doc_id for e in result.evidence if e.series_id == series})


def ask(client: Any, question: str, **kw: Any) -> Any:
    return client.search(question, k=10, now=kw.pop("now", NOW), **kw)


@pytest.mark.integration
@pytest.mark.parametrize(
    ("day", "expected"),
    [
        ("15 February 2024", "refund-policy/v1"),  # inside v1
        ("29 February 2024", "refund-policy/v1"),  # last day before the boundary
        ("1 March 2024", "refund-policy/v2"),  # boundary: v2 takes effect, v1 ends (half-open)
        ("10 April 2024", "refund-policy/v2"),  # inside v2
        ("1 June 2024", "refund-policy/v3"),  # boundary
        ("1 June 2025", "refund-policy/v3"),  # after the last version
    ],
)
def test_three_version_policy_point_lookup(scenarios: Any, day: str, expected: str) -> None:
    result = ask(scenarios, f"Which refund policy applied on {day}?")
    assert result.intent.relation.value == "current"
    assert series_docs(result, "refund-policy") == [expected]


@pytest.mark.integration
def test_three_version_policy_before_first_and_current(scenarios: Any) -> None:
    assert (
        series_docs(ask(scenarios, "Which refund policy applied on 1 December 2023?"), "refund-policy") == []
    )
    current = ask(scenarios, "What is the current refund policy?")
    assert series_docs(current, "refund-policy") == ["refund-policy/v3"]
    unfiltered = scenarios.naive_search("refund policy return goods", k=10)
    cards = {e.doc_id: e for e in unfiltered.evidence if e.series_id == "refund-policy"}
    assert len(cards) == 3  # the naive baseline blends all versions; lineage cards say which is which
    assert (cards["refund-policy/v1"].valid_until, cards["refund-policy/v1"].superseded_by) == (
        d("2024-03-01"),
        "refund-policy/v2",
    )
    assert (cards["refund-policy/v3"].valid_until, cards["refund-policy/v3"].superseded_by) == (None, None)


@pytest.mark.integration
def test_correction_two_days_later(scenarios: Any) -> None:
    before = ask(scenarios, "Which late payment fee applied on 15 November 2024?", as_of=d("2024-12-02"))
    assert series_docs(before, "fee-schedule") == ["fee-schedule/v1"]
    assert [e.corrected_by for e in before.evidence if e.series_id == "fee-schedule"] == [None]
    after = ask(scenarios, "Which late payment fee applied on 15 November 2024?")
    assert series_docs(after, "fee-schedule") == ["fee-schedule/fix-1"]
    blended = scenarios.naive_search("late payment fee euros per invoice", k=10)
    assert {"fee-schedule/v1", "fee-schedule/fix-1"} <= {e.doc_id for e in blended.evidence}
    assert (
        next(e.corrected_by for e in blended.evidence if e.doc_id == "fee-schedule/v1")
        == "fee-schedule/fix-1"
    )
    kinds = [(s.kind, s.doc_ids) for s in blended.signals if isinstance(s, ConflictSignal)]
    assert (ConflictKind.CORRECTION, ("fee-schedule/v1", "fee-schedule/fix-1")) in kinds


@pytest.mark.integration
def test_late_arriving_version_as_of(scenarios: Any) -> None:
    question = "Which data retention rule applied on 1 June 2023?"
    before = ask(scenarios, question, as_of=d("2024-12-02"))
    assert series_docs(before, "data-retention") == ["data-retention/v1"]
    assert [e.valid_until for e in before.evidence if e.series_id == "data-retention"] == [d("2023-09-01")]
    after = ask(scenarios, question, as_of=d("2024-12-04"))
    assert series_docs(after, "data-retention") == ["data-retention/v2"]
    assert series_docs(
        ask(scenarios, "Which data retention rule applied on 1 March 2023?"), "data-retention"
    ) == ["data-retention/v1"]


@pytest.mark.integration
def test_overlapping_versions_conflict(scenarios: Any) -> None:
    result = ask(scenarios, "Which travel policy applied on 15 June 2022?")
    assert series_docs(result, "travel-policy") == ["travel-policy/v1", "travel-policy/v2"]
    found = [s for s in result.signals if isinstance(s, ConflictSignal)]
    assert found == [
        ConflictSignal(
            ConflictKind.OVERLAP,
            "travel-policy",
            ("travel-policy/v1", "travel-policy/v2"),
            Interval(d("2022-06-01"), d("2022-07-01")),
        )
    ]
    quiet = ask(scenarios, "Which travel policy applied on 1 March 2022?")
    assert series_docs(quiet, "travel-policy") == ["travel-policy/v1"]
    assert not [s for s in quiet.signals if isinstance(s, ConflictSignal)]


@pytest.mark.integration
def test_month_of_missing_evidence_is_a_gap(scenarios: Any) -> None:
    result = ask(scenarios, "What did the operations reports say between January 2021 and December 2021?")
    assert result.intent.relation.value == "between"
    found = [s.interval for s in result.signals if isinstance(s, GapSignal)]
    assert found == [Interval(d("2021-05-01"), d("2021-06-01"), Granularity.MONTH)]
    assert "GAP: no evidence during [2021-05-01T00:00:00Z, 2021-06-01T00:00:00Z)" in summarize(result)
    assert result.to_dict()["signals"] == [
        {
            "type": "gap",
            "interval": {
                "start": "2021-05-01T00:00:00Z",
                "end": "2021-06-01T00:00:00Z",
                "granularity": "month",
            },
        }
    ]


@pytest.mark.integration
def test_ambiguous_old_rule_asks_for_clarification(scenarios: Any) -> None:
    result = ask(scenarios, "What did the old parking rule say?")
    assert result.intent.needs_clarification
    (clar,) = [s for s in result.signals if s.to_dict()["type"] == "clarification"]
    assert [(c.doc_id, c.valid) for c in clar.candidates] == [
        ("parking-rule/v1", Interval(d("2019-01-01"), d("2019-06-01"))),
        ("parking-rule/v2", Interval(d("2019-06-01"), d("2020-01-01"))),
    ]
    assert "parking-rule/v3" not in series_docs(result, "parking-rule")
    single = ask(scenarios, "What did the old badge rule say?")
    assert not single.intent.needs_clarification
    assert series_docs(single, "badge-rule") == ["badge-rule/v1"]


@pytest.mark.integration
def test_latest_unversioned_report_as_of_a_day(scenarios: Any) -> None:
    reports = [r for r in base_documents() if r["doc_id"].startswith("ops-report/")]
    expected = max((r for r in reports if r["published_at"] <= "2021-08-20"), key=lambda r: r["published_at"])
    result = ask(scenarios, "What was the latest operations report as of 20 August 2021?")
    assert result.intent.relation.value == "current"
    ranked = sorted(result.evidence, key=lambda e: e.rank)
    assert ranked[0].doc_id == expected["doc_id"] == "ops-report/2021-08"
    assert all(e.published_at <= d("2021-08-21") for e in result.evidence)  # nothing published later
    assert any("latest first" in a for a in result.intent.assumptions)


# --- real data, as shipped ------------------------------------------------------------------------------
# tzdb_news/releases.jsonl (all 314 releases) and the debian_changelogs lines of three packages, copied byte
# for byte: no series_id anywhere. Expected answers come from the raw files: the release (entry) with the
# latest publication on or before the day asked about.

SHARED = Path(os.environ.get("DIACHRON_SHARED") or Path(__file__).resolve().parents[2] / "shared")
TZDB = SHARED / "data/tzdb_news/releases.jsonl"
DEBIAN = SHARED / "data/debian_changelogs/entries.jsonl"
PACKAGES = ("brotli", "gdbm", "tzdata")


def raw_rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.open(encoding="utf-8") if line.strip()]


def debian_lines() -> list[str]:
    """The shipped lines of :data:`PACKAGES`, unmodified."""
    return [line for line in DEBIAN.open(encoding="utf-8") if json.loads(line)["package"] in PACKAGES]


def current_on(rows: list[dict[str, Any]], day: str) -> str:
    """Independent answer: the record published latest before the end of ``day`` (UTC)."""
    end = datetime.fromisoformat(day).replace(tzinfo=UTC) + timedelta(days=1)
    dated = [r for r in rows if r["published_at"] and datetime.fromisoformat(r["published_at"]) < end]
    return max(dated, key=lambda r: datetime.fromisoformat(r["published_at"]))["doc_id"]


def test_tzdb_as_shipped_plans_one_inferred_series() -> None:
    from diachron.ingest.sources import load_source
    from diachron.schemas.lineage import SERIES_INFERRED_KEY

    rows = raw_rows(TZDB)
    plan = plan_versions(list(load_source(str(TZDB))), [])
    assert plan.issues == [] and plan.unchanged == [] and len(plan.todo) == len(rows) == 314
    assert {p.series_id for p in plan.todo} == {"tzdb-release"}
    assert all(p.source.metadata[SERIES_INFERRED_KEY] for p in plan.todo)
    by_version = {r["version"]: r["doc_id"] for r in rows}
    assert {p.doc_id: p.supersedes for p in plan.todo} == {
        r["doc_id"]: by_version.get(r["supersedes"]) for r in rows
    }


def test_debian_as_shipped_links_each_entry_to_the_next_older_one() -> None:
    from diachron.ingest.sources import load_source
    from diachron.ingest.versioning import LineageConfig

    rows = raw_rows(DEBIAN)
    docs = list(load_source(str(DEBIAN)))
    plan = plan_versions(docs, [])
    assert plan.issues == []
    planned = {p.doc_id: p for p in plan.todo}
    assert len(planned) + len(plan.unchanged) == len(rows) == 9851
    entry = {(r["package"], r["entry_index"]): r for r in rows}
    texts = [r["text"] for r in rows]
    for r in rows:
        if r["doc_id"] in plan.unchanged:  # a second entry with the very text of an earlier one: skipped
            assert texts.count(r["text"]) == 2
            continue
        p = planned[r["doc_id"]]
        assert p.series_id == f"debian-changelog/{r['package']}"
        older = entry.get((r["package"], r["entry_index"] + 1))  # the changelog's next older entry
        if older is not None and older["doc_id"] in plan.unchanged:
            older = entry[(r["package"], r["entry_index"] + 2)]
        assert p.supersedes == (older["doc_id"] if older else None), r["doc_id"]
    mapped = plan_versions(docs, [], LineageConfig(series_field="package"))
    assert {p.doc_id: p.series_id for p in mapped.todo} == {
        r["doc_id"]: r["package"] for r in rows if r["doc_id"] in planned
    }
    assert {p.doc_id: p.supersedes for p in mapped.todo} == {d: p.supersedes for d, p in planned.items()}


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from accounting import assert_accounted
    from diachron.retrieval.client import Client

    tmp = tmp_path_factory.mktemp("real")
    db = str(tmp / "db")
    tz = tmp / "releases.jsonl"
    shutil.copyfile(TZDB, tz)
    deb = tmp / "entries.jsonl"
    deb.write_text("".join(debian_lines()), encoding="utf-8")
    summary = ingest(db, [str(tz), str(deb)], BASE_CLOCK)
    tables = assert_accounted(db, summary, records_in=len(raw_rows(TZDB)) + len(debian_lines()))
    assert [q for q in tables["quarantine"] if q["stage"] == "lineage"] == []
    return Client(db)


def tz_cards(result: Any) -> list[Any]:
    return [e for e in result.evidence if e.doc_id.startswith("tzdb-release/")]


@pytest.mark.integration
@pytest.mark.parametrize(
    ("question", "day"),
    [
        ("Which tz database release was current on 2019-06-01?", "2019-06-01"),
        ("Which tz database release was in effect on 15 November 2022?", "2022-11-15"),
        ("What was the latest tz database release as of 1 June 2015?", "2015-06-01"),
    ],
)
def test_tzdb_release_current_on(real: Any, question: str, day: str) -> None:
    rows = raw_rows(TZDB)
    expected = current_on(rows, day)
    assert expected in {
        "tzdb-release/2019a",
        "tzdb-release/2022f",
        "tzdb-release/2015d",
    }  # the issue's answers
    result = real.search(question, k=10, now=NOW)
    assert result.intent.relation.value == "current"
    cards = tz_cards(result)
    assert {e.doc_id for e in cards} == {expected}
    (series,) = {e.series_id for e in cards}
    successor = next(r for r in rows if r.get("supersedes") and f"tzdb-release/{r['supersedes']}" == expected)
    assert cards[0].superseded_by == successor["doc_id"]
    assert cards[0].valid_until == datetime.fromisoformat(successor["published_at"]).astimezone(UTC)
    assert real.search(question, k=10, now=NOW).to_dict()["evidence"]  # the JSON form carries them too


@pytest.mark.integration
@pytest.mark.parametrize(
    ("package", "day"), [("brotli", "2020-05-01"), ("gdbm", "2021-08-01"), ("tzdata", "2022-11-15")]
)
def test_debian_version_current_on(real: Any, package: str, day: str) -> None:
    rows = [r for r in raw_rows(DEBIAN) if r["package"] == package]
    expected = current_on(rows, day)
    result = real.search(f"Which {package} package version was current on {day}?", k=10, now=NOW)
    found = {e.doc_id for e in result.evidence if e.doc_id.startswith(f"debian-changelog/{package}/")}
    assert found == {expected}


# --- the answer step -------------------------------------------------------------------------------------


def hand_result() -> Any:
    from diachron.schemas.evidence import Evidence, SearchResult, SearchTrace
    from diachron.schemas.intent import Relation, TemporalIntent

    intent = TemporalIntent(
        "Which travel policy applied?",
        (Interval(d("2022-06-15"), d("2022-06-16")),),
        Relation.CURRENT,
        d("2024-12-10"),
    )
    cards = tuple(
        Evidence(
            f"c{n}",
            f"travel-policy/v{n}",
            "travel-policy",
            "t",
            f"Travel policy {n}.",
            0.5,
            d(start),
            (),
            "published",
            d(start),
            until,
            d("2024-12-01"),
        )
        for n, start, until in ((1, "2022-01-01", d("2022-07-01")), (2, "2022-06-01", None))
    )
    conflict = ConflictSignal(
        ConflictKind.OVERLAP,
        "travel-policy",
        ("travel-policy/v1", "travel-policy/v2"),
        Interval(d("2022-06-01"), d("2022-07-01")),
    )
    trace = SearchTrace(
        filter={"as_of": "2024-12-02T00:00:00Z"},
        candidates_after_filter=2,
        anchors=0,
        anchor_granularity=None,
    )
    return SearchResult(intent, cards, trace, (conflict,))


def test_summary_states_scope_versions_and_conflicts() -> None:
    assert summarize(hand_result()).splitlines() == [
        "Question: Which travel policy applied?",
        (
            "Scope: current [2022-06-15T00:00:00Z, 2022-06-16T00:00:00Z) (reference time "
            "2024-12-10T00:00:00Z; as recorded by 2024-12-02T00:00:00Z)"
        ),
        (
            "[1] travel-policy/v1 (published 2022-01-01T00:00:00Z; valid [2022-01-01T00:00:00Z, "
            "2022-07-01T00:00:00Z); recorded 2024-12-01T00:00:00Z): Travel policy 1."
        ),
        (
            "[2] travel-policy/v2 (published 2022-06-01T00:00:00Z; valid [2022-06-01T00:00:00Z, +inf); "
            "recorded 2024-12-01T00:00:00Z): Travel policy 2."
        ),
        (
            "CONFLICT (overlap) in travel-policy during [2022-06-01T00:00:00Z, 2022-07-01T00:00:00Z): "
            "travel-policy/v1, travel-policy/v2"
        ),
    ]


def test_llm_answer_sends_the_contract_to_an_openai_compatible_server() -> None:
    """A local HTTP server on a thread stands in for the vLLM server (no model runs here)."""
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    from diachron.retrieval.answer import SYSTEM_PROMPT, LLMConfig, answer, compose

    seen: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            seen.append(
                {"path": self.path, "body": json.loads(self.rfile.read(int(self.headers["Content-Length"])))}
            )
            content = json.dumps({"answer": "Between 2022-06-01 and 2022-07-01 both apply [1][2]."})
            reply = json.dumps({"choices": [{"message": {"content": content}}]})
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(reply.encode())

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        result = hand_result()
        reply = answer(result, llm=LLMConfig(f"http://127.0.0.1:{server.server_port}/v1", "tiny"))
    finally:
        server.shutdown()
        thread.join()
    # the reply cites both cards and states the days the overlap starts and v1's validity ends: it passes
    assert (reply.text, reply.source, reply.reason) == (
        "Between 2022-06-01 and 2022-07-01 both apply [1][2].",
        "llm",
        None,
    )
    (call,) = seen
    assert call["path"] == "/v1/chat/completions" and call["body"]["model"] == "tiny"
    assert call["body"]["messages"] == [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": summarize(result)},
    ]
    assert answer(result) == compose(result)  # no endpoint: the deterministic answer
