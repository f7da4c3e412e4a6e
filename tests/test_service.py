"""``diachron serve`` and the remote Client: a real uvicorn service on 127.0.0.1 over the real stock index.

Unit part: the JSON form goes back to typed values (``SearchResult.from_dict``), human-readable dates, the
edge's input checks. Integration part: the service answers the ``--json`` schema, the remote Client gives
the local Client's result, bad input gets a one-line 4xx, 24 concurrent requests all succeed, and a row
written after the service started is found without a restart.
"""

from __future__ import annotations

import json
import shutil
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import httpx
import pytest
from diachron.schemas.evidence import Evidence, SearchResult, SearchTrace
from diachron.schemas.intent import Relation, TemporalIntent
from diachron.schemas.lineage import Clarification, ConflictKind, ConflictSignal, GapSignal, VersionSpan
from diachron.schemas.time import Granularity, Interval, format_instant

from diachron.display import human_instant, human_interval
from diachron.query import QueryInputError, check_question, parse_clock

NOW = "2026-01-01T00:00:00Z"
MSFT = "How did Microsoft Corp. (MSFT) stock perform between September 2010 and August 2012?"


def _utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def _result() -> SearchResult:
    month = Interval(_utc(2011, 2, 1), _utc(2011, 3, 1), Granularity.MONTH)
    card = Evidence(
        chunk_id="c1",
        doc_id="refund-v1",
        series_id="refund",
        title="Refund policy v1",
        text="30 days.",
        score=0.812345678,
        published_at=_utc(2011, 2, 28, 21),
        intervals=(month,),
        time_source="event",
        valid_from=_utc(2011, 1, 1),
        valid_until=_utc(2011, 4, 1),
        recorded_at=_utc(1, 1, 1),
        superseded_by="refund-v2",
        rank=2,
        interval_kinds=(("state", "inferred:next-change"),),
        temporal_fit=0.8,
    )
    window = Interval(_utc(2010, 9, 1), _utc(2012, 9, 1), Granularity.MONTH)
    intent = TemporalIntent(
        core_query="what was the refund rule?",
        intervals=(window,),
        relation=Relation.BETWEEN,
        reference_time=_utc(2026, 1, 1),
        granularity=Granularity.MONTH,
        assumptions=("UTC",),
    )
    signals = (
        GapSignal(Interval(_utc(2012, 1, 1), _utc(2012, 3, 1), Granularity.MONTH)),
        ConflictSignal(ConflictKind.OVERLAP, "refund", ("refund-v1", "refund-v2"), month),
        Clarification(
            "several earlier versions of refund",
            "refund",
            (VersionSpan("refund-v1", "refund", "1", month, _utc(2011, 1, 1)),),
        ),
    )
    trace = SearchTrace(
        filter={"event": [window.to_dict()], "valid": [], "as_of": None},
        candidates_after_filter=117,
        anchors=24,
        anchor_granularity="month",
        rejected_examples=({"chunk_id": "x", "why": "1999"},),
        seconds={"embed": 0.01234, "total": 0.05},
    )
    return SearchResult(intent=intent, evidence=(card,), trace=trace, signals=signals)


def test_search_result_round_trips_through_json():
    result = _result()
    wire = json.loads(json.dumps(result.to_dict()))
    back = SearchResult.from_dict(wire)
    assert back.to_dict() == result.to_dict()
    card = back.evidence[0]
    assert card.published_at == _utc(2011, 2, 28, 21) and card.recorded_at == _utc(1, 1, 1)
    assert card.intervals == result.evidence[0].intervals and card.superseded_by == "refund-v2"
    # each interval says its kind and provenance (why the card is in the window), and the card its fit
    assert wire["evidence"][0]["intervals"][0] == {
        **card.intervals[0].to_dict(),
        "kind": "state",
        "provenance": "inferred:next-change",
    }
    assert (card.interval_kinds, card.temporal_fit) == ((("state", "inferred:next-change"),), 0.8)
    assert [type(s).__name__ for s in back.signals] == ["GapSignal", "ConflictSignal", "Clarification"]
    assert back.intent.relation is Relation.BETWEEN and back.intent.granularity is Granularity.MONTH


