"""Validity spans on short real passages (TimeQA / Wikipedia), with intervals worked out by hand.

Kinds come from the relation words around a date; a state start opens a span until the document's
next change, a state end closes one opened earlier, chunks carry their facts to the timeline's next
date, and undated chunks inherit their section's or document's span. Retrieval tiers: unknown-time
chunks are admitted below known ones unless strict; the fit weighs spans by kind and provenance.
"""

from __future__ import annotations

from datetime import UTC, datetime

import lancedb
import numpy as np
import pyarrow as pa
import pytest
from diachron.ingest.annotation.spans import (
    Span,
    classify,
    document_timeline,
    present_tense,
    sections_by_position,
    spans_of,
)
from diachron.retrieval.filters import TimeFilter
from diachron.retrieval.tiers import UNKNOWN_FIT, bound_proximity, row_fit
from diachron.schemas.time import Granularity, Interval, period


def t(year: int, month: int = 1, day: int = 1) -> datetime:
    return datetime(year, month, day, tzinfo=UTC)


def _kind(text: str, date: str, *, is_range: bool = False) -> str:
    start = text.index(date)
    return classify(text, (start, start + len(date)), is_range=is_range)


# --- kinds -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, date, kind",
    [
        ("Since 1993 , he has been president of the Alba County PNL chapter .", "1993", "state_start"),
        (
            "Atanasiu entered politics shortly after the 1989 Revolution , joining "
            "the PNL in February 1990 .",
            "February 1990",
            "state_start",
        ),
        (
            "Atanasiu entered politics shortly after the 1989 Revolution , joining "
            "the PNL in February 1990 .",
            "1989",
            "mention",
        ),
        (
            "On 1 May 2006 , Heße was appointed Deputy Vicar General of the Archdiocese of Cologne .",
            "1 May 2006",
            "state_start",
        ),
        (
            "Abel P . Upshur was laid up at Philadelphia until 4 December 1939 , when she was "
            "again placed in commission .",
            "4 December 1939",
            "state_end",
        ),
        ("In February 2012 , he left the National Alliance Party .", "February 2012", "state_end"),
        (
            "Marape first contested the Tari-Pori seat at the 2002 election for the Peoples Progress Party .",
            "2002",
            "mention",
        ),
        ("His first combat mission was on 26 March 1943 .", "26 March 1943", "event"),
        (
            "From 1994 to 1995 , he was Officer in charge at the PNG Institute of Medical Research .",
            "From 1994 to 1995",
            "state",
        ),
        ("He had played for SV Werden Bremen from 2012 up until this move .", "2012", "state_start"),
        # a figure at a date is an event, whatever the verb (real stock summary): not a state ending
        ("Apple Inc. shares closed April 2000 at $124.06 on April 28, 2000 .", "April 2000", "event"),
        # a lifespan between a name and its verb identifies the subject (TimeQA leads): a mention, not a state
        # that every question about the person's life would fit fully (a list entry's span stays a state:
        # test_a_range_from_the_tagger_is_a_state)
        (
            "Audie Leon Murphy ( 20 June 1925 – 28 May 1971 ) was an American soldier , actor",
            "20 June 1925 – 28 May 1971",
            "mention",
        ),
        # a change of what a thing is holds from then on (Vologda, TimeQA dev): a state start
        (
            "In 1796 , the viceroyalty , administered by a governor-general , was "
            "transformed into Vologda Governorate",
            "1796",
            "state_start",
        ),
        ("The town was renamed Voroshilov in 1935 .", "1935", "state_start"),
        ("In March 1941 he was assigned to the 7th U-boat Flotilla .", "March 1941", "state_start"),
        # a comparison's base is named in passing (real stock summary): the month's own dates stay events
        (
            "Apple Inc. shares closed November 2005 at $67.82 on November 30, 2005, compared with $57.59 at "
            "the close of October 31, 2005, up 17.8% for the month .",
            "October 31, 2005",
            "mention",
        ),
        (
            "Apple Inc. shares closed November 2005 at $67.82 on November 30, 2005, compared with $57.59 at "
            "the close of October 31, 2005, up 17.8% for the month .",
            "November 30, 2005",
            "event",
        ),
        ("Unemployment fell to 5.2% , down from 6.1% in March 2009 .", "March 2009", "mention"),
        ("Turnout was higher than in 1990 .", "1990", "mention"),
        # "than" before a figure, not before the date: the date is the fact's
        ("He scored more than 100 goals in 1995 .", "1995", "event"),
    ],
)
def test_kind_from_the_relation_words(text: str, date: str, kind: str) -> None:
    assert _kind(text, date) == kind


