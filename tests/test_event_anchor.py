"""Event-anchored time ("after the merger"): the event's time found in the corpus, then the window.

The evidence below is hand-written text with its dates worked out by hand; the end-to-end test ingests
it into a real LanceDB table (real Ray, real embedder) and asks through the real ``Client``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from diachron.retrieval.event_anchor import anchor_event, find_event_phrase
from diachron.retrieval.intent import parse_intent
from diachron.schemas.evidence import Evidence
from diachron.schemas.intent import Relation

NOW = datetime(2026, 4, 17, tzinfo=UTC)
DOCS = [
    (
        "nw-1",
        "Northwind and Contoso completed their merger on 14 March 2019, creating the largest robotics "
        "firm in Ohio.",
        "2019-03-15T00:00:00Z",
    ),
    (
        "nw-2",
        "In 2017, before the merger, Northwind exhibited a warehouse robot at a trade fair in Chicago.",
        "2017-06-01T00:00:00Z",
    ),
    (
        "nw-3",
        "After the merger the combined firm showed its first joint robot at a fair in Dayton in May 2020.",
        "2020-05-20T00:00:00Z",
    ),
    (
        "nw-4",
        "The Dayton plant suffered a power outage on 2 February 2021 that stopped the robot line for a day.",
        "2021-02-03T00:00:00Z",
    ),
]


def _evidence(doc_id: str, text: str, published: str, score: float) -> Evidence:
    from diachron.schemas.time import parse_instant

    return Evidence(
        chunk_id=f"{doc_id}#0",
        doc_id=doc_id,
        series_id=doc_id,
        title=doc_id,
        text=text,
        score=score,
        published_at=parse_instant(published),
        intervals=(),
        time_source="event",
    )


@pytest.mark.parametrize(
    ("question", "relation", "event"),
    [
        ("What did Northwind do after the merger?", "after", "the merger"),
        ("How did prices move after the 1929 crash?", "after", "the 1929 crash"),
        ("What did we run before the migration to the cloud?", "before", "the migration to the cloud"),
        ("What broke at the time of the outage?", "at the time of", "the outage"),
    ],
)
def test_event_phrases(question: str, relation: str, event: str) -> None:
    phrase = find_event_phrase(question, now=NOW)
    assert phrase is not None and (phrase.relation, phrase.event) == (relation, event)


@pytest.mark.parametrize(
    "question",
    [
        "What happened after the 1920s?",
        "What happened since the end of 2005?",
        "What changed after 2015?",
        "What happened after the first quarter of 2015?",
        "What is the capital of France?",
    ],
)
def test_time_expressions_are_no_events(question: str) -> None:
    assert find_event_phrase(question, now=NOW) is None


def test_the_hit_that_states_the_event_anchors_it() -> None:
    # the best-scoring hit only refers to the merger ("After the merger ..."): the one stating it wins
    hits = [_evidence(d, t, p, s) for (d, t, p), s in zip(DOCS[:3], (0.69, 0.70, 0.71), strict=True)]
    question = "What did Northwind do after the merger?"
    intent = anchor_event(question, parse_intent(question, now=NOW), lambda _: hits)
    assert intent.relation is Relation.AFTER
    assert [(i.start, i.end) for i in intent.intervals] == [(datetime(2019, 3, 15, tzinfo=UTC), None)]
    assert intent.core_query == "What did Northwind do?"
    assert any("14 March 2019" in a and "nw-1" in a for a in intent.assumptions)
    assert not intent.needs_clarification


def test_two_plausible_anchors_ask_for_clarification() -> None:
    hits = [
        _evidence("a", "Acme completed its merger with Initech on 3 May 2015.", "2015-05-04T00:00:00Z", 0.80),
        _evidence(
            "b",
            "Acme completed a second merger, with Hooli, on 9 October 2022.",
            "2022-10-10T00:00:00Z",
            0.79,
        ),
    ]
    question = "What changed since the merger?"
    intent = anchor_event(question, parse_intent(question, now=NOW), lambda _: hits)
    assert intent.needs_clarification
    assert [(i.start, i.end) for i in intent.intervals] == [(datetime(2015, 5, 3, tzinfo=UTC), None)]
    assert any("also plausible" in a and "9 October 2022" in a for a in intent.assumptions)


def test_no_evidence_keeps_the_parser_reading_and_says_so() -> None:
    question = "What did Northwind do after the merger?"
    parsed = parse_intent(question, now=NOW)
    intent = anchor_event(question, parsed, lambda _: [])
    assert intent.intervals == parsed.intervals == () and intent.needs_clarification
    assert any("not dated" in a for a in intent.assumptions)


def test_the_year_written_in_the_event_name_is_a_fine_anchor_without_evidence() -> None:
    question = "What changed since the 1929 crash?"
    searched: list[str] = []
    parsed = parse_intent(question, now=NOW)
    intent = anchor_event(question, parsed, lambda event: searched.append(event) or [])
    assert searched == ["the 1929 crash"]  # the search is for the event with its date, not for "crash"
    assert [(i.start, i.end) for i in intent.intervals] == [(datetime(1929, 1, 1, tzinfo=UTC), None)]
    assert intent.relation is Relation.AFTER and not intent.needs_clarification
    assert intent.core_query == question  # nothing anchored it more closely: the event stays in the query
    assert [a for a in intent.assumptions if "the time written in it is the anchor" in a] != []


def test_evidence_dates_the_event_named_with_its_year() -> None:
    # "since the 1929 crash": the stating hit's 29 October 1929, not the whole year; a 1987 crash is no anchor
    hits = [
        _evidence(
            "w",
            "Wall Street crashed on 29 October 1929, wiping out the savings of millions.",
            "1929-10-30T00:00:00Z",
            0.71,
        ),
        _evidence(
            "b",
            "Black Monday: the market crash of 19 October 1987 was the largest one-day fall.",
            "1987-10-20T00:00:00Z",
            0.72,
        ),
    ]
    question = "What changed since the 1929 crash?"
    intent = anchor_event(question, parse_intent(question, now=NOW), lambda _: hits)
    assert [(i.start, i.end) for i in intent.intervals] == [(datetime(1929, 10, 29, tzinfo=UTC), None)]
    assert intent.core_query == "What changed?" and not intent.needs_clarification
    assert any("29 October 1929" in a and "'w'" in a for a in intent.assumptions)


@pytest.mark.integration
def test_client_anchors_the_event_end_to_end(tmp_path: Path) -> None:
    from diachron.ingest.pipeline import IngestConfig, run_ingest
    from diachron.retrieval.client import Client
    from diachron.retrieval.connection import connect

    source = tmp_path / "northwind.jsonl"
    source.write_text(
        "".join(
            json.dumps({"doc_id": d, "title": d, "text": t, "published_at": p}) + "\n" for d, t, p in DOCS
        )
    )
    uri = str(tmp_path / "db")
    run_ingest([str(source)], IngestConfig(db_uri=uri, num_cpus=2))
    client = Client(uri)
    after = client.search("What did Northwind do after the merger?", k=4, now=NOW, strict=True)
    assert [(i.start, i.end) for i in after.intent.intervals] == [(datetime(2019, 3, 15, tzinfo=UTC), None)]
    got = {e.doc_id for e in after.evidence}
    assert {"nw-3", "nw-4"} <= got and "nw-2" not in got  # 2017 is before the merger
    outage = client.search("What stopped at the time of the outage?", k=4, now=NOW, strict=True)
    assert [(i.start, i.end) for i in outage.intent.intervals] == [
        (datetime(2021, 2, 2, tzinfo=UTC), datetime(2021, 2, 3, tzinfo=UTC))
    ]
    assert [e.doc_id for e in outage.evidence] == ["nw-4"]
    from served import serving

    from diachron.service import ServiceConfig

    with serving(ServiceConfig(db=uri)) as url:  # the service anchors the event as the local Client does
        remote = connect(url).search("What did Northwind do after the merger?", k=4, now=NOW)
    assert remote.intent.intervals == after.intent.intervals