def test_a_gap_reason_round_trips_and_is_absent_when_unset():
    window = Interval(None, _utc(1900, 1, 1), Granularity.YEAR)
    with_reason = GapSignal(window, "no chunk with known time in the window")
    assert with_reason.to_dict() == {
        "type": "gap",
        "reason": "no chunk with known time in the window",
        "interval": {"start": None, "end": "1900-01-01T00:00:00Z", "granularity": "year"},
    }
    assert "reason" not in GapSignal(window).to_dict()
    result = SearchResult(intent=_result().intent, evidence=(), trace=_result().trace, signals=(with_reason,))
    assert SearchResult.from_dict(json.loads(json.dumps(result.to_dict()))).signals == (with_reason,)


def test_from_dict_ignores_later_fields_and_refuses_another_major_version():
    wire = _result().to_dict()
    wire["evidence"][0]["time_status"] = "known"  # a field a later 1.x may add
    wire["schema_version"] = "1.7"
    assert SearchResult.from_dict(wire).evidence[0].doc_id == "refund-v1"
    wire["schema_version"] = "2.0"
    with pytest.raises(ValueError, match="schema_version"):
        SearchResult.from_dict(wire)


def test_year_one_is_iso_8601():
    assert format_instant(_utc(1, 1, 1)) == "0001-01-01T00:00:00Z"
    assert _result().to_dict()["evidence"][0]["recorded_at"] == "0001-01-01T00:00:00Z"


@pytest.mark.parametrize(
    ("interval", "granularity", "shown"),
    [
        (Interval(_utc(2011, 2, 1), _utc(2011, 3, 1), "month"), None, "Feb 2011"),
        (Interval(_utc(2010, 9, 1), _utc(2012, 9, 1), "month"), None, "Sep 2010 – Aug 2012"),
        (Interval(_utc(2010, 9, 1), _utc(2012, 9, 1), "month"), "day", "1 Sep 2010 – 31 Aug 2012"),
        (Interval(_utc(1921, 12, 6), _utc(1921, 12, 7), "day"), None, "6 Dec 1921"),
        (Interval(_utc(2012, 1, 1), _utc(2015, 1, 1), "year"), None, "2012 – 2014"),
        (Interval(_utc(1930, 1, 1), _utc(1940, 1, 1), "decade"), None, "1930s"),
        (Interval(_utc(2000, 3, 1), _utc(2013, 4, 1), "month"), "year", "2000 – 2013"),  # an end inside 2013
        (Interval(_utc(2016, 1, 1), _utc(2016, 4, 1), "quarter"), None, "Q1 2016"),
        (Interval(None, _utc(1920, 1, 1), "year"), None, "before 1920"),
        (Interval(_utc(2020, 3, 3), None, "day"), None, "since 3 Mar 2020"),
        (Interval.at(_utc(2026, 4, 20)), None, "20 Apr 2026"),
    ],
)
def test_human_interval(interval, granularity, shown):
    assert human_interval(interval, granularity) == shown


def test_human_instant():
    assert human_instant(_utc(2011, 2, 28, 21), "instant") == "28 Feb 2011 21:00 UTC"
    assert human_instant(_utc(2011, 2, 28), "day") == "28 Feb 2011"
    assert human_instant(None) == "—"


def test_edge_checks_give_one_line_errors():
    with pytest.raises(QueryInputError, match="empty"):
        check_question("   ")
    with pytest.raises(QueryInputError, match="out of range"):
        parse_clock("9999-12-31T23:00:00-05:00", "--now")
    with pytest.raises(QueryInputError, match="ISO-8601"):
        parse_clock("yesterday", "--now")
    assert parse_clock("2024-05-01T02:00:00+02:00", "now") == _utc(2024, 5, 1)
    assert parse_clock("", "now") is None


# ---- a real service --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def service(stock_db):
    from served import serving

    from diachron.service import ServiceConfig

    with serving(ServiceConfig(db=stock_db[0], timeout_s=120)) as url:
        yield url


def _comparable(payload: dict) -> dict:
    payload = json.loads(json.dumps(payload))
    payload["trace"].pop("seconds")
    return payload