def test_a_range_from_the_tagger_is_a_state() -> None:
    text = "He was Minister for Education ( 2008–2011 ) ."
    assert _kind(text, "2008–2011", is_range=True) == "state"


# --- opening, closing, carrying ----------------------------------------------------------------------


def _spans(out, provenance: str) -> list[Interval]:
    return [s.interval for s in out.spans if s.provenance == provenance]


def test_state_start_opens_until_the_next_change_then_stays_open() -> None:
    # Sérgio Conceição, "Beginnings"/"Nantes": hired 8 April 2013; signed with Braga 26 May 2014;
    # named manager of Nantes 8 December 2016 (nothing later in this document).
    hired = Span(period(t(2013, 4, 8), Granularity.DAY), "state_start", "8 April 2013")
    braga = Span(period(t(2014, 5, 26), Granularity.DAY), "state_start", "26 May 2014")
    resurfaced = Span(period(t(2015, 9, 22), Granularity.DAY), "event", "22 September 2015")
    nantes = Span(period(t(2016, 12, 8), Granularity.DAY), "state_start", "8 December 2016")
    out = document_timeline([[hired], [braga], [resurfaced], [nantes]], sections=[0, 0, 0, 1])
    # the next change after a state start is the next dated state start (an event is no change)
    assert _spans(out[0], "inferred:next-change") == [Interval(t(2013, 4, 8), t(2014, 5, 26))]
    assert _spans(out[1], "inferred:next-change") == [Interval(t(2014, 5, 26), t(2016, 12, 8))]
    assert _spans(out[3], "inferred:open") == [Interval(t(2016, 12, 8), None)]
    # the literal dates stay, as written (they are the evidence)
    assert out[0].spans[0] == hired and out[0].time_source == "event"
    # carried to the next date at or after the chunk's own: 22 Sep 2015 chunk -> 8 Dec 2016
    assert _spans(out[2], "inferred:timeline") == [Interval(t(2015, 9, 22), t(2016, 12, 8))]
    assert _spans(out[3], "inferred:timeline") == []  # nothing later is dated: nothing carried


def test_state_end_closes_a_span_opened_earlier() -> None:
    # Abel P. Upshur: returned to Navy custody 21 May 1934 (start) ... laid up until 4 December 1939 (end)
    returned = Span(period(t(1934, 5, 21), Granularity.DAY), "state_start", "21 May 1934")
    until = Span(period(t(1939, 12, 4), Granularity.DAY), "state_end", "4 December 1939")
    (out,) = document_timeline([[returned, until]])
    assert _spans(out, "inferred:previous-change") == [Interval(t(1934, 5, 21), t(1939, 12, 5))]
    # a state end with nothing dated before it is open to the past
    (alone,) = document_timeline([[until]])
    assert _spans(alone, "inferred:open-past") == [Interval(None, t(1939, 12, 5))]
    # a dated event between the start and the end does not say when the state began: the end closes the
    # span of the last change (he joined in 2001, won the cup in 2009, left in 2012: a member 2001-2012)
    joined = Span(period(t(2001), Granularity.YEAR), "state_start", "2001")
    won = Span(period(t(2009), Granularity.YEAR), "event", "2009")
    left = Span(period(t(2012), Granularity.YEAR), "state_end", "2012")
    out = document_timeline([[joined], [won], [left]])
    assert _spans(out[2], "inferred:previous-change") == [Interval(t(2001), t(2013))]
    # an end with only events before it ("editor until 2012", no start written): the state held as far
    # back as the document's timeline reaches, its first date (the 2009 cup), not the open past
    (editor,) = document_timeline([[won, left]])
    assert _spans(editor, "inferred:timeline-start") == [Interval(t(2009), t(2013))]
    assert _spans(editor, "inferred:open-past") == []


def test_a_state_start_in_a_dated_document_ends_with_its_publication_day() -> None:
    # a 1925 speech: "since March 1921 the debt has fallen" -> the state cannot be attested after 1925
    since = Span(period(t(1921, 3), Granularity.MONTH), "state_start", "March 1921")
    (speech,) = document_timeline([[since]], published_at=t(1925, 12, 8))
    assert _spans(speech, "inferred:to-publication") == [Interval(t(1921, 3), t(1925, 12, 9))]
    assert _spans(speech, "inferred:open") == []
    # without a publication time it stays open
    (page,) = document_timeline([[since]])
    assert _spans(page, "inferred:open") == [Interval(t(1921, 3), None)]


def test_undated_chunks_inherit_section_then_document_then_nothing() -> None:
    early = Span(Interval(t(1994), t(1996)), "state", "From 1994 to 1995")
    later = Span(period(t(2007), Granularity.YEAR), "event", "2007")
    chunks = [[early], [], [later], []]
    out = document_timeline(chunks, sections=[0, 0, 1, 2])
    # section 0's span: the hull of its spans, [1994, 1996) and the span carried to the next date, 2007
    assert (out[1].time_source, out[1].spans[0].interval) == ("inherited:section", Interval(t(1994), t(2007)))
    flat = document_timeline(chunks, sections=[0, 0, 1, 2], carry=False)
    assert flat[1].spans[0].interval == Interval(t(1994), t(1996))
    # section 2 has no date of its own: the document's extent, 1994 .. end of 2007
    assert (out[3].time_source, out[3].spans[0].interval) == (
        "inherited:document",
        Interval(t(1994), t(2008)),
    )
    assert out[3].spans[0].kind == "inherited"
    # nothing dated anywhere: the publication day, else unknown (nothing invented)
    (published,) = document_timeline(
        [[]],
        published_at=t(
            2020,
            3,
            4,
        ),
    )
    assert (published.time_source, published.spans[0].interval) == ("published", period(t(2020, 3, 4), "day"))
    (unknown,) = document_timeline([[]])
    assert (unknown.time_source, unknown.time_status, unknown.spans) == ("unknown", "unknown", [])


def test_a_dated_chunk_also_carries_its_wider_section_span() -> None:
    a = Span(period(t(1990), Granularity.YEAR), "event", "1990")
    b = Span(period(t(1995), Granularity.YEAR), "event", "1995")
    out = document_timeline([[a], [b]], sections=[0, 0], carry=False)
    assert _spans(out[0], "inherited:section") == [Interval(t(1990), t(1996))]
    (single,) = document_timeline([[a]], carry=False)
    assert _spans(single, "inherited:section") == []  # the section is the chunk itself: nothing added
    # a chunk that is its whole section, narrating several years (Charlotte Fitch Roberts: assistant in
    # 1881, instructor in 1882, associate professor in 1886): its facts hold between its dates too
    years = [Span(period(t(y), Granularity.YEAR), "event", str(y)) for y in (1881, 1882, 1886)]
    (career,) = document_timeline([years], carry=False)
    assert _spans(career, "inherited:section") == [Interval(t(1881), t(1887))]


def test_sections_start_at_markdown_headings() -> None:
    text = "## Early career\n\nBorn 1971.\n\nGraduated 1993.\n\n## Political career\n\nElected 2007."
    spans = [
        (text.index("Born"), text.index("Born") + 10),
        (text.index("Graduated"), text.index("Graduated") + 15),
        (text.index("## Political"), len(text)),
    ]
    assert sections_by_position(text, spans) == [1, 1, 2]


def test_unknown_kinds_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown interval kind"):
        spans_of([period(t(2001), "year")], ["2001"], ["sometime"])