@pytest.mark.integration
def test_search_over_http_is_the_json_schema_and_the_local_result(service, stock_db):
    import diachron
    from diachron import Client

    local = Client(stock_db[0]).search(MSFT, k=5, now=_utc(2026, 1, 1))
    posted = httpx.post(f"{service}/search", json={"question": MSFT, "k": 5, "now": NOW}, timeout=120)
    assert posted.status_code == 200, posted.text
    payload = posted.json()
    assert payload["schema_version"] == local.to_dict()["schema_version"]
    assert _comparable(payload) == _comparable(local.to_dict())
    assert payload["intent"]["intervals"] == [
        {"start": "2010-09-01T00:00:00Z", "end": "2012-09-01T00:00:00Z", "granularity": "month"}
    ]
    got = httpx.get(f"{service}/search", params={"question": MSFT, "k": 5, "now": NOW}, timeout=120).json()
    assert [e["chunk_id"] for e in got["evidence"]] == [e["chunk_id"] for e in payload["evidence"]]

    remote = diachron.connect(service)  # an http URL gives the remote client
    assert isinstance(remote, diachron.RemoteClient)
    typed = remote.search(MSFT, k=5, now=_utc(2026, 1, 1))
    assert isinstance(typed, SearchResult) and _comparable(typed.to_dict()) == _comparable(local.to_dict())
    assert all(e.doc_id.startswith("stock-MSFT-") for e in typed.evidence)
    assert remote.parse(MSFT, now=_utc(2026, 1, 1)).intervals == local.intent.intervals
    health = remote.health()
    assert health["status"] == "ok" and health["rows"] == stock_db[1].chunks_written


@pytest.mark.integration
@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        ({"question": "  "}, 400, "empty"),
        ({"question": MSFT, "now": "yesterday"}, 400, "ISO-8601"),
        ({"question": MSFT, "now": "9999-12-31T23:00:00-05:00"}, 400, "out of range"),
        ({"question": MSFT, "k": 0}, 422, "k:"),
        ({"question": MSFT, "k": 101}, 422, "k:"),
        (
            {"question": MSFT, "window": {"start": "2012-01-01T00:00:00Z", "end": "2011-01-01T00:00:00Z"}},
            400,
            "inverted",
        ),
        ({"k": 3}, 422, "question"),
    ],
)
def test_bad_input_is_a_one_line_4xx(service, body, status, words):
    response = httpx.post(f"{service}/search", json=body, timeout=60)
    assert response.status_code == status
    detail = response.json()["detail"]
    assert isinstance(detail, str) and words in detail and "\n" not in detail and "Traceback" not in detail


@pytest.mark.integration
def test_remote_client_raises_the_reason(service):
    from diachron.retrieval.remote import RemoteClient, ServiceError

    with pytest.raises(ServiceError, match="empty") as caught:
        RemoteClient(service).search("")
    assert caught.value.status == 400


@pytest.mark.integration
def test_an_edited_window_replaces_the_question_s_time(service):
    window = {"start": "2011-03-01T00:00:00Z", "end": "2011-06-01T00:00:00Z", "relation": "between"}
    payload = httpx.post(
        f"{service}/search", json={"question": MSFT, "k": 10, "now": NOW, "window": window}, timeout=120
    ).json()
    assert payload["intent"]["intervals"][0]["start"] == window["start"]
    months = sorted({e["doc_id"] for e in payload["evidence"]})
    # stock summaries are monthly: March, April and May 2011 of MSFT overlap the edited window
    assert {"stock-MSFT-2011-03", "stock-MSFT-2011-04", "stock-MSFT-2011-05"} <= set(months)
    assert all(
        any(i["start"] < window["end"] and i["end"] > window["start"] for i in e["intervals"])
        for e in payload["evidence"]
    )  # ISO-8601 UTC strings order like the instants


@pytest.mark.integration
def test_intent_needs_no_index_and_health_says_so():
    from served import serving

    from diachron.service import ServiceConfig

    with serving(ServiceConfig(db=None)) as url:
        intent = httpx.get(f"{url}/intent", params={"question": MSFT, "now": NOW}).json()["intent"]
        assert (intent["relation"], intent["intervals"][0]["start"]) == ("between", "2010-09-01T00:00:00Z")
        assert httpx.get(f"{url}/health").json()["status"] == "no index"
        assert httpx.post(f"{url}/search", json={"question": MSFT}).status_code == 503
        assert "openapi" in httpx.get(f"{url}/openapi.json").json()