def test_annotate_stage_on_a_real_page(tmp_path) -> None:
    """The rule annotator + timeline through the real annotate stage (real chunker, real tagger)."""
    from diachron.ingest.stages import AnnotateStage, StageConfig

    text = (
        "## Early career\n\nAtanasiu entered politics shortly after the 1989 Revolution , joining the PNL in "
        "February 1990 .\n\n## Later life\n\nHe left the PNL in 2004 ."
    )
    stage = AnnotateStage(StageConfig(max_tokens=24))
    rows = stage(
        pa.Table.from_pylist(
            [
                {
                    "doc_id": "d",
                    "series_id": "d",
                    "title": "Teodor Atanasiu",
                    "text": text,
                    "published_at": None,
                    "valid_from": None,
                    "valid_until": None,
                }
            ]
        )
    ).to_pylist()
    by_kind = {
        (iv["kind"], iv["provenance"]): (iv["start"], iv["end"]) for r in rows for iv in r["intervals"]
    }
    assert by_kind[("mention", None)] == (t(1989), t(1990))
    assert by_kind[("state_start", None)] == (t(1990, 2), t(1990, 3))
    # joined Feb 1990, nothing later starts: open; left in 2004 closes the span from the previous date
    assert by_kind[("state", "inferred:open")] == (t(1990, 2), None)
    assert by_kind[("state", "inferred:previous-change")] == (t(1990, 2), t(2005))
    assert {r["time_source"] for r in rows} == {"event"}


# --- tiers and fit -----------------------------------------------------------------------------------


def test_fit_weighs_spans_by_kind_and_provenance() -> None:
    # row 0: one event in the window (share 1) -> 1.0
    # row 1: two literal intervals, one in the window -> share 0.5
    # row 2: literal state start outside, its inferred next-change span inside -> 0.8
    # row 3: a mention in the window (0.25) among 1 literal -> 0.25
    # row 4: unknown time -> UNKNOWN_FIT
    counts = np.array([1, 2, 2, 1, 0])
    hit = np.array([True, True, False, False, True, True])
    weights = np.array([1.0, 1.0, 1.0, 1.0, 0.8, 0.25])
    literal = np.array([True, True, True, True, False, True])
    assert row_fit(counts, hit, weights, literal).tolist() == [1.0, 0.5, 0.8, 0.25, UNKNOWN_FIT]


def test_a_stated_span_in_the_window_fits_fully_among_other_spans() -> None:
    # Real Madrid's arenas: "(1966–1986)", "(1986–1998)", "(1998–1999)" as written, a question about 1988:
    # the list states the one span that holds -> 1.0 (as dates named in passing, one of three gives 1/3)
    counts = np.array([3, 3])
    hit = np.array([False, True, False, False, True, False])
    weights = np.ones(6)
    literal = np.ones(6, dtype=bool)
    state = np.array([True, True, True, False, False, False])  # row 1: the same dates, not stated
    assert row_fit(counts, hit, weights, literal, state).tolist() == [1.0, pytest.approx(1 / 3)]


@pytest.mark.integration
def test_a_chronology_fits_fully_for_each_of_its_dated_facts(tmp_path) -> None:
    """A list of dated events (Helen Clark's awards, TimeQA) states each of its facts: a question about 2002
    fits it fully (1.0), where the same four dates named in passing give the share 1/4 × 0.25."""
    from diachron.ingest.stages import AnnotateStage, StageConfig
    from diachron.retrieval.search import Searcher
    from diachron.schemas.records import ChunkRecord, arrow_schema

    text = (
        "- In 1986 , Clark was awarded the annual Peace Prize of the Danish Peace Foundation for her work in "
        "promoting peace and nuclear disarmament . - In 1990 , Clark received the New Zealand 1990 "
        "Commemoration Medal . - In 1993 , Clark was awarded the New Zealand Suffrage Centennial Medal . - "
        "In 2002 , she was presented with the Nuclear-Free Future Award ."
    )
    out = AnnotateStage(StageConfig())(
        pa.Table.from_pylist(
            [
                {
                    "doc_id": "d",
                    "series_id": "d",
                    "title": "Helen Clark — Awards and honours",
                    "text": text,
                    "published_at": None,
                    "valid_from": None,
                    "valid_until": None,
                }
            ]
        )
    ).to_pylist()
    written = [iv for r in out for iv in r["intervals"]]
    assert [(iv["start"], iv["kind"]) for iv in written] == [
        (t(y), "event") for y in (1986, 1990, 1993, 2002)
    ]
    chronology = [_iv(iv["start"], iv["end"], iv["kind"]) for iv in written]
    in_passing = [_iv(iv["start"], iv["end"], "mention") for iv in written]
    table = lancedb.connect(str(tmp_path / "db")).create_table(
        "chunks",
        pa.Table.from_pylist(
            [_row("awards", chronology, [1, 0, 0, 0]), _row("quoted", in_passing, [1, 0, 0, 0])],
            schema=arrow_schema(ChunkRecord, dim=4),
        ),
    )
    fit = Searcher(table).index.focus(np.array([0, 1]), TimeFilter(event=(Interval(t(2002), t(2003)),)))
    assert fit.tolist() == [1.0, pytest.approx(0.25 / 4)]


def test_time_filter_tiers_and_strict() -> None:
    tiers = TimeFilter(event=(Interval(t(2005), t(2006)),), admit_unknown=True)
    strict = TimeFilter(event=(Interval(t(2005), t(2006)),))
    assert tiers.matches([]) and not strict.matches([])
    assert not tiers.matches([Interval(t(1990), t(1991))])  # known and outside: rejected either way
    assert tiers.to_dict()["strict"] is False and strict.to_dict()["strict"] is True


def _row(chunk_id: str, intervals: list[dict], vector: list[float]) -> dict:
    starts = [iv["start"] for iv in intervals]
    ends = [iv["end"] for iv in intervals]
    return {
        "chunk_id": chunk_id,
        "doc_id": chunk_id,
        "series_id": chunk_id,
        "seq": 0,
        "text": chunk_id,
        "token_count": 1,
        "published_at": None,
        "intervals": intervals,
        "event_start": min(starts) if starts and None not in starts else None,
        "event_end": max(ends) if ends and None not in ends else None,
        "time_source": "event" if intervals else "unknown",
        "time_status": "known" if intervals else "unknown",
        "valid_from": None,
        "valid_until": None,
        "annotator": "test",
        "embedder": "test/4",
        "recorded_at": t(2026),
        "run_id": "r",
        "vector": vector,
    }


def _iv(start, end, kind="event", provenance=None) -> dict:
    return {
        "start": start,
        "end": end,
        "granularity": "year",
        "text": None,
        "kind": kind,
        "provenance": provenance,
    }


@pytest.mark.integration
def test_search_ranks_a_covering_span_above_a_passing_mention_and_admits_unknown_last(tmp_path) -> None:
    from diachron.retrieval.search import Searcher
    from diachron.schemas.records import ChunkRecord, arrow_schema

    rows = [
        _row(
            "member-since-1995",
            [_iv(t(1995), t(1996), "state_start"), _iv(t(1995), None, "state", "inferred:open")],
            [0.9, 0.4359, 0, 0],
        ),
        _row("the-2000-election", [_iv(t(2000), t(2001), "mention")], [1, 0, 0, 0]),
        _row("undated", [], [0.95, 0.3122, 0, 0]),
        _row("left-in-1990", [_iv(t(1990), t(1991), "state_end")], [1, 0, 0, 0]),
    ]
    table = lancedb.connect(str(tmp_path / "db")).create_table(
        "chunks", pa.Table.from_pylist(rows, schema=arrow_schema(ChunkRecord, dim=4))
    )
    window = (Interval(t(2000, 7), t(2000, 8)),)
    vector = np.array([1, 0, 0, 0], dtype=np.float32)
    searcher = Searcher(table, temporal_weight=0.2)
    hits = searcher.search(vector, TimeFilter(event=window, admit_unknown=True), k=10)
    # scores: member 0.9 + 0.2*0.5 = 1.0; election 1.0 + 0.2*0.25 = 1.05; undated 0.95 + 0.2*0.1 = 0.97
    assert [h.row["chunk_id"] for h in hits] == ["the-2000-election", "member-since-1995", "undated"]
    # with more weight the open span (0.5) beats the passing mention (0.25): 0.9+0.5*0.5 = 1.15 > 1.125
    hits = searcher.search(vector, TimeFilter(event=window, admit_unknown=True), k=10, temporal_weight=0.5)
    assert [h.row["chunk_id"] for h in hits][:2] == ["member-since-1995", "the-2000-election"]
    strict = searcher.search(vector, TimeFilter(event=window), k=10)
    assert {h.row["chunk_id"] for h in strict} == {"member-since-1995", "the-2000-election"}