@pytest.mark.integration
def test_24_concurrent_requests_all_answer(service):
    questions = [
        f"How did {t} stock perform in {m} 2011?"
        for t in ("IBM", "Apple", "Microsoft")
        for m in ("January", "March", "May", "July", "September", "October", "November", "December")
    ]

    def ask(question: str) -> int:
        return httpx.post(
            f"{service}/search", json={"question": question, "k": 3, "now": NOW}, timeout=120
        ).status_code

    with ThreadPoolExecutor(max_workers=24) as pool:
        statuses = list(pool.map(ask, questions))
    assert statuses == [200] * 24


@pytest.mark.integration
def test_a_new_table_version_is_seen_without_restart(stock_db, tmp_path):
    """Rows added after the service opened the index (a later ingest's commit) answer the next request."""
    import lancedb
    import pyarrow as pa
    from diachron.ingest.embedding import Embedder
    from served import serving

    from diachron.service import ServiceConfig

    uri = str(tmp_path / "db")
    shutil.copytree(stock_db[0], uri)
    question = "Which zebra-striped lighthouse auction happened in March 2011?"
    with serving(ServiceConfig(db=uri, timeout_s=120)) as url:
        before = httpx.post(
            f"{url}/search", json={"question": question, "k": 3, "now": NOW}, timeout=120
        ).json()
        assert all(e["doc_id"] != "zebra-2011-03" for e in before["evidence"])
        db = lancedb.connect(uri)
        chunks, documents = db.open_table("chunks"), db.open_table("documents")
        chunk = chunks.to_lance().to_table(filter="doc_id = 'stock-IBM-2011-03'", limit=1).to_pylist()[0]
        doc = documents.to_lance().to_table(filter="doc_id = 'stock-IBM-2011-03'", limit=1).to_pylist()[0]
        text = "A zebra-striped lighthouse was sold at auction in March 2011."
        chunk.update(
            chunk_id="zebra-2011-03#0",
            doc_id="zebra-2011-03",
            series_id="zebra-2011-03",
            text=text,
            vector=Embedder().embed([text])[0].tolist(),
        )
        doc.update(doc_id="zebra-2011-03", series_id="zebra-2011-03", title="Lighthouse auction")
        chunks.add(pa.Table.from_pylist([chunk], schema=chunks.schema))
        documents.add(pa.Table.from_pylist([doc], schema=documents.schema))
        after = httpx.post(
            f"{url}/search", json={"question": question, "k": 3, "now": NOW}, timeout=120
        ).json()
    top = max(after["evidence"], key=lambda e: e["score"])
    assert (top["doc_id"], top["title"]) == ("zebra-2011-03", "Lighthouse auction")


@pytest.mark.integration
def test_answer_true_adds_the_answer_object_and_the_remote_client_answers(service):
    from diachron.retrieval.remote import RemoteClient

    body = {"question": MSFT, "k": 5, "now": NOW}
    plain = httpx.post(f"{service}/search", json=body, timeout=120).json()
    assert "answer" not in plain  # the --json schema, unchanged without answer=true
    payload = httpx.post(f"{service}/search", json={**body, "answer": True}, timeout=120).json()
    answer = payload["answer"]
    assert (answer["scope"], answer["checked"], answer["source"], answer["reason"]) == (
        "between Sep 2010 and Aug 2012",
        True,
        "summary",
        None,
    )
    assert answer["text"].startswith("Between Sep 2010 and Aug 2012, the evidence says:\n\n")
    assert [c["doc_id"] for c in answer["citations"]] == [e["doc_id"] for e in payload["evidence"]]
    got = httpx.get(f"{service}/search", params={**body, "answer": "true"}, timeout=120).json()
    assert got["answer"]["scope"] == "between Sep 2010 and Aug 2012"
    typed = RemoteClient(service).answer(MSFT, k=5, now=_utc(2026, 1, 1))
    assert (
        typed.text == answer["text"] and typed.result.evidence[0].doc_id == payload["evidence"][0]["doc_id"]
    )