def test_window_cover_share() -> None:
    from diachron.retrieval.interval_index import OPEN_FUTURE, bounds
    from diachron.retrieval.tiers import window_cover

    # window Sep 2012 .. Feb 2013 (181 days); a span [Feb 28, Mar 2) covers its last day: 1/181
    qs, qe = bounds(Interval(t(2012, 9), t(2013, 3)))
    starts = np.array(
        [bounds(Interval(t(2013, 2, 28), t(2013, 3, 2)))[0], bounds(Interval(t(2012), t(2014)))[0]]
    )
    ends = np.array(
        [bounds(Interval(t(2013, 2, 28), t(2013, 3, 2)))[1], bounds(Interval(t(2012), t(2014)))[1]]
    )
    assert np.allclose(window_cover(starts, ends, qs, qe), [1 / 181, 1.0])
    # an open window ("after 2012"): any overlapping interval covers it
    assert window_cover(starts, ends, qs, OPEN_FUTURE).tolist() == [1.0, 1.0]


def test_open_window_fit_falls_with_distance_from_the_bound() -> None:
    from diachron.retrieval.interval_index import OPEN_FUTURE, OPEN_PAST, bounds

    year = 365.25 * 86_400 * 1_000_000
    b = bounds(Interval(None, t(1988, 7)))[1]
    # spans ending at the bound (or reaching past it), one year before it, three years before it
    starts = np.array([b - 2 * year, b - 5 * year, b - 9 * year, b - 1 * year], dtype=np.int64)
    ends = np.array([b, b - 1 * year, b - 3 * year, b + year], dtype=np.int64)
    assert bound_proximity(starts, ends, OPEN_PAST, b).tolist() == pytest.approx([1.0, 0.5, 0.25, 1.0])
    # after 2005: a span starting 2 years after the bound -> 1/3; a bounded window -> 1.0 everywhere
    a = bounds(Interval(t(2005), None))[0]
    assert bound_proximity(np.array([a + 2 * int(year)]), np.array([a + 3 * int(year)]), a, OPEN_FUTURE)[
        0
    ] == pytest.approx(1 / 3)
    assert bound_proximity(starts, ends, a, b).tolist() == [1.0] * 4


def test_document_context_lets_fit_decide_within_a_document() -> None:
    from diachron.retrieval.search import document_context, rank

    # page a: its introduction (0.8, no span in the window) and its list of office holders (0.5, the span
    # covering the window); page b: two chunks of another page
    sim = np.array([0.8, 0.5, 0.6, 0.55])
    focus = np.array([0.0, 1.0, 0.3, 1.0])
    context = document_context(sim, np.array(["a", "a", "b", "b"]))
    assert context.tolist() == [0.8, 0.8, 0.6, 0.6]
    # by hand: 0.8 | 0.5 + 0.75 * 0.3 + 0.1 = 0.825 | 0.6 + 0.03 = 0.63 | 0.55 + 0.75 * 0.05 + 0.1 = 0.6875
    got = rank(sim, focus, 0.1, context=context, context_weight=0.75)
    assert got.tolist() == pytest.approx([0.8, 0.825, 0.63, 0.6875])
    assert np.argsort(-got).tolist() == [1, 0, 3, 2]
    # without the context the introduction wins: 0.8 vs 0.6
    assert np.argsort(-rank(sim, focus, 0.1)).tolist() == [0, 3, 2, 1]


@pytest.mark.parametrize(
    ("text", "expression", "kind"),
    [
        (
            "The mayors of Kåfjord: - 2019–present : Bernt Eirik Isaksen Lyngstad ( Ap )",
            "2019–present",
            "state_start",
        ),
        ("After graduating in 1982 , Gruden spent a year at Dayton", "1982", "state_end"),  # studies end
    ],
)
def test_kinds_of_list_entries_and_graduation(text: str, expression: str, kind: str) -> None:
    start = text.index(expression)
    assert classify(text, (start, start + len(expression))) == kind


def test_a_speech_without_headings_gets_no_section_or_carried_spans() -> None:
    # a 1928 address naming 1812 in passing: no section (no headings), nothing carried from 1812 to 1928;
    # an undated paragraph gets the publication day, not the hull 1812-1928
    old = Span(period(t(1812), Granularity.YEAR), "event", "1812")
    now = Span(period(t(1928), Granularity.YEAR), "event", "1928")
    out = document_timeline([[old], [now], []], published_at=t(1928, 12, 4), headed=False)
    assert out[0].spans == [old] and out[1].spans == [now]
    assert (out[2].time_source, out[2].spans[0].interval) == (
        "published",
        Interval(t(1928, 12, 4), t(1928, 12, 5)),
    )


def test_derived_and_inherited_spans_end_with_the_publication_day() -> None:
    # published 1 Jan 1930: the start in 1925 is carried to the next date (1935) -> capped at 2 Jan 1930;
    # the 1935 date as written stays, its section span (1925-1936) is capped likewise
    started = Span(period(t(1925), Granularity.YEAR), "state_start", "1925")
    later = Span(period(t(1935), Granularity.YEAR), "event", "1935")
    out = document_timeline([[started], [later]], published_at=t(1930, 1, 1))
    assert _spans(out[0], "inferred:timeline") == [Interval(t(1925), t(1930, 1, 2))]
    assert _spans(out[0], "inferred:to-publication") == [Interval(t(1925), t(1930, 1, 2))]
    assert later in out[1].spans
    assert _spans(out[1], "inherited:section") == [Interval(t(1925), t(1930, 1, 2))]


def test_in_a_speech_states_open_and_close_only_against_the_chunks_own_changes() -> None:
    # a 1936 address: "under the Constitution since 1787" (one paragraph), "elected in 1932" (another),
    # "the banks were closed until March 1933" (a third). Without headings the speech's next change (1932)
    # is another subject: the 1787 state ends with the publication day, and the bank closing derives no
    # span (nothing before it in its paragraph says when it began); a headed page's timeline is one
    # narrative: 1787 runs to the next change (1932), the end closes the span of the last change (1932).
    since = Span(period(t(1787), Granularity.YEAR), "state_start", "since 1787")
    elected = Span(period(t(1932), Granularity.YEAR), "state_start", "1932")
    until = Span(period(t(1933, 3), Granularity.MONTH), "state_end", "until March 1933")
    out = document_timeline([[since], [elected], [until]], published_at=t(1936, 1, 3), headed=False)
    assert _spans(out[0], "inferred:to-publication") == [Interval(t(1787), t(1936, 1, 4))]
    assert _spans(out[0], "inferred:next-change") == []
    assert out[2].spans == [until]
    page = document_timeline([[since], [elected], [until]])
    assert _spans(page[0], "inferred:next-change") == [Interval(t(1787), t(1932))]
    assert _spans(page[2], "inferred:previous-change") == [Interval(t(1932), t(1933, 4))]
    # within one paragraph a change before the end still closes it: "from 1921 ... until March 1933"
    opened = Span(period(t(1921), Granularity.YEAR), "state_start", "1921")
    (both,) = document_timeline([[opened, until]], published_at=t(1936, 1, 3), headed=False)
    assert _spans(both, "inferred:previous-change") == [Interval(t(1921), t(1933, 4))]


def test_an_open_ended_reading_in_a_dated_document_ends_with_its_publication_day() -> None:
    # the 6 Dec 1927 address: "after the 1st of January" read as [1928-01-01, open): a plan, which the text
    # attests for its first day only, so no later window (an "IBM last month" in 2026) may admit it
    after = Span(Interval(t(1928), None, Granularity.DAY), "state_start", "after the 1st of January")
    (speech,) = document_timeline([[after]], published_at=t(1927, 12, 6), headed=False)
    assert [(s.interval, s.provenance) for s in speech.spans] == [
        (Interval(t(1928), t(1928, 1, 2)), "inferred:future")
    ]
    before_pub = Span(Interval(t(1925), None, Granularity.YEAR), "state_start", "from 1925 on")
    (speech,) = document_timeline([[before_pub]], published_at=t(1927, 12, 6), headed=False)
    assert Interval(t(1925), t(1927, 12, 7), Granularity.YEAR) in [s.interval for s in speech.spans]
    assert all(s.interval.end is not None for s in speech.spans)
    # without a publication time the reading stays as written
    (page,) = document_timeline([[before_pub]])
    assert Interval(t(1925), None, Granularity.YEAR) in [s.interval for s in page.spans]


def test_a_state_to_present_is_not_closed_by_a_later_change() -> None:
    # Kåfjord's mayors: "2019–present : Bernt Eirik Isaksen Lyngstad", then a 2020 election chunk of the page
    present = Span(period(t(2019), Granularity.YEAR), "state_start", "2019–present")
    election = Span(period(t(2020), Granularity.YEAR), "state_start", "2020")
    out = document_timeline([[present], [election]])
    assert _spans(out[0], "inferred:open") == [Interval(t(2019), None)]
    assert _spans(out[0], "inferred:next-change") == []


def test_a_lead_state_closes_only_within_the_lead() -> None:
    # Federation of the Greens: the lead says "formed in 1990" (section 1 = the lead); the History section
    # narrates 1991 (a new list), 1994 (a start): the party's 1990 start is not closed by them. A start in
    # a section closes at the next change anywhere later (the narrated timeline), as before.
    formed = Span(period(t(1990), Granularity.YEAR), "state_start", "1990")
    listed = Span(period(t(1991), Granularity.YEAR), "state_start", "1991")
    later = Span(period(t(1994), Granularity.YEAR), "state_start", "1994")
    out = document_timeline([[formed], [listed], [later]], sections=[1, 2, 2], lead=1)
    assert _spans(out[0], "inferred:open") == [Interval(t(1990), None)]
    assert _spans(out[1], "inferred:next-change") == [Interval(t(1991), t(1994))]
    # without a lead (lead=None) the same start closes at the next change, 1991
    plain = document_timeline([[formed], [listed], [later]], sections=[1, 2, 2])
    assert _spans(plain[0], "inferred:next-change") == [Interval(t(1990), t(1991))]
    # the lead summarizes the whole page: its section span is the page's (1990 to the open 1994 start:
    # the hull of bounded sides, 1990-1995), and an undated lead chunk inherits it; a History chunk keeps
    # its section's (1991-1995)
    out = document_timeline([[formed], [], [listed], [later]], sections=[1, 1, 2, 2], lead=1)
    assert _spans(out[1], "inherited:section") == [Interval(t(1990), t(1995))]
    assert _spans(out[0], "inherited:section") == [Interval(t(1990), t(1995))]
    assert _spans(out[2], "inherited:section") == [Interval(t(1991), t(1995))]
    # a lead in the present tense ("… is a green political party") describes the party as it is when the
    # page was written, after its last date: the lead's page span stays open; a History chunk's does not
    out = document_timeline(
        [[formed], [], [listed], [later]], sections=[1, 1, 2, 2], lead=1, lead_present=True
    )
    assert _spans(out[1], "inherited:section") == [Interval(t(1990), None)]
    assert _spans(out[2], "inherited:section") == [Interval(t(1991), t(1995))]
    # … unless the page has a publication time: then no span passes its day
    dated = document_timeline(
        [[formed], [], [listed], [later]],
        sections=[1, 1, 2, 2],
        lead=1,
        lead_present=True,
        published_at=t(2000, 6, 1),
    )
    assert _spans(dated[1], "inherited:section") == [Interval(t(1990), t(2000, 6, 2))]


@pytest.mark.parametrize(
    ("lead", "present"),
    [
        ("## Ipsen\n\nIpsen. Ipsen is a French pharmaceutical company headquartered in Paris .", True),
        (
            "## Audie Murphy\n\nAudie Murphy. Audie Leon Murphy ( 20 June 1925 – 28 May 1971 ) "
            "was an American soldier .",
            False,
        ),
        (
            "## Federation\n\nThe Federation of the Greens ( , FdV ) , frequently referred "
            "to as Greens , is a party .",
            True,
        ),
        (
            "## U-66\n\nGerman submarine U-66 was a Type IXC U-boat ; it is one of the most successful .",
            False,
        ),
        ("## Some list\n\nThe following people held the office .", False),
    ],
)
def test_present_tense_of_a_lead_is_its_first_copula(lead: str, present: bool) -> None:
    assert present_tense(lead) is present


def test_now_in_a_dated_address_is_its_publication_day() -> None:
    # Coolidge, 6 Dec 1923: "we are now at peace" is that day, not the first second of it
    from diachron.ingest.annotation.base import DocumentAnnotation
    from diachron.ingest.annotation.rules import RuleAnnotator

    doc = DocumentAnnotation(t(1923, 12, 6), "metadata", "", "rules")
    (note,) = RuleAnnotator().annotate_chunks(["We are now at peace, and the debt is falling."], doc=doc)
    assert (note.texts, note.intervals) == (["now"], [Interval(t(1923, 12, 6), t(1923, 12, 7))])
